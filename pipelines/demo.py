"""`wastewatch demo`: a realistic landing zone for a small AI company, with known waste planted.

Acme AI: three teams (nlp, vision, speech), 20 GPU hosts of two instance types (12 x p5.48xlarge with
8 x H100 under a Compute Savings Plan, 8 x p4d.24xlarge with 8 x A100 on demand), `weeks` ISO weeks of:

- FOCUS 1.2 billing (CSV.gz, one file per billing period): hourly GPU-instance lines, the Savings Plan's
  monthly purchase, daily EBS, S3 and data-transfer lines, a monthly support fee;
- nvidia-smi `--query-gpu --format=csv` telemetry, one file per host and week, one sample per GPU per
  minute (the same header, units and `, ` separators as the real H200 capture);
- Slurm `sacct -P` job records (with .batch/.extern steps, a failed job, a 2-node job);
- S3 Inventory reports (manifest.json + CSV.gz, URL-encoded keys) of a checkpoint bucket and three
  dataset buckets.

Planted waste (computed here from the generated data, by each rule family's definition, and written to
`expected.json`): dev boxes idle overnight and at weekends, a failed job whose machine kept billing, a
weekend-idle host, a parked notebook holding GPU memory, a job using 2 of its 8 GPUs, an input-starved
job, a telemetry outage (insufficient data), checkpoints of failed runs, a dataset copied into three
buckets, an untagged host and bucket, a spend spike, a team over budget. Besides the planted crash,
about 6 % of the training jobs longer than 8 h fail at random (Planner.fill); expected.json lists each
of them under GPU004 with the GPU time it lost since its run's last checkpoint.

expected.json states amounts for the time the generated records show, not the planned whole hours: a
job runs from its sacct Start (4 s after its first hour begins) to its End (9 s before its last hour
ends), so the job using 2 of 8 GPUs ran 71 h 59 min 47 s, not 72 h (USD 0.10 less at 6 × 38.528 / 8 an
hour); the input-starved job's idle share is that of the utilisation samples written (22.866 % mean in
the one-week demo with seed 7), not the duty cycle's nominal 22.875 %. Every rule's amount is computed
here from what was written, independently of the rule SQL, and rounded to the cent once, at the end.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import random
import shutil
import urllib.parse
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipelines.units import DAYS_PER_MONTH, GIB, HOURS_PER_WEEK
from rules import Window

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
}
PROJECTS = {"nlp": "llm-pretrain", "vision": "vit-scaling", "speech": "asr-multilingual"}
CKPT_GIB = {"llm-pretrain": 98, "vit-scaling": 14, "asr-multilingual": 8}


def _hosts(rng: random.Random) -> list[Host]:
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


def _plan(
    rng: random.Random, hosts: list[Host], weeks: int, start: datetime
) -> tuple[Planner, dict[str, Any]]:
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


# ---------------------------------------------------------------------------------------------------
# expected waste, by each rule family's definition


def _idle_hours(h: Host) -> list[bool]:
    """GPU001's view of an hour: billed, observed, every GPU at ~0 % (a parked notebook included)."""
    return [s in ("idle", "notebook") for s in h.states]


def _gpu001_by_week(hosts: list[Host], weeks: int, min_idle_hours: int = 2) -> dict[int, dict[str, Decimal]]:
    out: dict[int, dict[str, Decimal]] = {w: {} for w in range(weeks)}
    for h in hosts:
        idle = _idle_hours(h)
        t = 0
        while t < len(idle):
            if not idle[t]:
                t += 1
                continue
            s = t
            while t < len(idle) and idle[t]:
                t += 1
            if t - s >= min_idle_hours:
                for hour in range(s, t):
                    w = hour // HOURS_PER_WEEK
                    out[w][h.name] = out[w].get(h.name, Decimal(0)) + h.itype.effective
    return out


def _q(x: Decimal, places: str = "0.01") -> Decimal:
    return x.quantize(Decimal(places), rounding=ROUND_HALF_UP)


def _overlap_s(a0: datetime, a1: datetime, b0: datetime, b1: datetime) -> Decimal:
    """Seconds that [a0, a1) and [b0, b1) share."""
    return Decimal(max((min(a1, b1) - max(a0, b0)).total_seconds(), 0))


def _sample_at(hour_start: datetime, minute: int, gpu: int) -> datetime:
    """When the demo's nvidia-smi sample of `gpu` in `minute` of an hour is stamped (SAMPLES_SQL)."""
    return hour_start + timedelta(minutes=minute, milliseconds=310 + 11 * gpu)


def _gpu002(job: Job, host: Host, start: datetime, a: datetime, b: datetime) -> tuple[Decimal, Decimal]:
    """The job using 2 of its 8 GPUs: (waste, job hours) in [a, b). The job runs from its sacct Start to
    its End (4 s after its first hour, 9 s before its last one), so 72 planned hours are 71 h 59 min 47 s;
    the 6 unused GPUs' share of the effective hourly cost for that time."""
    started, ended = job_times(job, start)
    hours = _overlap_s(started, ended, a, b) / 3600
    return host.itype.effective * hours * 6 / 8, hours


