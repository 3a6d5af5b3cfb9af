"""The demo's GPU006 plant: a run of one model configuration on 64 GPUs at half the per-GPU throughput of an
8-GPU run of the same configuration.

The research team rents a scaling-test pool for one day, the report week's Tuesday: eight 8 x H100 hosts
(scale-h100-01..08, inventory cluster `scale-test`) priced by a `pricing:` contract entry of their own, valid
that day only (SCALE_RATE a GPU-hour), so the pool costs the day's 24 hours and no other. One job fills the
day on all eight hosts: acme-llm-6.7b (the model nlp trains on the p5s) at tp=8, pp=1, dp=8, a global batch
of 512 x 4096 tokens, 132 steps per 10 minutes on 64 GPUs. The baseline is nlp's longest completed
single-node run of the week on gpu-h100-08: 33 steps per 10 minutes on 8 GPUs, the same configuration at
dp=1. Per GPU that is 132 / 64 against 33 / 8: half the throughput (about 0.29 MFU against 0.59; above
GPU005's floor, and every GPU busy, so no other rule prices the run). GPU006 prices the GPU-hours beyond
linear scaling: 64 x (1 - 0.5) = 32 of its GPUs for its time, at the pool's SCALE_RATE a GPU-hour.

Training logs (the `train_log` source, CSV, one line every 10 minutes, a configuration row first) are
written for the two runs. nlp's 2-node family on gpu-h100-01/02 (16 GPUs, at least GPU006's `min_gpus`)
logs nothing: GPU006 says `insufficient_data` (no training log) for each of its runs of the week, never 0
waste.

Planned from no draw of the main generator's random stream and written to files of their own (telemetry,
a sacct file, a hosts CSV, the logs), so every other planted amount stays as it was. The pool's day of
contract spend joins expected.json's modelled spend, the research team's showback and the fleet's
GPU-hours the spares are measured against.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from pipelines.demo.modelled import LOG_EVERY_S, PARAMS, PEAK_FLOPS, TEAM, TOKENS_PER_STEP
from pipelines.demo.scenario import P5, PROJECTS, TEAM_USERS, Host, Job, Planner, job_times, quantize
from pipelines.units import HOURS_PER_WEEK

FAMILY_HOSTS = ["gpu-h100-01", "gpu-h100-02"]  # nlp's 2-node family: 16 GPUs (GPU006 judges them), no log
BASELINE_HOST = "gpu-h100-08"
POOL_HOSTS = [f"scale-h100-{i:02d}" for i in range(1, 9)]
POOL_CLUSTER = "scale-test"
POOL_DAY = 1  # the report week's Tuesday
SCALE_RATE = Decimal("2.99")  # USD per GPU-hour, the one-day rental's contract
SCALE_JOB_ID = 79001
GPUS_PER_HOST = 8
BASELINE_STEPS = 33  # steps per 10 minutes on 8 GPUs
BIG_GPUS = GPUS_PER_HOST * len(POOL_HOSTS)
BIG_STEPS = BASELINE_STEPS * BIG_GPUS // GPUS_PER_HOST // 2  # 8x the GPUs, 4x the tokens: half per GPU
CONFIG = {"model": "acme-llm-6.7b", "tp": 8, "pp": 1, "global_batch": 512, "seq_len": 4096}
HEADER = "ts,job_id,host,step,tokens,step_time,params,gpus,model,tp,pp,dp,global_batch,seq_len"


@dataclass(frozen=True)
class ScalingPlant:
    big: Job  # the pool's run, 64 GPUs
    baseline: Job  # nlp's single-node run on gpu-h100-08, 8 GPUs
    pool: tuple[Host, ...]  # the eight rented hosts, on for the rental day only
    day: date  # the rental day (the pricing entry's valid_from and valid_to)
    unlogged: tuple[Job, ...]  # the 2-node family's runs of the week that did not fail (no training log)


def _in_week(j: Job, start: datetime, a: datetime, b: datetime) -> float:
    s, e = job_times(j, start)
    return max((min(e, b) - max(s, a)).total_seconds(), 0.0)


def plan_scaling(planner: Planner, start: datetime, weeks: int) -> ScalingPlant:
    """The pool, its one run over the rental day, and the baseline: the longest completed single-node
    training run on gpu-h100-08 of the report week."""
    a, b = start + timedelta(weeks=weeks - 1), start + timedelta(weeks=weeks)
    hours = weeks * HOURS_PER_WEEK
    t0 = (weeks - 1) * HOURS_PER_WEEK + 24 * POOL_DAY
    pool = tuple(
        Host(name, P5, TEAM, PROJECTS[TEAM], "", "", states=["off"] * t0 + ["busy"] * 24 + ["off"] * (hours - t0 - 24))
        for name in POOL_HOSTS
    )  # fmt: skip
    project = PROJECTS[TEAM]
    big = Job(
        SCALE_JOB_ID,
        f"{project}-scale-{SCALE_JOB_ID}",
        TEAM_USERS[TEAM][0],
        TEAM,
        project,
        list(POOL_HOSTS),
        t0,
        t0 + 24,
    )
    baseline = max(
        (
            j
            for j in planner.jobs
            if j.hosts == [BASELINE_HOST] and j.state == "COMPLETED" and "-train-" in j.name
        ),
        key=lambda j: (_in_week(j, start, a, b), -j.job_id),
    )
    unlogged = tuple(
        j
        for j in planner.jobs
        if j.hosts == FAMILY_HOSTS and j.state != "FAILED" and _in_week(j, start, a, b) > 0
    )
    return ScalingPlant(big, baseline, pool, (start + timedelta(hours=t0)).date(), unlogged)


def write_pool_hosts_csv(root: Path, plant: ScalingPlant) -> None:
    """The pool's inventory records (team, project, cluster), beside the research cluster's hosts CSV, with
    when each host was handed over and handed back: a host returned at the end of its rental is gone, never
    a host that stopped reporting (the telemetry freshness check)."""
    folder = root / "landing" / "inventory" / "hosts"
    folder.mkdir(parents=True, exist_ok=True)
    on = datetime.combine(plant.day, datetime.min.time())
    off = on + timedelta(days=1)
    lines = ["host,team,project,cluster,launched_at,terminated_at"] + [
        f"{h.name},{h.team},{h.project},{POOL_CLUSTER},{on:%Y-%m-%d %H:%M:%S},{off:%Y-%m-%d %H:%M:%S}"
        for h in plant.pool
    ]
    (folder / "scale_hosts.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def pricing_entry(plant: ScalingPlant) -> str:
    """The pool's `pricing:` entry (a list item of the config's section): its contract, the rental day only."""
    return f"""\
  # the research team's one-day scaling-test pool: priced the rental day, no other
  - match: {{cluster: "{POOL_CLUSTER}"}}
    contract: {{per_gpu_hour: {SCALE_RATE}, currency: USD, valid_from: {plant.day}, valid_to: {plant.day}}}
