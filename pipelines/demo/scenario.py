"""The demo's scenario: Acme AI's GPU fleet, the hour-by-hour plan of its hosts and Slurm jobs, and the
objects of its checkpoint and dataset buckets.

Everything here is decided from one seeded `random.Random`, in a fixed order, so a seed gives the same
landing zone every time; the writers put it into files and expected.py prices what it planted.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from pipelines.units import DAYS_PER_MONTH, GIB, HOURS_PER_WEEK

S3_STANDARD = Decimal("0.023")
GLACIER_IR = Decimal("0.004")  # the demo config's fallback price (prices: storage_gb_month:)
EBS_GP3 = Decimal("0.08")
SP_RATE = Decimal("0.70")  # effective / on-demand under the Savings Plan


@dataclass(frozen=True)
class InstanceType:
    name: str
    on_demand: Decimal
    gpu_name: str
    mem_total_mib: int
    power_limit_w: int
    idle_power_w: float
    savings_plan: bool

    @property
    def effective(self) -> Decimal:
        return (
            (self.on_demand * SP_RATE).quantize(Decimal("0.000001")) if self.savings_plan else self.on_demand
        )


P5 = InstanceType("p5.48xlarge", Decimal("55.04"), "NVIDIA H100 80GB HBM3", 81559, 700, 72.0, True)
P4D = InstanceType("p4d.24xlarge", Decimal("21.96"), "NVIDIA A100-SXM4-40GB", 40960, 400, 55.0, False)


@dataclass
class Host:
    name: str
    itype: InstanceType
    team: str | None  # None: the host's bill carries no team tag
    project: str
    instance_id: str
    volume_id: str
    launch_hour: int = 0
    states: list[str] = field(default_factory=list)  # one per hour of the span


@dataclass
class Job:
    job_id: int
    name: str
    user: str
    team: str
    project: str
    hosts: list[str]
    start: int  # hour index
    end: int
    state: str = "COMPLETED"
    gpus_per_node: int = 8


TEAM_USERS = {
    "nlp": ["akumar", "bchen", "clopez"],
    "vision": ["dmiller", "esato"],
    "speech": ["fnguyen", "gokafor"],
    "research": ["hsingh", "ijones"],  # the clusters without a bill (modelled.py)
}
PROJECTS = {
    "nlp": "llm-pretrain",
    "vision": "vit-scaling",
    "speech": "asr-multilingual",
    "research": "foundation-7b",
}
CKPT_GIB = {"llm-pretrain": 98, "vit-scaling": 14, "asr-multilingual": 8}


def fleet(rng: random.Random) -> list[Host]:
    """Acme's 20 GPU hosts: 12 p5.48xlarge and 8 p4d.24xlarge, with seeded instance and volume ids."""

    def ids(n: int) -> tuple[str, str]:
        return f"i-0{rng.getrandbits(64):016x}", f"vol-0{rng.getrandbits(64):016x}"

    layout = (
        [(f"gpu-h100-{i:02d}", P5, "nlp") for i in range(1, 9)]
        + [(f"gpu-h100-{i:02d}", P5, "vision") for i in range(9, 11)]
        + [(f"gpu-h100-{i:02d}", P5, "speech") for i in range(11, 13)]
        + [(f"gpu-a100-{i:02d}", P4D, "vision") for i in range(1, 7)]
        + [(f"gpu-a100-{i:02d}", P4D, "speech") for i in range(7, 9)]
    )
    hosts = []
    for i, (name, itype, team) in enumerate(layout):
        iid, vid = ids(i)
        hosts.append(Host(name, itype, team, PROJECTS[team], iid, vid))
    return hosts