def _gpu003(
    job: Job,
    host: Host,
    start: datetime,
    a: datetime,
    b: datetime,
    samples: dict[tuple[str, int, int], list[tuple[int, int]]],
) -> tuple[Decimal, Decimal]:
    """The input-starved job: (waste, mean util % of its samples) in [a, b). Per GPU and hour: the
    effective cost of the GPU (1/8 of the instance's) x the share of the hour the job ran x (1 - the mean
    utilisation of that GPU's samples taken while it ran / 100). The duty cycle's nominal mean is 22.875 %
    (1 minute in 4 at 80-94 %, the rest at 0-3 %); the drawn samples' mean is what the GPUs really did."""
    started, ended = job_times(job, start)
    waste, total, count = Decimal(0), 0, 0
    for t in range(job.start, job.end):
        h0 = start + timedelta(hours=t)
        s0, s1 = max(h0, started, a), min(h0 + timedelta(hours=1), ended, b)
        if s1 <= s0:
            continue
        for gpu in range(8):
            inside = [u for m, u in samples.get((host.name, t, gpu), []) if s0 <= _sample_at(h0, m, gpu) < s1]
            if not inside:
                continue
            mean = Decimal(sum(inside)) / len(inside)
            share = Decimal((s1 - s0).total_seconds()) / 3600
            waste += host.itype.effective / 8 * share * (1 - mean / 100)
            total, count = total + sum(inside), count + len(inside)
    return waste, Decimal(total) / count if count else Decimal(0)


def _gpu004_failed_jobs(
    jobs: list[Job],
    hosts: dict[str, Host],
    checkpoints: dict[int, list[datetime]],
    start: datetime,
    a: datetime,
    b: datetime,
    crash_job: int | None,
) -> list[dict[str, Any]]:
    """Every FAILED job's lost GPU time in [a, b), priced: the planted crash and the training jobs that
    failed at random (Planner.fill: ~6 % of those longer than 8 h). Lost = from the newest checkpoint of the
    job's run written while it ran (from its start when none was) to its end; each node's GPUs at the
    instance's effective hourly cost. Hours without telemetry (the planted outage) are left out: there
    is no GPU-slice of the job to price there."""
    out = []
    for j in jobs:
        if j.state != "FAILED":
            continue
        started, ended = job_times(j, start)
        written = [c for c in checkpoints.get(j.job_id, []) if started <= c <= ended]
        lost_from = max(written, default=started)
        waste, lost_gpu_h = Decimal(0), Decimal(0)
        for t in range(j.start, j.end):
            h0 = start + timedelta(hours=t)
            seconds = _overlap_s(max(h0, lost_from), min(h0 + timedelta(hours=1), ended), a, b)
            for name in j.hosts:
                host = hosts[name]
                if seconds and not host.states[t].startswith("dark"):
                    waste += host.itype.effective * seconds / 3600
                    lost_gpu_h += 8 * seconds / 3600
        if waste > 0:
            out.append(
                {
                    "job_id": j.job_id,
                    "run_id": j.name,
                    "hosts": j.hosts,
                    "planted": "crash" if j.job_id == crash_job else "random failure",
                    "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "ended_at": ended.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "last_checkpoint_at": max(written).strftime("%Y-%m-%dT%H:%M:%SZ") if written else None,
                    "lost_gpu_hours": float(round(lost_gpu_h, 4)),
                    "waste": waste,
                }
            )
    return sorted(out, key=lambda x: (-x["waste"], x["job_id"]))


# ---------------------------------------------------------------------------------------------------
# billing


FOCUS_HEADER = [
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
    "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargeFrequency",
    "ChargePeriodEnd", "ChargePeriodStart", "CommitmentDiscountCategory", "CommitmentDiscountId",
    "CommitmentDiscountName", "CommitmentDiscountStatus", "CommitmentDiscountType", "ConsumedQuantity",
    "ConsumedUnit", "ContractedCost", "ContractedUnitPrice", "EffectiveCost", "InvoiceId", "InvoiceIssuerName",
    "ListCost", "ListUnitPrice", "PricingCategory", "PricingQuantity", "PricingUnit", "ProviderName",
    "PublisherName", "RegionId", "RegionName", "ResourceId", "ResourceName", "ResourceType",
    "ServiceCategory", "ServiceName", "ServiceSubcategory", "SkuId", "SkuPriceDetails", "SkuPriceId",
    "SubAccountId", "SubAccountName", "Tags", "x_UsageType",
]  # fmt: skip
ACCOUNT = ("417263541977", "acme-ml-prod")
PAYER = ("902341578806", "Acme AI")
SP_ARN = "arn:aws:savingsplans::902341578806:savingsplan/6f1a9c3e-2b7d-4d1e-9a55-0c3f8e2d7b41"