"""


def _mfu(gpus: int, steps: int) -> Decimal:
    """One 10-minute interval's MFU: 6 x N x tokens / wall seconds / (GPUs x the H100's dense peak)."""
    return 6 * PARAMS * TOKENS_PER_STEP * steps / LOG_EVERY_S / (gpus * PEAK_FLOPS["h100"])


def write_scaling_logs(
    root: Path, plant: ScalingPlant, start: datetime, a: datetime, b: datetime
) -> dict[int, dict[str, Any]]:
    """Each planted run's training log for its lines in [a, b); per job id its lines and median MFU, as
    modelled.write_train_logs returns them."""
    folder = root / "landing" / "train_logs"
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[int, dict[str, Any]] = {}
    for j, gpus, steps in ((plant.baseline, GPUS_PER_HOST, BASELINE_STEPS), (plant.big, BIG_GPUS, BIG_STEPS)):
        started, ended = job_times(j, start)
        when, times = started + timedelta(seconds=LOG_EVERY_S), []
        while when < ended:
            if a <= when < b:
                times.append(when)
            when += timedelta(seconds=LOG_EVERY_S)
        c = CONFIG
        first = max(started, a)
        rows = [
            HEADER,
            f"{first:%Y-%m-%dT%H:%M:%SZ},{j.job_id},{j.hosts[0]},,,,,{gpus},{c['model']},{c['tp']},{c['pp']},"
            f"{gpus // (c['tp'] * c['pp'])},{c['global_batch']},{c['seq_len']}",
        ]
        for k, t in enumerate(times, start=1):
            rows.append(
                f"{t:%Y-%m-%dT%H:%M:%SZ},{j.job_id},{j.hosts[0]},{steps * k},{TOKENS_PER_STEP},"
                f"{LOG_EVERY_S / steps * 0.97:.3f},{int(PARAMS)},{gpus},,,,,,{c['seq_len']}"
            )
        (folder / f"{j.name}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
        # the first line of the file has no earlier line to time it from
        mfus = [_mfu(gpus, steps)] * (len(times) - 1)
        out[j.job_id] = {"lines": len(times), "mfu": statistics.median(mfus), "gpu": "h100", "saves": []}
    return out


def pool_costs(plant: ScalingPlant) -> dict[str, dict[datetime, Decimal]]:
    """Each pool host's cost per hour it is priced: the rental day's 24 hours at SCALE_RATE x its GPUs."""
    day = datetime.combine(plant.day, datetime.min.time())
    return {
        h.name: {day + timedelta(hours=k): SCALE_RATE * GPUS_PER_HOST for k in range(24)} for h in plant.pool
    }


def expected_pool_day(plant: ScalingPlant) -> dict[str, Any]:
    """expected.json's second COST003 anomaly (attention, never waste): the rental day's contract spend of the
    research team above its usual day. Its other contract hosts cost the same every hour, so the usual day
    (the median of the trailing days) is theirs and the excess is the pool's whole day."""
    excess = sum((c for by_hour in pool_costs(plant).values() for c in by_hour.values()), Decimal(0))
    return {
        "team": TEAM,
        "service": "contract GPU host",
        "day": plant.day.isoformat(),
        "excess": float(quantize(excess)),
        "basis": "the scaling-test pool's rental day: 8 hosts x 8 GPUs x 24 h x the pool's contract rate above "
        "the research team's usual contract spend for a weekday (rent-h100-01/02 and the hot spares, the same "
        "every day): a real spike COST003 names, an attention item, never waste",
    }


