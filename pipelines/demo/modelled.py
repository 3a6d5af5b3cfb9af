"""The demo's GPU hosts without a bill, and its training logs.

Acme's research team runs two clusters no bill lists: a self-built one (dgx-01, dgx-02: 8 x H100 each,
priced `owned` by the demo config's `pricing:` entry) and one rented on a flat per-GPU-hour contract
(rent-h100-01, rent-h100-02, inventory tag `cluster: lambda-1cc`, priced `contract`). A hosts CSV gives them
their team and cluster; their Slurm jobs are a second sacct file. Planted on them, in the report week: dgx-02
idle overnight (GPU001), a failed job on rent-h100-01 (GPU004) and a job on rent-h100-02 that keeps its GPUs
busy at a low measured MFU (GPU005: its training log gives the MFU, telemetry shows no other rule's waste).
The contract hosts' other runs are ADV003's checkpoint-cadence plants (CADENCE): rent-h100-02's pre-training
saves every 10 minutes and is preempted once, rent-h100-01's fine-tuning saves every 12 hours and every
other run is preempted (PREEMPTED: an interruption, which no waste rule prices).

Training logs (the `train_log` source, CSV, one line every 10 minutes) are written for every completed
job of the research cluster in the report week and for the completed training jobs of two cloud hosts, so
the report has tokens per GPU-hour and cost per million tokens on each pricing basis; and one log of a
workstation run that matches no Slurm job (the report counts its lines, never drops them silently).

Everything here is deterministic (no draw from the main generator's random stream), so adding these
hosts changes none of the cloud hosts' planted amounts.
"""

from __future__ import annotations

import random
import statistics
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from pipelines.demo.scenario import P5, PROJECTS, Host, Job, Planner, job_times
from pipelines.units import DAYS_PER_MONTH, HOURS_PER_WEEK

TEAM = "research"

# the `pricing:` entries of the demo config (writers.config_text prints these same figures)
OWNED = {
    "purchase_price": Decimal(320000),
    "life_years": Decimal(4),
    "gpus": 8,
    "pue": Decimal("1.3"),
    "kwh_price": Decimal("0.11"),
    "facility_per_month": Decimal(900),
    "host_overhead": Decimal("1.5"),  # the default: the config leaves it out
    "in_service": "2025-10-01",
}
CONTRACT = {"per_gpu_hour": Decimal("2.10"), "valid_from": "2026-01-01"}
OWNED_HOSTS = ("dgx-01", "dgx-02")
CONTRACT_HOSTS = ("rent-h100-01", "rent-h100-02")
CLUSTERS = {
    "dgx-01": "acme-dgx",
    "dgx-02": "acme-dgx",
    "rent-h100-01": "lambda-1cc",
    "rent-h100-02": "lambda-1cc",
}

PEAK_FLOPS = {"h100": Decimal("989.4e12"), "a100": Decimal("312e12")}  # gpu_peak_flops.csv, dense BF16
PARAMS = Decimal("6.7e9")  # the research team's (and nlp's) model
TOKENS_PER_STEP = 512 * 4096  # global batch x sequence length
LOG_EVERY_S = 600
# steps per 10 minutes, cycled: about 0.45 MFU on 8 x H100 for a well-fed job, about 0.11 for the
# planted memory-bound one, about 0.45 on 8 x A100
STEPS_H100 = (25, 26, 24, 25, 27, 23)
STEPS_LOW = (6, 6, 7, 5, 6, 6)
STEPS_A100 = (8, 8, 9, 7, 8, 8)
LOGGED_CLOUD_HOSTS = ("gpu-h100-07", "gpu-a100-06")
STRAY_LINES = 12  # the workstation run's log lines (no Slurm job)
# ADV003's two planted job types on the contract cluster, by host: (job kind, seconds between checkpoint
# saves, seconds each save takes as the training log reports it). rent-h100-02's pre-training saves every
# 10 minutes and is preempted once (a low failure rate); rent-h100-01's fine-tuning saves every 12 hours and
# every other run is preempted (frequent failures). The saves are lines of the runs' training logs.
CADENCE = {"rent-h100-02": ("pretrain", 600, Decimal(40)), "rent-h100-01": ("sft", 12 * 3600, Decimal(300))}
RESTART_MINUTES = Decimal(15)  # ADV003's default restart time
# the contract hosts' resource as the marts name it: no provider (its pricing basis), no region, its GPU model
CONTRACT_GPU_MODEL = "H100 80GB HBM3"