class Planner:
    """Builds each host's hour-by-hour state and the Slurm jobs behind it."""

    def __init__(self, rng: random.Random, hours: int, start: datetime) -> None:
        self.rng, self.hours, self.start = rng, hours, start
        self.jobs: list[Job] = []
        self.next_id = 41870

    def job(
        self,
        host_names: list[str],
        team: str,
        start: int,
        end: int,
        state: str = "COMPLETED",
        kind: str = "train",
    ) -> Job:
        project = PROJECTS[team]
        j = Job(
            self.next_id,
            f"{project}-{kind}-{self.next_id}",
            self.rng.choice(TEAM_USERS[team]),
            team,
            project,
            host_names,
            start,
            end,
            state,
        )
        self.next_id += 1
        self.jobs.append(j)
        return j

    def fill(
        self, hosts: list[Host], team: str, t0: int, t1: int, min_len: int = 6, max_len: int = 60
    ) -> None:
        """Back-to-back training jobs with one idle hour between them (a 1-hour gap is not waste)."""
        t = t0
        while t < t1:
            length = min(self.rng.randint(min_len, max_len), t1 - t)
            state = "FAILED" if self.rng.random() < 0.06 and length > 8 else "COMPLETED"
            self.job([h.name for h in hosts], team, t, t + length, state)
            for h in hosts:
                h.states[t : t + length] = ["busy"] * length
            t += length
            if t < t1:
                for h in hosts:
                    h.states[t] = "idle"
                t += 1

    def hour_of(self, week: int, day: int, hour: int) -> int:
        return week * HOURS_PER_WEEK + day * 24 + hour


def job_times(j: Job, start: datetime) -> tuple[datetime, datetime]:
    """A job's sacct Start and End: 4 s after its first hour begins, 9 s before its last hour ends."""
    return start + timedelta(hours=j.start, seconds=4), start + timedelta(hours=j.end, seconds=-9)


def plan(
    rng: random.Random, hosts: list[Host], weeks: int, start: datetime
) -> tuple[Planner, dict[str, Any]]:
    """Every host's state per hour and the jobs behind it, with the planted waste; `notes` names the
    planted jobs (crash, partial, starved) for expected.py."""
    hours = weeks * HOURS_PER_WEEK
    p = Planner(rng, hours, start)
    by = {h.name: h for h in hosts}
    for h in hosts:
        h.states = ["idle"] * hours
    rw = weeks - 1  # the report week
    notes: dict[str, Any] = {}

    # an untagged host launched at the start of the second week (untagged spend)
    late = by["gpu-a100-08"]
    late.team, late.launch_hour = None, min(HOURS_PER_WEEK, hours - HOURS_PER_WEEK)
    late.states[: late.launch_hour] = ["off"] * late.launch_hour
    p.fill([late], "speech", late.launch_hour, hours)

    # two dev boxes: interactive work 08:00-19:00 on weekdays, idle every night and weekend
    for name, team in (("gpu-h100-03", "nlp"), ("gpu-a100-02", "vision")):
        h = by[name]
        for week in range(weeks):
            for day in range(5):
                s, e = p.hour_of(week, day, 8), p.hour_of(week, day, 19)
                p.job([name], team, s, e, kind="dev")
                h.states[s:e] = ["busy"] * (e - s)
    # a 2-node pre-training run family on gpu-h100-01/02 (multi-node jobs, NodeList ranges)
    p.fill([by["gpu-h100-01"], by["gpu-h100-02"]], "nlp", 0, hours, 24, 96)

    special = {"gpu-h100-03", "gpu-a100-02", "gpu-a100-08", "gpu-h100-01", "gpu-h100-02"}
    plants = {
        # host: (start hour, end hour) of the planted block in the report week
        "gpu-h100-09": (
            p.hour_of(rw, 1, 6),
            p.hour_of(rw, 3, 6),
        ),  # Tue 06:00 crash job, then idle until Thu 06:00
        "gpu-a100-05": (p.hour_of(rw, 4, 20), p.hour_of(rw, 6, 24)),  # idle Fri 20:00 until Monday
        "gpu-h100-06": (p.hour_of(rw, 1, 9), p.hour_of(rw, 2, 1)),  # parked notebook Tue 09:00 - Wed 01:00
        "gpu-h100-05": (p.hour_of(rw, 0, 0), p.hour_of(rw, 3, 0)),  # 2 of 8 GPUs, Mon - Thu
        "gpu-a100-04": (p.hour_of(rw, 1, 0), p.hour_of(rw, 3, 12)),  # input-starved Tue - Thu noon
        "gpu-a100-03": (p.hour_of(rw, 5, 0), p.hour_of(rw, 5, 20)),  # telemetry outage Sat 00:00-20:00
    }
    for h in hosts:
        if h.name in special:
            continue
        team = h.team or "speech"
        if h.name not in plants:
            p.fill([h], team, 0, hours)
            continue
        s, e = plants[h.name]
        if h.name == "gpu-h100-09":
            crash = s - 20
            p.fill([h], team, 0, crash - 1)
            h.states[crash - 1] = "idle"
            crash_job = p.job([h.name], team, crash, s, state="FAILED")
            notes["crash_job"] = crash_job.job_id
            h.states[crash:s] = ["busy"] * (s - crash)
            h.states[s:e] = ["idle"] * (e - s)
            p.fill([h], team, e, hours)
            notes["failed_job_host"] = h.name
        elif h.name == "gpu-a100-05":
            p.fill([h], team, 0, s)
            h.states[s:e] = ["idle"] * (e - s)
        elif h.name == "gpu-h100-06":
            p.fill([h], team, 0, s - 1)
            h.states[s - 1] = "idle"
            p.job([h.name], team, s, e, kind="notebook")
            h.states[s:e] = ["notebook"] * (e - s)
            h.states[e] = "idle"
            p.fill([h], team, e + 1, hours)
        elif h.name == "gpu-h100-05":
            p.fill([h], team, 0, s - 1)
            h.states[s - 1] = "idle"
            j = p.job([h.name], team, s, e, kind="finetune")
            notes["partial_job"] = j.job_id
            h.states[s:e] = ["partial"] * (e - s)
            h.states[e] = "idle"
            p.fill([h], team, e + 1, hours)
        elif h.name == "gpu-a100-04":
            p.fill([h], team, 0, s - 1)
            h.states[s - 1] = "idle"
            j = p.job([h.name], team, s, e, kind="train")
            notes["starved_job"] = j.job_id
            h.states[s:e] = ["starved"] * (e - s)
            h.states[e] = "idle"
            p.fill([h], team, e + 1, hours)
        elif h.name == "gpu-a100-03":
            p.fill([h], team, 0, hours)
            for t in range(s, e):
                h.states[t] = "dark" if h.states[t] == "busy" else "dark_idle"
    return p, notes