def _ts(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


def _month_bounds(d: datetime) -> tuple[datetime, datetime]:
    start = d.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (start + timedelta(days=32)).replace(day=1)
    return start, end


def _line(**kw: Any) -> dict[str, Any]:
    row = dict.fromkeys(FOCUS_HEADER, "")
    start: datetime = kw.pop("start")
    end: datetime = kw.pop("end")
    bp_start, bp_end = _month_bounds(start)
    row.update(
        BillingAccountId=PAYER[0], BillingAccountName=PAYER[1], BillingCurrency="USD",
        BillingPeriodStart=_ts(bp_start), BillingPeriodEnd=_ts(bp_end), ChargePeriodStart=_ts(start),
        ChargePeriodEnd=_ts(end), InvoiceId=f"EUINUS26-{bp_start:%Y%m}", InvoiceIssuerName="Amazon Web Services, Inc.",
        ProviderName="AWS", PublisherName="Amazon Web Services, Inc.", RegionId="us-east-1",
        RegionName="US East (N. Virginia)", SubAccountId=ACCOUNT[0], SubAccountName=ACCOUNT[1],
        ChargeCategory="Usage", ChargeFrequency="Usage-Based", PricingCategory="Standard",
    )  # fmt: skip
    row.update({k: ("" if v is None else str(v)) for k, v in kw.items()})
    return row


def _tags(**kw: str | None) -> str:
    return json.dumps({k: v for k, v in kw.items() if v is not None})


def _billing_lines(
    hosts: list[Host],
    start: datetime,
    hours: int,
    storage: dict[str, dict[str, Any]],
    spike: tuple[int, str, Decimal],
) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for h in hosts:
        it = h.itype
        tags = _tags(Name=h.name, team=h.team, project=h.project if h.team else None, environment="prod")
        details = json.dumps(
            {
                "InstanceType": it.name,
                "GpuCount": 8,
                "CoreCount": 192 if it is P5 else 96,
                "OperatingSystem": "Linux",
            }
        )
        for t, state in enumerate(h.states):
            if state == "off":
                continue
            s = start + timedelta(hours=t)
            common = dict(
                start=s, end=s + timedelta(hours=1), ResourceId=h.instance_id, ResourceType="Instance",
                ServiceCategory="Compute", ServiceSubcategory="Virtual Machines", ServiceName="Amazon Elastic Compute Cloud",
                SkuId="P5HQXEQ4" if it is P5 else "P4DQ2X6M", SkuPriceDetails=details, Tags=tags,
                ConsumedQuantity=1, ConsumedUnit="Hrs", PricingQuantity=1, PricingUnit="Hrs",
                ListUnitPrice=it.on_demand, ListCost=it.on_demand, ContractedUnitPrice=it.on_demand,
                ContractedCost=it.on_demand, x_UsageType=f"USE1-BoxUsage:{it.name}",
            )  # fmt: skip
            if it.savings_plan:
                lines.append(_line(
                    **common, BilledCost="0", EffectiveCost=it.effective, PricingCategory="Committed",
                    CommitmentDiscountId=SP_ARN, CommitmentDiscountName="ml-compute-sp-2026", CommitmentDiscountType="Compute Savings Plan",
                    CommitmentDiscountCategory="Spend", CommitmentDiscountStatus="Used",
                    ChargeDescription=f"{it.name} covered by Compute Savings Plan",
                ))  # fmt: skip
            else:
                lines.append(_line(
                    **common, BilledCost=it.on_demand, EffectiveCost=it.on_demand,
                    ChargeDescription=f"${it.on_demand} per On Demand Linux {it.name} Instance Hour",
                ))  # fmt: skip
    days = hours // 24
    for d in range(days):
        s = start + timedelta(days=d)
        month_days = (_month_bounds(s)[1] - _month_bounds(s)[0]).days
        for h in hosts:
            if h.states[d * 24] == "off":
                continue
            cost = EBS_GP3 * 2048 / month_days
            lines.append(_line(
                start=s, end=s + timedelta(days=1), ResourceId=h.volume_id, ResourceType="Volume", ServiceCategory="Storage",
                ServiceSubcategory="Block Storage", ServiceName="Amazon Elastic Compute Cloud", SkuId="EBSGP3USE1",
                BilledCost=_q(cost, "0.000001"), EffectiveCost=_q(cost, "0.000001"), ListCost=_q(cost, "0.000001"),
                ConsumedQuantity=_q(Decimal(2048) / month_days, "0.000001"), ConsumedUnit="GB-Mo", PricingUnit="GB-Mo",
                PricingQuantity=_q(Decimal(2048) / month_days, "0.000001"), ListUnitPrice=EBS_GP3,
                Tags=_tags(Name=f"{h.name}-scratch", team=h.team, project=h.project if h.team else None),
                ChargeDescription="$0.08 per GB-month of General Purpose (gp3) provisioned storage - US East (N. Virginia)",
                x_UsageType="USE1-EBS:VolumeUsage.gp3",
            ))  # fmt: skip
        for bucket, b in storage.items():
            gib = Decimal(b["bytes"]) / GIB
            cost = gib * S3_STANDARD / month_days
            lines.append(_line(
                start=s, end=s + timedelta(days=1), ResourceId=bucket, ResourceType="Bucket", ServiceCategory="Storage",
                ServiceSubcategory="Object Storage", ServiceName="Amazon Simple Storage Service", SkuId="S3STDSTORE",
                RegionId=b["region"], RegionName=b["region_name"],
                BilledCost=_q(cost, "0.000001"), EffectiveCost=_q(cost, "0.000001"), ListCost=_q(cost, "0.000001"),
                ConsumedQuantity=_q(gib / month_days, "0.000001"), ConsumedUnit="GB-Mo", PricingUnit="GB-Mo",
                PricingQuantity=_q(gib / month_days, "0.000001"), ListUnitPrice=S3_STANDARD,
                SkuPriceDetails=json.dumps({"StorageClass": "STANDARD"}),
                Tags=_tags(team=b["team"], project=b.get("project")),
                ChargeDescription="$0.023 per GB - first 50 TB / month of storage used", x_UsageType="TimedStorage-ByteHrs",
            ))  # fmt: skip
        for team in ("nlp", "vision", "speech"):
            gb = Decimal({"nlp": 900, "vision": 450, "speech": 300}[team])
            if (d, team) == spike[:2]:
                gb *= spike[2]
            cost = gb * Decimal("0.09")
            lines.append(_line(
                start=s, end=s + timedelta(days=1), ResourceId=f"arn:aws:ec2:us-east-1:{ACCOUNT[0]}:natgateway/nat-0{team}7f3e",
                ResourceType="NAT Gateway", ServiceCategory="Networking", ServiceSubcategory="Network Infrastructure",
                ServiceName="Amazon Virtual Private Cloud", SkuId="DTOUTUSE1", BilledCost=_q(cost, "0.000001"),
                EffectiveCost=_q(cost, "0.000001"), ListCost=_q(cost, "0.000001"), ConsumedQuantity=gb, ConsumedUnit="GB",
                PricingQuantity=gb, PricingUnit="GB", ListUnitPrice="0.09", Tags=_tags(team=team, project=PROJECTS[team]),
                ChargeDescription="$0.09 per GB - first 10 TB / month data transfer out beyond the global free tier",
                x_UsageType="USE1-DataTransfer-Out-Bytes",
            ))  # fmt: skip
    # monthly recurring lines for every billing period the span touches
    months = sorted({_month_bounds(start + timedelta(hours=t))[0] for t in range(0, hours, 24)})
    sp_hourly = sum((h.itype.effective for h in hosts if h.itype.savings_plan), Decimal(0))
    for m in months:
        _, end = _month_bounds(m)
        month_hours = int((end - m).total_seconds() // 3600)
        fee = _q(sp_hourly * month_hours, "0.000001")
        lines.append(_line(
            start=m, end=end, ResourceId=SP_ARN, ResourceType="Savings Plan", ServiceCategory="Compute",
            ServiceName="Savings Plans for AWS Compute usage", ChargeCategory="Purchase", ChargeFrequency="Recurring",
            BilledCost=fee, EffectiveCost="0", ListCost=fee, CommitmentDiscountId=SP_ARN, CommitmentDiscountName="ml-compute-sp-2026",
            CommitmentDiscountType="Compute Savings Plan", CommitmentDiscountCategory="Spend", PricingCategory="",
            ChargeDescription=f"Savings Plan recurring fee ${sp_hourly}/hour", x_UsageType="ComputeSP:1yrNoUpfront",
        ))  # fmt: skip
        lines.append(_line(
            start=m, end=end, ServiceCategory="Management and Governance", ServiceName="AWS Support (Business)",
            ChargeCategory="Purchase", ChargeFrequency="Recurring", BilledCost="1850.00", EffectiveCost="1850.00",
            ListCost="1850.00", SkuId="SUPBUSINESS", ChargeDescription="AWS Support (Business) monthly fee", PricingCategory="",
        ))  # fmt: skip
    return lines


def _write_billing(root: Path, lines: list[dict[str, Any]]) -> list[Path]:
    by_period: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by_period.setdefault(line["BillingPeriodStart"][:7], []).append(line)
    paths = []
    for period, rows in sorted(by_period.items()):
        folder = root / "landing" / "billing" / "focus" / f"billing_period={period}"
        folder.mkdir(parents=True, exist_ok=True)
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=FOCUS_HEADER, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        path = folder / f"acme-focus-{period}-00001.csv.gz"
        path.write_bytes(gzip.compress(buf.getvalue().encode("utf-8"), mtime=0))
        paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------------------
# telemetry

SMI_HEADER = (
    "timestamp, name, pci.bus_id, uuid, index, utilization.gpu [%], utilization.memory [%], memory.total [MiB], "
    "memory.used [MiB], memory.free [MiB], power.draw [W], power.limit [W], temperature.gpu, "
    "clocks.current.sm [MHz], clocks.current.memory [MHz], pstate"
)
SAMPLES_SQL = """
create or replace temp table _host_samples as
with hours as (
    select * from _demo_schedule where host = $host and state not in ('off', 'dark', 'dark_idle')
),
grid as (
    select h.*, m.m as minute, g.g as gpu,
           (hash(h.host, h.hour_idx, m.m, g.g, $seed) % 1000000) / 1000000.0 as u
    from hours h, range(60) m(m), range(8) g(g)
),
vals as (
    select *,
        case
            when state = 'busy' or (state = 'partial' and gpu < 2) then 70 + floor(u * 29)
            when state = 'starved' then case when minute % 4 = 0 then 80 + floor(u * 15) else floor(u * 4) end
            else 0
        end::int as util,
        case
            when state = 'busy' or (state = 'partial' and gpu < 2) then round(mem_total * (0.72 + 0.06 * u))
            when state = 'starved' then round(mem_total * (0.30 + 0.02 * u))
            when state = 'notebook' then round(mem_total * 0.86)
            when state = 'partial' then 512
            else 4
        end::int as mem_used,
        case
            when state = 'busy' or (state = 'partial' and gpu < 2) then power_limit * (0.62 + 0.28 * u)
            when state = 'starved' then power_limit * (0.30 + 0.10 * u)
            when state = 'notebook' then idle_power * 1.6 + 4 * u
            else idle_power + 4 * u
        end as power
    from grid
)
select
    week_idx,
    hour_idx, minute, gpu, state, util,
    strftime(ts + to_minutes(minute) + to_milliseconds(310 + 11 * gpu), '%Y/%m/%d %H:%M:%S.%g')
    || ', ' || gpu_name
    || ', 00000000:' || printf('%02X', [24, 42, 58, 93, 154, 171, 187, 219][gpu + 1]) || ':00.0'
    || ', GPU-' || substr(md5(host || gpu::varchar), 1, 8) || '-' || substr(md5(host || gpu::varchar), 9, 4)
    || '-' || substr(md5(host || gpu::varchar), 13, 4) || '-' || substr(md5(host || gpu::varchar), 17, 4)
    || '-' || substr(md5(host || gpu::varchar), 21, 12)
    || ', ' || gpu::varchar
    || ', ' || util::varchar || ' %'
    || ', ' || (util // 2)::varchar || ' %'
    || ', ' || mem_total::varchar || ' MiB'
    || ', ' || mem_used::varchar || ' MiB'
    || ', ' || (mem_total - mem_used)::varchar || ' MiB'
    || ', ' || printf('%.2f', power) || ' W'
    || ', ' || printf('%.2f', power_limit) || ' W'
    || ', ' || (30 + util // 3)::varchar
    || ', ' || (case when util > 0 then 1980 else 345 end)::varchar || ' MHz'
    || ', ' || mem_clock::varchar || ' MHz'
    || ', P0' as line
from vals
"""


def _write_telemetry(
    root: Path, hosts: list[Host], start: datetime, weeks: int, seed: int
) -> tuple[int, dict[tuple[str, int, int], list[tuple[int, int]]]]:
    """Write one nvidia-smi file per host and week; return the sample count and, for the input-starved
    job's hours, every sample's utilisation: (host, hour index, GPU) -> [(minute, util %), ...]."""
    starved: dict[tuple[str, int, int], list[tuple[int, int]]] = {}
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute(
        "create temp table _demo_schedule (host varchar, hour_idx integer, week_idx integer, ts timestamp, state varchar, "
        "gpu_name varchar, mem_total integer, power_limit double, idle_power double, mem_clock integer)"
    )
    rows = []
    for h in hosts:
        it = h.itype
        for t, state in enumerate(h.states):
            rows.append((h.name, t, t // HOURS_PER_WEEK, start + timedelta(hours=t), state, it.gpu_name, it.mem_total_mib,
                         float(it.power_limit_w), it.idle_power_w, 2619 if it is P5 else 1215))  # fmt: skip
    con.executemany("insert into _demo_schedule values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    folder = root / "landing" / "telemetry" / "nvidia-smi"
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for h in hosts:
        con.execute(SAMPLES_SQL, {"host": h.name, "seed": seed})
        for hour_idx, minute, gpu, util in con.execute(
            "select hour_idx, minute, gpu, util from _host_samples where state = 'starved'"
        ).fetchall():
            starved.setdefault((h.name, hour_idx, gpu), []).append((minute, util))
        for w in range(weeks):
            label = Window.containing((start + timedelta(weeks=w)).date()).label
            path = folder / f"{h.name}_{label}.csv"
            n = con.execute("select count(*) from _host_samples where week_idx = $w", {"w": w}).fetchall()[0][
                0
            ]
            if n == 0:
                continue
            path.write_text(SMI_HEADER + "\n", encoding="utf-8")
            body = path.with_suffix(".body")
            con.execute(
                "copy (select line from _host_samples where week_idx = $w order by hour_idx, minute, gpu) "
                "to $p (header false, quote '', escape '', delimiter '\t')",
                {"w": w, "p": str(body)},
            )
            with path.open("ab") as out, body.open("rb") as src:
                shutil.copyfileobj(src, out)
            body.unlink()
            total += n
    con.close()
    return total, starved


# ---------------------------------------------------------------------------------------------------
# jobs (Slurm sacct -P)

SACCT_FIELDS = "JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|ElapsedRaw|AllocNodes|AllocTRES|NodeList"


def _hostlist(names: list[str]) -> str:
    if len(names) == 1:
        return names[0]
    prefix = names[0].rsplit("-", 1)[0]
    nums = sorted(int(n.rsplit("-", 1)[1]) for n in names)
    return (
        f"{prefix}-[{nums[0]:02d}-{nums[-1]:02d}]"
        if nums == list(range(nums[0], nums[-1] + 1))
        else f"{prefix}-[{','.join(f'{n:02d}' for n in nums)}]"
    )


def _elapsed(seconds: int) -> str:
    d, rem = divmod(seconds, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def _write_sacct(root: Path, jobs: list[Job], start: datetime, hosts: dict[str, Host]) -> Path:
    folder = root / "landing" / "jobs" / "sacct"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [SACCT_FIELDS]
    fmt = "%Y-%m-%dT%H:%M:%S"
    for j in sorted(jobs, key=lambda j: (j.start, j.job_id)):
        s, e = job_times(j, start)
        secs = int((e - s).total_seconds())
        nodes = len(j.hosts)
        gpu_type = "h100" if hosts[j.hosts[0]].itype is P5 else "a100"
        tres = f"billing={96 * nodes},cpu={96 * nodes},gres/gpu:{gpu_type}={8 * nodes},gres/gpu={8 * nodes},mem={1000 * nodes}G,node={nodes}"
        exit_code = "1:0" if j.state == "FAILED" else "0:0"
        submit = (s - timedelta(minutes=3)).strftime(fmt)
        part = "h100" if gpu_type == "h100" else "a100"
        lines.append("|".join([str(j.job_id), str(j.job_id), j.name, j.user, j.team, part, j.state, exit_code, submit,
                               s.strftime(fmt), e.strftime(fmt), _elapsed(secs), str(secs), str(nodes), tres, _hostlist(j.hosts)]))  # fmt: skip
        for step in ("batch", "extern"):
            lines.append("|".join([f"{j.job_id}.{step}", f"{j.job_id}.{step}", step, "", j.team, "", j.state if step == "batch" else "COMPLETED",
                                   exit_code if step == "batch" else "0:0", submit, s.strftime(fmt), e.strftime(fmt), _elapsed(secs), str(secs),
                                   "1" if step == "batch" else str(nodes), f"cpu=96,gres/gpu={8 if step == 'batch' else 8 * nodes},mem=1000G,node=1",
                                   j.hosts[0] if step == "batch" else _hostlist(j.hosts)]))  # fmt: skip
    path = folder / f"sacct_{start:%Y%m%d}.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------------
# storage (S3 Inventory)

INVENTORY_SCHEMA = "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass, IsMultipartUploaded"


def _etag(key: str, size: int, part_mib: int = 8) -> str:
    parts = -(-size // (part_mib * 1024 * 1024))
    digest = hashlib.md5(f"{key}|{size}".encode()).hexdigest()  # noqa: S324 - a fake ETag, not security
    return f"{digest}-{parts}" if parts > 1 else digest


def _storage(
    rng: random.Random, jobs: list[Job], start: datetime, end: datetime
) -> tuple[dict[str, list[tuple[str, int, datetime, str]]], dict[str, Any]]:
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


def _write_inventory(
    root: Path, objects: dict[str, list[tuple[str, int, datetime, str]]], when: datetime
) -> None:
    for bucket, objs in objects.items():
        base = root / "landing" / "inventory" / bucket / "daily"
        data = base / "data"
        data.mkdir(parents=True, exist_ok=True)
        buf = io.StringIO()
        w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
        for key, size, modified, etag in objs:
            w.writerow(
                [
                    bucket,
                    urllib.parse.quote_plus(key, safe="/"),
                    size,
                    modified.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                    etag,
                    "STANDARD",
                    "true" if "-" in etag else "false",
                ]
            )
        blob = gzip.compress(buf.getvalue().encode(), mtime=0)
        name = f"{uuid.UUID(hashlib.md5(bucket.encode()).hexdigest())}.csv.gz"  # noqa: S324 - a file name
        (data / name).write_bytes(blob)
        stamp = when.strftime("%Y-%m-%dT%H-%MZ")
        folder = base / stamp
        folder.mkdir(parents=True, exist_ok=True)
        manifest = {
            "sourceBucket": bucket,
            "destinationBucket": "arn:aws:s3:::acme-inventory",
            "version": "2016-11-30",
            "creationTimestamp": str(int(when.timestamp() * 1000)),
            "fileFormat": "CSV",
            "fileSchema": INVENTORY_SCHEMA,
            "files": [
                {
                    "key": f"{bucket}/daily/data/{name}",
                    "size": len(blob),
                    "MD5checksum": hashlib.md5(blob).hexdigest(),
                }
            ],  # noqa: S324
        }
        text = json.dumps(manifest, indent=2)
        (folder / "manifest.json").write_text(text, encoding="utf-8")
        (folder / "manifest.checksum").write_text(hashlib.md5(text.encode()).hexdigest(), encoding="utf-8")  # noqa: S324


# ---------------------------------------------------------------------------------------------------


def _config_text() -> str:
    return """\
# wastewatch demo configuration (generated by `wastewatch demo`); paths are relative to this file.
warehouse: warehouse/wastewatch.duckdb
reports_dir: reports
sources:
  - {name: focus-acme, kind: focus, uri: landing/billing/focus/}
  - {name: gpu-nodes, kind: nvidia_smi, uri: landing/telemetry/nvidia-smi/}
  # read once their readers exist (a source whose kind has no reader yet is skipped with a note)
  - {name: slurm, kind: slurm_sacct, uri: landing/jobs/sacct/}
  - {name: ckpt-inventory, kind: s3_inventory, uri: landing/inventory/acme-ckpt/}
  - {name: datasets-inventory, kind: s3_inventory, uri: landing/inventory/acme-datasets/}
  - {name: datasets-eu-inventory, kind: s3_inventory, uri: landing/inventory/acme-datasets-eu/}
  - {name: scratch-inventory, kind: s3_inventory, uri: landing/inventory/acme-scratch/}
tags:
  team: [team]
  project: [project]
  host: [Name, hostname]
checkpoints:
  - "s3://acme-ckpt/{project}/{run_id}/**"
datasets:
  - "s3://acme-datasets/datasets/"
  - "s3://acme-datasets-eu/datasets/"
  - "s3://acme-scratch/datasets/"
rules:
  GPU001: {max_util_pct: 5, min_idle_hours: 2}
budgets:
  team: {nlp: 260000, vision: 110000, speech: 60000}
prices:
  storage_gb_month: {STANDARD: 0.023, STANDARD_IA: 0.0125, GLACIER_IR: 0.004}
"""


def generate(directory: Path, last_week: str, weeks: int = 4, seed: int = 7) -> dict[str, Any]:
    """Write the landing zone, wastewatch.yaml and expected.json under `directory`; return expected."""
    directory = Path(directory)
    for sub in ("landing", "warehouse", "reports"):
        if (directory / sub).exists():
            shutil.rmtree(directory / sub)
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    end = Window.iso_week(last_week).end
    start = end - timedelta(weeks=weeks)
    hours = weeks * HOURS_PER_WEEK
    hosts = _hosts(rng)
    planner, notes = _plan(rng, hosts, weeks, start)
    by_name = {h.name: h for h in hosts}
    objects, facts = _storage(rng, planner.jobs, start, end)
    region = {"acme-datasets-eu": ("eu-west-1", "Europe (Ireland)")}
    storage = {
        b: {
            "bytes": sum(o[1] for o in objs),
            "region": region.get(b, ("us-east-1",))[0],
            "region_name": region.get(b, ("", "US East (N. Virginia)"))[1],
            "team": {"acme-ckpt": "nlp", "acme-datasets": "vision", "acme-datasets-eu": "vision"}.get(b),
            "project": None,
        }
        for b, objs in objects.items()
    }
    rw_day0 = (weeks - 1) * 7
    # Thursday of the report week: 14x the usual egress (Thursday, so even a one-week demo has three
    # earlier weekdays for COST003's baseline)
    spike = (rw_day0 + 3, "speech", Decimal(14))
    lines = _billing_lines(hosts, start, hours, storage, spike)
    _write_billing(directory, lines)
    samples, starved_samples = _write_telemetry(directory, hosts, start, weeks, seed)
    _write_sacct(directory, planner.jobs, start, by_name)
    _write_inventory(directory, objects, end - timedelta(hours=23))
    (directory / "wastewatch.yaml").write_text(_config_text(), encoding="utf-8")

    expected = _expected(
        hosts,
        planner,
        notes,
        facts,
        objects,
        lines,
        start,
        weeks,
        spike,
        samples,
        starved_samples,
        seed,
        last_week,
    )
    (directory / "expected.json").write_text(
        json.dumps(expected, indent=2, default=str) + "\n", encoding="utf-8"
    )
    return expected


def _expected(hosts: list[Host], planner: Planner, notes: dict[str, Any], facts: dict[str, Any], objects: dict[str, Any],
              lines: list[dict[str, Any]], start: datetime, weeks: int, spike: tuple[int, str, Decimal], samples: int,
              starved_samples: dict[tuple[str, int, int], list[tuple[int, int]]], seed: int,
              last_week: str) -> dict[str, Any]:  # fmt: skip
    rw = weeks - 1
    gpu001 = _gpu001_by_week(hosts, weeks)
    week_labels = [Window.containing((start + timedelta(weeks=w)).date()).label for w in range(weeks)]
    rw_start, rw_end = start + timedelta(weeks=rw), start + timedelta(weeks=weeks)
    by_name = {h.name: h for h in hosts}

    # spend in the report week, effective cost, each line spread evenly over its charge period
    def share_in(line: dict[str, Any], a: datetime, b: datetime) -> Decimal:
        s = datetime.strptime(line["ChargePeriodStart"], "%Y-%m-%dT%H:%M:%SZ")
        e = datetime.strptime(line["ChargePeriodEnd"], "%Y-%m-%dT%H:%M:%SZ")
        overlap = (min(e, b) - max(s, a)).total_seconds()
        return Decimal(max(overlap, 0)) / Decimal((e - s).total_seconds())

    spend = Decimal(0)
    untagged = Decimal(0)
    untagged_gpu = Decimal(0)
    team_mtd: dict[str, Decimal] = {}
    month_start = rw_end.replace(day=1) if rw_end.day > 1 else (rw_end - timedelta(days=1)).replace(day=1)
    for line in lines:
        eff = Decimal(line["EffectiveCost"] or 0)
        part = eff * share_in(line, rw_start, rw_end)
        spend += part
        tags = json.loads(line["Tags"]) if line["Tags"] else {}
        if "team" not in tags:
            untagged += part
            if line["ResourceType"] == "Instance":
                untagged_gpu += part
        else:
            team_mtd[tags["team"]] = team_mtd.get(tags["team"], Decimal(0)) + eff * share_in(
                line, month_start, rw_end
            )

    # GPU002 and GPU003: the planted jobs, for the time their sacct records say they ran
    partial_host = by_name["gpu-h100-05"]
    partial_job = next(j for j in planner.jobs if j.job_id == notes["partial_job"])
    gpu002, partial_hours = _gpu002(partial_job, partial_host, start, rw_start, rw_end)
    starved_host = by_name["gpu-a100-04"]
    starved_job = next(j for j in planner.jobs if j.job_id == notes["starved_job"])
    gpu003, starved_util = _gpu003(starved_job, starved_host, start, rw_start, rw_end, starved_samples)
    dark_host = by_name["gpu-a100-03"]
    dark_hours = sum(1 for s in dark_host.states[rw * HOURS_PER_WEEK :] if s.startswith("dark"))

    month_cost = S3_STANDARD / GIB  # per byte and month: what deleting a STANDARD byte saves a month
    week_cost = Decimal(7) / DAYS_PER_MONTH * S3_STANDARD / GIB
    sto001 = Decimal(facts["failed_bytes"]) * week_cost
    sto001_superseded = Decimal(facts["superseded_bytes"]) * week_cost

    # GPU004: every failed job (the planted crash and the random failures) loses its GPU time since its
    # run's last checkpoint
    def failed_in(w: int) -> list[dict[str, Any]]:
        a = start + timedelta(weeks=w)
        return _gpu004_failed_jobs(
            planner.jobs, by_name, facts["checkpoints"], start, a, a + timedelta(weeks=1), notes["crash_job"]
        )

    failed = failed_in(rw)
    gpu004_by_week = {
        week_labels[w]: sum((x["waste"] for x in failed_in(w)), Decimal(0)) for w in range(weeks)
    }
    crash = next(j for j in planner.jobs if j.job_id == notes["crash_job"])
    [crash_failed] = [x for x in failed if x["job_id"] == crash.job_id]
    # STO003: the newest checkpoint of a completed run is kept (STO001 never deletes it); older than 30
    # days at the week's end and still STANDARD, it would cost GLACIER_IR's price instead
    tier_before = rw_end - timedelta(days=30)
    sto003_bytes = sum(size for when, size in facts["newest_completed"] if when <= tier_before)
    sto003_monthly = Decimal(sto003_bytes) * (S3_STANDARD - GLACIER_IR) / GIB
    sto003 = sto003_monthly * 7 / DAYS_PER_MONTH
    sto002 = Decimal(facts["dup_bytes_per_copy"]) * 2 * week_cost
    normal_egress = Decimal(300) * Decimal("0.09")
    cost003 = normal_egress * (spike[2] - 1)

    def money(x: Decimal) -> float:
        return float(_q(x))

    gpu001_rw = gpu001[rw]
    return {
        "company": "Acme AI (demo)",
        "seed": seed,
        "weeks": week_labels,
        "report_week": {
            "week": last_week,
            "spend": money(spend),
            "currency": "USD",
            "rules": {
                "GPU001": {
                    "name": "idle-gpu-instance",
                    "waste": money(sum(gpu001_rw.values(), Decimal(0))),
                    "by_host": {k: money(v) for k, v in sorted(gpu001_rw.items())},
                    "basis": "effective cost of billed hours in idle stretches of >= 2 h where every GPU is at ~0 % util "
                    "(dev boxes overnight/weekends, gpu-h100-09 after its job failed, gpu-a100-05 over the weekend, "
                    "gpu-h100-06's parked notebook holding 86 % of GPU memory)",
                    "insufficient_data": {"host": dark_host.name, "hours_without_telemetry": dark_hours},
                },
                "GPU002": {
                    "name": "overprovisioned-job",
                    "job_id": notes.get("partial_job"),
                    "host": partial_host.name,
                    "job_hours": float(round(partial_hours, 6)),
                    "waste": money(gpu002),
                    "basis": f"{float(partial_hours):.4f} h (the job's sacct Start to End: 72 planned hours less "
                    "the 4 s after its first hour began and the 9 s before its last one ended) x effective "
                    "hourly cost x 6/8 unused GPUs",
                },
                "GPU003": {
                    "name": "input-starved-job",
                    "job_id": notes.get("starved_job"),
                    "host": starved_host.name,
                    "util_mean_pct": float(round(starved_util, 3)),
                    "waste": money(gpu003),
                    "basis": "per GPU and hour the job ran: effective hourly cost / 8 x the share of the hour it "
                    "ran x (1 - the mean utilisation of that GPU's samples taken while it ran / 100); a "
                    f"1-in-4-minutes duty cycle whose samples average {float(starved_util):.3f} % (nominal "
                    "22.875 %)",
                },
                "GPU004": {
                    "name": "failed-job-and-zombie",
                    "waste": money(sum((x["waste"] for x in failed), Decimal(0))),
                    "crash": {
                        "job_id": crash.job_id,
                        "host": crash.hosts[0],
                        "last_checkpoint_at": crash_failed["last_checkpoint_at"],
                        "ended_at": crash_failed["ended_at"],
                        "lost_gpu_hours": crash_failed["lost_gpu_hours"],
                        "waste": money(crash_failed["waste"]),
                    },
                    "failed_jobs": [{**x, "waste": money(x["waste"])} for x in failed],
                    "basis": "every FAILED job: the planted crash on gpu-h100-09 (the 48 idle hours after it are "
                    "GPU001's) and the training jobs that failed at random (~6 % of those longer than 8 h); "
                    "effective hourly cost per node x hours in the week from the newest checkpoint its run "
                    "wrote while it ran to the job's sacct End",
                },
                "STO001": {
                    "name": "orphaned-checkpoint",
                    "waste": money(sto001 + sto001_superseded),
                    "monthly_cost": money((facts["failed_bytes"] + facts["superseded_bytes"]) * month_cost),
                    "failed": {
                        "runs": facts["failed_runs"],
                        "bytes": facts["failed_bytes"],
                        "waste": money(sto001),
                    },
                    "superseded": {
                        "keep_last": 3,
                        "bytes": facts["superseded_bytes"],
                        "waste": money(sto001_superseded),
                    },
                    "basis": "checkpoint bytes of FAILED runs, plus checkpoints of finished runs older than their "
                    "last 3, x $0.023 per GiB-month x 7 / 30.44",
                },
                "STO003": {
                    "name": "cold-checkpoint-tiering",
                    "bytes": sto003_bytes,
                    "waste": money(sto003),
                    "monthly_cost": money(sto003_monthly),
                    "basis": "newest checkpoint of each completed run written 30 days or more before the week's "
                    "end, still STANDARD: bytes x ($0.023 - $0.004 GLACIER_IR) per GiB-month x 7 / 30.44 (none "
                    "when the demo spans 4 weeks or less)",
                },
                "STO004": {
                    "name": "incomplete-multipart-upload",
                    "waste": 0.0,
                    "monthly_cost": 0.0,
                    "basis": "nothing planted: S3 Inventory reports list no incomplete multipart uploads",
                },
                "STO002": {
                    "name": "duplicate-dataset",
                    "dataset": facts["dup_dataset"],
                    "canonical": "s3://acme-datasets/datasets/laion-400m-subset/",
                    "copies": [
                        "s3://acme-datasets-eu/datasets/laion-400m-subset/",
                        "s3://acme-scratch/datasets/laion-copy/",
                    ],
                    "bytes_per_copy": facts["dup_bytes_per_copy"],
                    "waste": money(sto002),
                    "monthly_cost": money(facts["dup_bytes_per_copy"] * 2 * month_cost),
                    "basis": "2 extra copies x bytes x $0.023 per GiB-month x 7 / 30.44",
                },
                "COST001": {
                    "name": "unattributed-spend",
                    "spend": money(untagged),
                    "gpu_spend": money(untagged_gpu),
                    "note": "gpu-a100-08 has no team tag (suggested owner: speech, from its Slurm jobs); acme-scratch, the "
                    "support fee and the Savings Plan fee are untagged",
                },
                "COST002": {
                    "name": "budget-overrun",
                    "month_to_date_by_team": {k: money(v) for k, v in sorted(team_mtd.items())},
                    "budgets": {"nlp": 260000, "vision": 110000, "speech": 60000},
                },
                "COST003": {
                    "name": "spend-anomaly",
                    "team": "speech",
                    "service": "Amazon Virtual Private Cloud",
                    "day": (start + timedelta(days=spike[0])).strftime("%Y-%m-%d"),
                    "excess": money(cost003),
                },
            },
        },
        "gpu001_by_week": {week_labels[w]: money(sum(v.values(), Decimal(0))) for w, v in gpu001.items()},
        "gpu004_by_week": {label: money(v) for label, v in gpu004_by_week.items()},
        "sizes": {
            "gpu_hosts": len(hosts),
            "billing_lines": len(lines),
            "gpu_samples": samples,
            "jobs": len(planner.jobs),
            "storage_objects": sum(len(v) for v in objects.values()),
        },
    }