def expected_scaling(plant: ScalingPlant, start: datetime, a: datetime, b: datetime) -> dict[str, Any]:
    """expected.json's GPU006 entry: the pool run's GPU-hours beyond linear scaling, at the pool's rate."""
    seconds = Decimal(_in_week(plant.big, start, a, b))
    gpu_hours = BIG_GPUS * seconds / 3600
    # tokens/s per GPU over the baseline's: 132 steps per 10 minutes on 64 GPUs against 33 on 8
    efficiency = (Decimal(BIG_STEPS) / BIG_GPUS) / (Decimal(BASELINE_STEPS) / GPUS_PER_HOST)
    excess_gpu_hours = gpu_hours * (1 - efficiency)
    waste = excess_gpu_hours * SCALE_RATE
    return {
        "name": "poor-scaling",
        "job_id": plant.big.job_id,
        "team": plant.big.team,
        "hosts": plant.big.hosts,
        "gpus": BIG_GPUS,
        "baseline_job_id": plant.baseline.job_id,
        "baseline_host": BASELINE_HOST,
        "baseline_gpus": GPUS_PER_HOST,
        "efficiency": float(efficiency),
        "gpu_hours": float(round(gpu_hours, 6)),
        "excess_gpu_hours": float(round(excess_gpu_hours, 6)),
        "cost_per_gpu_hour": float(SCALE_RATE),
        "rental_day": plant.day.isoformat(),
        "waste": float(quantize(waste)),
        "insufficient_data": sorted(j.job_id for j in plant.unlogged),
        "formula": "waste = excess_gpu_hours x cost_per_gpu_hour; excess_gpu_hours = gpu_hours x (1 - efficiency); "
        "gpu_hours = 64 GPUs x the run's sacct Start to End within the week",
        "basis": f"the research team's 64-GPU run on the one-day scaling-test pool (scale-h100-01..08, {plant.day}): "
        "its GPU-hours beyond linear scaling x the pool's effective hourly cost per GPU "
        f"({SCALE_RATE} USD, its contract entry); efficiency = its tokens/s per GPU (132 steps of 512 x 4096 "
        "tokens per 10 minutes on 64 GPUs) / the 8-GPU run's of the same configuration on gpu-h100-08 (33 on "
        "8) = 0.5; nlp's 2-node runs of the week have no training log: insufficient_data",
    }