def quantize(x: Decimal, places: str = "0.01") -> Decimal:
    """Round half up to `places`: the bill's unit-price precision, or the cent for expected.json."""
    return x.quantize(Decimal(places), rounding=ROUND_HALF_UP)


def _etag(key: str, size: int, part_mib: int = 8) -> str:
    parts = -(-size // (part_mib * 1024 * 1024))
    digest = hashlib.md5(f"{key}|{size}".encode()).hexdigest()  # noqa: S324 - a fake ETag, not security
    return f"{digest}-{parts}" if parts > 1 else digest


def plan_storage(
    rng: random.Random, jobs: list[Job], start: datetime, end: datetime
) -> tuple[dict[str, list[tuple[str, int, datetime, str]]], dict[str, Any]]:
    """Each bucket's objects as (key, size, last modified, ETag): the training runs' checkpoints, the
    datasets (one copied into two more buckets) and scratch files; `facts` sums what expected.py prices."""
    objects: dict[str, list[tuple[str, int, datetime, str]]] = {
        "acme-ckpt": [],
        "acme-datasets": [],
        "acme-datasets-eu": [],
        "acme-scratch": [],
    }
    failed_bytes, failed_runs, superseded_bytes = 0, [], 0
    newest: list[tuple[datetime, int]] = []  # completed runs' newest checkpoint: (written, bytes)
    checkpoints: dict[int, list[datetime]] = {}  # failed job id -> when each of its checkpoints was written
    for j in jobs:
        if "-train-" not in j.name or j.end - j.start < 6:
            continue
        per = CKPT_GIB[j.project] * GIB
        steps = list(range(6, j.end - j.start + 1, 6))
        for n, hrs in enumerate(steps):
            when = start + timedelta(hours=j.start + hrs, minutes=rng.randint(1, 40))
            shard_sizes = [
                per * 2 // 10,
                per * 2 // 10,
                per * 3 // 10,
                per - 2 * (per * 2 // 10) - per * 3 // 10,
            ]
            names = [
                "model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors",
                "optimizer-00001-of-00002.pt",
                "optimizer-00002-of-00002.pt",
            ]
            for name, size in zip(names, shard_sizes, strict=True):
                key = f"{j.project}/{j.name}/checkpoints/step {hrs * 1000:08d}/{name}"
                objects["acme-ckpt"].append((key, size, when, _etag(key, size)))
                if j.state == "FAILED":
                    failed_bytes += size
                    if name == names[0]:
                        checkpoints.setdefault(j.job_id, []).append(when)
                elif n < len(steps) - 3:
                    superseded_bytes += size
                elif n == len(steps) - 1:
                    newest.append((when, size))
        if j.state == "FAILED" and steps:
            failed_runs.append({"run_id": j.name, "job_id": j.job_id, "project": j.project})
    datasets = {
        "c4-en": (400, 2),
        "imagenet-1k": (150, 1),
        "librispeech-960h": (60, 1),
        "laion-400m-subset": (1200, 2),
    }
    created = start - timedelta(days=120)
    dup = "laion-400m-subset"
    dup_bytes = 0
    for name, (shards, gib) in datasets.items():
        for i in range(shards):
            key = f"datasets/{name}/shard-{i:05d}.tar"
            size = gib * GIB + rng.randint(0, 64 * 1024 * 1024)
            etag = _etag(key, size)
            objects["acme-datasets"].append((key, size, created, etag))
            if name == dup:
                dup_bytes += size
                objects["acme-datasets-eu"].append((key, size, created + timedelta(days=9), etag))
                objects["acme-scratch"].append(
                    (f"datasets/laion-copy/shard-{i:05d}.tar", size, created + timedelta(days=30), etag)
                )
    for i in range(40):  # scratch space that is nobody's copy
        key = f"tmp/eval-outputs/run-{i:03d}.jsonl"
        size = rng.randint(10, 900) * 1024 * 1024
        objects["acme-scratch"].append(
            (key, size, end - timedelta(days=rng.randint(1, 20)), _etag(key, size))
        )
    facts = {
        "failed_bytes": failed_bytes,
        "failed_runs": failed_runs,
        "superseded_bytes": superseded_bytes,
        "checkpoints": checkpoints,
        "newest_completed": newest,
        "dup_dataset": dup,
        "dup_bytes_per_copy": dup_bytes,
    }
    return objects, facts


# STO005's plants. Log groups (a cloudwatch_logs listing and the bill's CloudWatch Logs storage lines): the
# SageMaker training jobs' group was created without a retention 120 days before the report week ends and
# takes 10 GiB a day; the EKS application group keeps 14 days of 2 GiB a day (within the limit: no finding).
CLOUDWATCH_LOGS_GB_MONTH = Decimal("0.03")
LOG_ACCOUNT = "417263541977"


@dataclass(frozen=True)
class LogGroup:
    name: str
    retention_days: int | None
    gib_per_day: int
    age_days_at_end: int  # days from its creation to the end of the report week
    team: str

    @property
    def arn(self) -> str:
        return f"arn:aws:logs:us-east-1:{LOG_ACCOUNT}:log-group:{self.name}"

    def created(self, end: datetime) -> datetime:
        return end - timedelta(days=self.age_days_at_end)

    def stored_bytes(self, at: datetime, end: datetime) -> int:
        """Bytes stored at `at`: every day's events since creation, or the last `retention_days` of them."""
        days = Decimal((at - self.created(end)).total_seconds()) / 86400
        if self.retention_days is not None:
            days = min(days, Decimal(self.retention_days))
        return int(days * self.gib_per_day * GIB)


LOG_GROUPS = (
    LogGroup("/aws/sagemaker/TrainingJobs", None, 10, 120, "nlp"),
    LogGroup("/eks/gpu-cluster/application", 14, 2, 400, "vision"),
)


def plan_log_files(end: datetime) -> list[tuple[str, int, datetime, str]]:
    """September's TensorBoard event files and profiler traces left in the scratch bucket (outside its
    datasets root and any checkpoint pattern): three runs, each a 40 GiB event file and an 8 GiB trace,
    written 70-80 days before the report week ends. Planned from no random draw."""
    out = []
    for i, run in enumerate(("vit-l-sweep-03", "vit-l-sweep-07", "vit-h-ablation-01")):
        when = end - timedelta(days=80 - 5 * i, hours=3)
        for key, gib in (
            (
                f"tensorboard/vit-scaling/{run}/events.out.tfevents.{int(when.timestamp())}.gpu-a100-0{i + 1}",
                40,
            ),
            (
                f"tensorboard/vit-scaling/{run}/plugins/profile/{when:%Y_%m_%d_%H_%M_%S}/gpu-a100-0{i + 1}.xplane.pb",
                8,
            ),
        ):
            out.append((key, gib * GIB, when, _etag(key, gib * GIB)))
    return out


CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _ulid(made: datetime, seed: str) -> str:
    """A ULID for a block made at `made`: 10 characters of its milliseconds since the epoch, then 16 drawn
    from a hash of `seed` (not from the random stream)."""
    ms = int(made.timestamp() * 1000)
    head = "".join(CROCKFORD[(ms >> (5 * i)) & 31] for i in reversed(range(10)))
    digest = int(hashlib.sha256(seed.encode()).hexdigest(), 16)
    return head + "".join(CROCKFORD[(digest >> (5 * i)) & 31] for i in range(16))


def plan_metric_blocks(end: datetime) -> list[tuple[str, int, datetime, str]]:
    """The GPU cluster's Prometheus metrics, uploaded by a Thanos sidecar under `thanos/` in the scratch bucket
    and never expired (no compactor retention): four blocks made at 02:00 UTC 91, 76, 61 and 4 days before the
    report week ends, each `chunks/000001` of 12 GiB, an `index` of 1 GiB and a 2 KiB `meta.json`, written a
    few minutes after the block was made. The three old ones are STO005's; the newest is within 30 days. Planned
    from no random draw."""
    out = []
    for days in (90, 75, 60, 3):
        made = end - timedelta(days=days, hours=22)
        block = _ulid(made, f"demo-block-{days}")
        for name, size, minutes in (
            ("chunks/000001", 12 * GIB, 4),
            ("index", GIB, 5),
            ("meta.json", 2048, 5),
        ):
            key = f"thanos/{block}/{name}"
            out.append((key, size, made + timedelta(minutes=minutes), _etag(key, size)))
    return out


# COST004's plant: acme-ckpt-vision, the vision team's checkpoint bucket (outside every `checkpoints:` pattern
# and off the bill, so no other rule prices it), grows 40 % a month against a 10 % budget.
GROWTH_BUCKET = "acme-ckpt-vision"
GROWTH_PCT = Decimal(40)
GROWTH_BUDGET = "10%"
GROWTH_SPAN_DAYS = 28


def plan_storage_growth(end: datetime) -> dict[str, Any]:
    """The growth bucket's two inventories, 28 days apart (the newest the report week's Sunday 01:00): at the
    first, vit-l/run-03/ (40 checkpoints of 60 GiB) and vit-g/run-07/ (40 of 65 GiB), 5,000 GiB; by the
    second vit-g/run-07/ saved 16 more and vit-h/run-01/ started, 10 checkpoints holding the rest of 40 % a
    month's growth: 5,000 GiB x 40 % x 28 / 30.44 days more. Planned from no random draw."""
    newest_at = end - timedelta(hours=23)
    first_at = newest_at - timedelta(days=GROWTH_SPAN_DAYS)

    def ckpt(run: str, step: int, size: int, when: datetime) -> tuple[str, int, datetime, str]:
        key = f"{run}/step-{step:06d}/model.safetensors"
        return key, size, when, _etag(key, size)

    old = [
        ckpt("vit-l/run-03", 500 * (i + 1), 60 * GIB, first_at - timedelta(days=70 - i)) for i in range(40)
    ]
    old += [
        ckpt("vit-g/run-07", 500 * (i + 1), 65 * GIB, first_at - timedelta(hours=12 * (40 - i)))
        for i in range(40)
    ]
    first_bytes = sum(o[1] for o in old)
    grown = int(
        (Decimal(first_bytes) * GROWTH_PCT / 100 * GROWTH_SPAN_DAYS / DAYS_PER_MONTH).to_integral_value(
            ROUND_HALF_UP
        )
    )
    more = [
        ckpt("vit-g/run-07", 500 * (41 + i), 65 * GIB, first_at + timedelta(days=1 + i)) for i in range(16)
    ]
    rest = grown - sum(o[1] for o in more)
    sizes = [rest // 10] * 9 + [rest - 9 * (rest // 10)]
    more += [
        ckpt("vit-h/run-01", 1000 * (i + 1), size, first_at + timedelta(days=10 + 1.5 * i))
        for i, size in enumerate(sizes)
    ]
    return {
        "first_at": first_at,
        "newest_at": newest_at,
        "first": old,
        "newest": old + more,
        "first_bytes": first_bytes,
        "newest_bytes": first_bytes + grown,
    }