def modelled_fleet() -> list[Host]:
    """The four research hosts: 8 x H100 SXM each (the same GPU, memory and power limit as a p5)."""
    return [Host(name, P5, TEAM, PROJECTS[TEAM], "", "") for name in OWNED_HOSTS + CONTRACT_HOSTS]


def _train(p: Planner, host: Host, t0: int, t1: int, length: int = 23, kind: str = "train") -> None:
    """Back-to-back training jobs in [t0, t1) with one idle hour between them; the range ends on a job."""
    t = t0
    while t < t1:
        n = min(length, t1 - t)
        if t1 - t - n == 1:  # a lone idle hour would end the range: run to its end instead
            n += 1
        p.job([host.name], TEAM, t, t + n, kind=kind)
        host.states[t : t + n] = ["busy"] * n
        t += n
        if t < t1:
            t += 1  # the idle hour between two jobs


def plan_modelled(
    hosts: list[Host], weeks: int, start: datetime, seed: int
) -> tuple[Planner, dict[str, Any]]:
    """The research cluster's hours and jobs; `notes` names the planted idle stretch, crash and low-MFU job."""
    hours = weeks * HOURS_PER_WEEK
    p = Planner(random.Random(f"{seed}-research"), hours, start)
    p.next_id = 70001
    by = {h.name: h for h in hosts}
    for h in hosts:
        h.states = ["idle"] * hours
    rw = weeks - 1
    _train(p, by["dgx-01"], 0, hours)
    # dgx-02 idle from Wednesday 19:00 to Thursday 08:00 of the report week
    idle = (p.hour_of(rw, 2, 19), p.hour_of(rw, 3, 8))
    _train(p, by["dgx-02"], 0, idle[0])
    _train(p, by["dgx-02"], idle[1], hours)
    # rent-h100-01: a job that fails on Tuesday 16:00 after 14 h
    crash = (p.hour_of(rw, 1, 2), p.hour_of(rw, 1, 16))
    rent1 = by["rent-h100-01"]
    _train(p, rent1, 0, crash[0] - 1, kind=CADENCE["rent-h100-01"][0])
    crash_job = p.job([rent1.name], TEAM, crash[0], crash[1], state="FAILED")
    rent1.states[crash[0] : crash[1]] = ["busy"] * (crash[1] - crash[0])
    _train(p, rent1, crash[1] + 1, hours, kind=CADENCE["rent-h100-01"][0])
    # rent-h100-02: Monday 06:00 to Wednesday 18:00, GPUs busy, MFU low
    low = (p.hour_of(rw, 0, 6), p.hour_of(rw, 2, 18))
    rent2 = by["rent-h100-02"]
    _train(p, rent2, 0, low[0] - 1, kind=CADENCE["rent-h100-02"][0])
    low_job = p.job([rent2.name], TEAM, low[0], low[1], kind="longctx")
    rent2.states[low[0] : low[1]] = ["busy"] * (low[1] - low[0])
    _train(p, rent2, low[1] + 1, hours, kind=CADENCE["rent-h100-02"][0])
    # ADV003's failures: every other sft run is preempted; of the pretrain runs, the second after the low job
    sft = [j for j in p.jobs if _kind(j) == CADENCE["rent-h100-01"][0]]
    for j in sft[1::2]:
        j.state = "PREEMPTED"
    after_low = [j for j in p.jobs if _kind(j) == CADENCE["rent-h100-02"][0] and j.start > low[1]]
    if len(after_low) > 1:
        after_low[1].state = "PREEMPTED"
    return p, {"idle": ("dgx-02", *idle), "crash_job": crash_job.job_id, "low_job": low_job.job_id}


def _kind(j: Job) -> str:
    """The kind in a job's name (foundation-7b-sft-70012 is sft)."""
    return j.name.rsplit("-", 2)[-2]


def write_hosts_csv(root: Path, hosts: list[Host]) -> None:
    """The research cluster's inventory (a CMDB export): team, project and cluster per host."""
    folder = root / "landing" / "inventory" / "hosts"
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["host,team,project,cluster"] + [
        f"{h.name},{h.team},{h.project},{CLUSTERS[h.name]}" for h in hosts
    ]
    (folder / "research_hosts.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------------
# training logs


def _intervals(
    j: Job, start: datetime, a: datetime, b: datetime, steps: tuple[int, ...]
) -> list[tuple[datetime, int]]:
    """The log lines of a job in [a, b): (time, steps since the previous line), one every 10 minutes."""
    started, ended = job_times(j, start)
    out, k = [], 0
    when = started + timedelta(seconds=LOG_EVERY_S)
    while when < ended:
        if a <= when < b:
            out.append((when, steps[k % len(steps)]))
        when += timedelta(seconds=LOG_EVERY_S)
        k += 1
    return out


def interval_mfu(steps: int, gpu: str) -> Decimal:
    """One 10-minute interval's MFU: 6 x N x tokens / wall seconds / (8 GPUs x dense peak)."""
    return 6 * PARAMS * TOKENS_PER_STEP * steps / LOG_EVERY_S / (8 * PEAK_FLOPS[gpu])


def write_train_logs(
    root: Path,
    jobs: list[tuple[Job, str]],
    start: datetime,
    a: datetime,
    b: datetime,
    low_job: int,
) -> dict[int, dict[str, Any]]:
    """One CSV per job (`ts, job_id, host, step, tokens, step_time, params, gpus, save_s`) for its lines in
    [a, b), plus a workstation run's log that names no job; return per job id its lines, median MFU and
    checkpoint saves. A job of an ADV003 plant (CADENCE) also logs a line per checkpoint save, with the
    seconds it took (save_s) and no tokens."""
    folder = root / "landing" / "train_logs"
    folder.mkdir(parents=True, exist_ok=True)
    header = "ts,job_id,host,step,tokens,step_time,params,gpus,save_s"
    cadence = {kind: (every, took) for kind, every, took in CADENCE.values()}
    out: dict[int, dict[str, Any]] = {}
    for j, gpu in jobs:
        if j.state != "COMPLETED":
            continue
        pattern = STEPS_LOW if j.job_id == low_job else STEPS_A100 if gpu == "a100" else STEPS_H100
        lines = _intervals(j, start, a, b, pattern)
        if not lines:
            continue
        every, took = cadence.get(_kind(j), (None, None))
        started = job_times(j, start)[0]
        rows, step, saves = [header], 0, []
        for when, n in lines:
            step += n
            rows.append(
                f"{when:%Y-%m-%dT%H:%M:%SZ},{j.job_id},{j.hosts[0]},{step},{TOKENS_PER_STEP},"
                f"{LOG_EVERY_S / n * 0.97:.3f},{int(PARAMS)},8,"
            )
            if every and (when - started).total_seconds() % every == 0:
                rows.append(f"{when:%Y-%m-%dT%H:%M:%SZ},{j.job_id},{j.hosts[0]},,,,{int(PARAMS)},8,{took}")
                saves.append(when)
        (folder / f"{j.name}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
        # the first line of the file has no earlier line to time it from: its interval is not measured
        mfus = [interval_mfu(n, gpu) for _, n in lines[1:]]
        out[j.job_id] = {
            "lines": len(lines),
            "mfu": statistics.median(mfus) if mfus else None,
            "gpu": gpu,
            "saves": saves,
        }
    # a run on a workstation outside Slurm: its lines match no job
    rows = [header] + [
        f"{a + timedelta(hours=30, seconds=LOG_EVERY_S * k):%Y-%m-%dT%H:%M:%SZ},,ws-research-01,{25 * k},"
        f"{TOKENS_PER_STEP},23.280,{int(PARAMS)},8,"
        for k in range(1, STRAY_LINES + 1)
    ]
    (folder / "ws-research-01_notebook-run.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return out


# ---------------------------------------------------------------------------------------------------
# prices and planted amounts


def owned_hour(watts: Decimal) -> Decimal:
    """An owned host's cost for an hour whose GPUs drew `watts` in all (docs/gpu.md "Owned")."""
    depreciation = OWNED["purchase_price"] / (OWNED["life_years"] * 12 * DAYS_PER_MONTH * 24)
    power = watts * OWNED["host_overhead"] * OWNED["pue"] / 1000 * OWNED["kwh_price"]
    return depreciation + power + OWNED["facility_per_month"] / (DAYS_PER_MONTH * 24)


def contract_hour() -> Decimal:
    return CONTRACT["per_gpu_hour"] * 8


def hourly_costs(hosts: list[Host], watts: dict[tuple[str, int], Decimal]) -> dict[str, list[Decimal]]:
    """Each research host's cost per hour of the span, from its GPUs' measured watts (owned) or the rate."""
    return {
        h.name: [
            owned_hour(watts[(h.name, t)]) if h.name in OWNED_HOSTS else contract_hour()
            for t in range(len(h.states))
        ]
        for h in hosts
    }


def expected_modelled(
    hosts: list[Host],
    planner: Planner,
    notes: dict[str, Any],
    costs: dict[str, list[Decimal]],
    logs: dict[int, dict[str, Any]],
    start: datetime,
    weeks: int,
    floor: Decimal = Decimal("0.25"),
) -> dict[str, Any]:
    """The research cluster's planted amounts (exact decimals; build_expected rounds them once)."""
    rw = weeks - 1
    week_hours = range(rw * HOURS_PER_WEEK, weeks * HOURS_PER_WEEK)
    a, b = start + timedelta(weeks=rw), start + timedelta(weeks=weeks)
    spend = {"owned": Decimal(0), "contract": Decimal(0)}
    by_host = {}
    for h in hosts:
        total = sum((costs[h.name][t] for t in week_hours), Decimal(0))
        spend["owned" if h.name in OWNED_HOSTS else "contract"] += total
        by_host[h.name] = total
    # GPU001: the idle stretches of >= 2 h on the research hosts, per week (dgx-02's night is the plant)
    idle_by_week: dict[int, dict[str, Decimal]] = {w: {} for w in range(weeks)}
    for h in hosts:
        t = 0
        while t < len(h.states):
            if h.states[t] != "idle":
                t += 1
                continue
            s = t
            while t < len(h.states) and h.states[t] == "idle":
                t += 1
            if t - s >= 2:
                for hour in range(s, t):
                    w = hour // HOURS_PER_WEEK
                    idle_by_week[w][h.name] = idle_by_week[w].get(h.name, Decimal(0)) + costs[h.name][hour]
    # GPU004: the failed job's GPU time (no checkpoint: all of it) at the contract rate
    crash = next(j for j in planner.jobs if j.job_id == notes["crash_job"])
    started, ended = job_times(crash, start)
    crash_s = Decimal((min(ended, b) - max(started, a)).total_seconds())
    # GPU005: the low-MFU job's GPU cost x (1 - MFU / floor)
    low = next(j for j in planner.jobs if j.job_id == notes["low_job"])
    l0, l1 = job_times(low, start)
    low_s = Decimal((min(l1, b) - max(l0, a)).total_seconds())
    mfu = logs[low.job_id]["mfu"]
    gpu_cost = contract_hour() * low_s / 3600
    return {
        "cadence": expected_cadence(planner, logs, start, weeks),
        "spend": spend,
        "spend_by_host": by_host,
        "idle_by_week": idle_by_week,
        "idle": {"host": notes["idle"][0], "hours": notes["idle"][2] - notes["idle"][1]},
        "crash": {
            "job_id": crash.job_id,
            "run_id": crash.name,
            "hosts": crash.hosts,
            "planted": "crash on the contract cluster",
            "basis": "contract",
            "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ended_at": ended.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "last_checkpoint_at": None,
            "lost_gpu_hours": float(round(8 * crash_s / 3600, 4)),
            "waste": contract_hour() * crash_s / 3600,
        },
        "low_mfu": {
            "job_id": low.job_id,
            "host": low.hosts[0],
            "mfu": mfu,
            "floor": floor,
            "gpu_hours": 8 * low_s / 3600,
            "gpu_cost": gpu_cost,
            "waste": gpu_cost * (1 - mfu / floor),
        },
    }


def expected_cadence(
    planner: Planner, logs: dict[int, dict[str, Any]], start: datetime, weeks: int, lookback_weeks: int = 4
) -> dict[str, dict[str, Any]]:
    """ADV003's two planted job types (CADENCE), computed from the plan and the logs as written (exact
    decimals; build_expected rounds the money once). docs/advice.md gives the formulas."""
    end = start + timedelta(weeks=weeks)
    lookback_start = end - timedelta(weeks=lookback_weeks)
    rate = CONTRACT["per_gpu_hour"]
    restart_h = RESTART_MINUTES / 60
    out = {}
    for label, (kind, _every, took) in zip(
        ("frequent_saves", "rare_saves"), (CADENCE["rent-h100-02"], CADENCE["rent-h100-01"]), strict=True
    ):
        runs = [j for j in planner.jobs if _kind(j) == kind]
        times = {j.job_id: job_times(j, start) for j in runs}
        runs = [j for j in runs if times[j.job_id][1] > lookback_start and times[j.job_id][0] < end]
        hours = sum(
            (Decimal((e - s).total_seconds()) / 3600 for s, e in (times[j.job_id] for j in runs)), Decimal(0)
        )
        failures = sum(1 for j in runs if j.state == "PREEMPTED")
        mtbf = hours / failures
        delta_h = took / 3600
        # the current interval: from each logged run's start to its last save, over its saves
        saved = [
            (times[j.job_id][0], logs[j.job_id]["saves"]) for j in runs if logs.get(j.job_id, {}).get("saves")
        ]
        interval = sum((Decimal((max(w) - s0).total_seconds()) / 3600 for s0, w in saved), Decimal(0)) / sum(
            len(w) for _, w in saved
        )
        span_start = max(lookback_start, min(times[j.job_id][0] for j in runs))
        per_week = Decimal(HOURS_PER_WEEK) / (Decimal((end - span_start).total_seconds()) / 3600)
        hours_week = hours * per_week
        failures_week = hours_week / mtbf
        optimum = (2 * delta_h * mtbf).sqrt()

        # a week at interval tau: failures x (tau / 2 + restart) and saves x write time, on 8 GPUs at the rate
        lost_now, lost_opt = (failures_week * (tau / 2 + restart_h) * 8 * rate for tau in (interval, optimum))
        stalls_now, stalls_opt = (hours_week / tau * delta_h * 8 * rate for tau in (interval, optimum))
        out[label] = {
            "resource_id": f"foundation-7b-{kind}@contract/no-region/{CONTRACT_GPU_MODEL}",
            "status": "recommended",
            "runs": len(runs),
            "failures": failures,
            "job_hours": hours,
            "mtbf_hours": mtbf,
            "write_seconds": took,
            "interval_hours": interval,
            "optimum_hours": optimum,
            "gpus": 8,
            "cost_per_gpu_hour": rate,
            "failures_per_week": failures_week,
            "lost_work_now": lost_now,
            "write_stalls_now": stalls_now,
            "lost_work_optimal": lost_opt,
            "write_stalls_optimal": stalls_opt,
            "weekly_saving": lost_now + stalls_now - lost_opt - stalls_opt,
        }
    return out
