"""The demo's GPU hosts without a bill, and its training logs.

Acme's research team runs two clusters no bill lists: a self-built one (dgx-01, dgx-02: 8 x H100 each,
priced `owned` by the demo config's `pricing:` entry) and one rented on a flat per-GPU-hour contract
(rent-h100-01, rent-h100-02, inventory tag `cluster: lambda-1cc`, priced `contract`). A hosts CSV gives them
their team and cluster; their Slurm jobs are a second sacct file. Planted on them, in the report week: dgx-02
idle overnight (GPU001), a failed job on rent-h100-01 (GPU004) and a job on rent-h100-02 that keeps its GPUs
busy at a low measured MFU (GPU005: its training log gives the MFU, telemetry shows no other rule's waste).

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


def modelled_fleet() -> list[Host]:
    """The four research hosts: 8 x H100 SXM each (the same GPU, memory and power limit as a p5)."""
    return [Host(name, P5, TEAM, PROJECTS[TEAM], "", "") for name in OWNED_HOSTS + CONTRACT_HOSTS]


def _train(p: Planner, host: Host, t0: int, t1: int, length: int = 23) -> None:
    """Back-to-back training jobs in [t0, t1) with one idle hour between them; the range ends on a job."""
    t = t0
    while t < t1:
        n = min(length, t1 - t)
        if t1 - t - n == 1:  # a lone idle hour would end the range: run to its end instead
            n += 1
        p.job([host.name], TEAM, t, t + n)
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
    _train(p, rent1, 0, crash[0] - 1)
    crash_job = p.job([rent1.name], TEAM, crash[0], crash[1], state="FAILED")
    rent1.states[crash[0] : crash[1]] = ["busy"] * (crash[1] - crash[0])
    _train(p, rent1, crash[1] + 1, hours)
    # rent-h100-02: Monday 06:00 to Wednesday 18:00, GPUs busy, MFU low
    low = (p.hour_of(rw, 0, 6), p.hour_of(rw, 2, 18))
    rent2 = by["rent-h100-02"]
    _train(p, rent2, 0, low[0] - 1)
    low_job = p.job([rent2.name], TEAM, low[0], low[1], kind="longctx")
    rent2.states[low[0] : low[1]] = ["busy"] * (low[1] - low[0])
    _train(p, rent2, low[1] + 1, hours)
    return p, {"idle": ("dgx-02", *idle), "crash_job": crash_job.job_id, "low_job": low_job.job_id}


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
    """One CSV per job (`ts, job_id, host, step, tokens, step_time, params, gpus`) for its lines in [a, b),
    plus a workstation run's log that names no job; return per job id its lines and median MFU."""
    folder = root / "landing" / "train_logs"
    folder.mkdir(parents=True, exist_ok=True)
    header = "ts,job_id,host,step,tokens,step_time,params,gpus"
    out: dict[int, dict[str, Any]] = {}
    for j, gpu in jobs:
        if j.state != "COMPLETED":
            continue
        pattern = STEPS_LOW if j.job_id == low_job else STEPS_A100 if gpu == "a100" else STEPS_H100
        lines = _intervals(j, start, a, b, pattern)
        if not lines:
            continue
        rows, step = [header], 0
        for when, n in lines:
            step += n
            rows.append(
                f"{when:%Y-%m-%dT%H:%M:%SZ},{j.job_id},{j.hosts[0]},{step},{TOKENS_PER_STEP},"
                f"{LOG_EVERY_S / n * 0.97:.3f},{int(PARAMS)},8"
            )
        (folder / f"{j.name}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
        # the first line of the file has no earlier line to time it from: its interval is not measured
        mfus = [interval_mfu(n, gpu) for _, n in lines[1:]]
        out[j.job_id] = {"lines": len(lines), "mfu": statistics.median(mfus) if mfus else None, "gpu": gpu}
    # a run on a workstation outside Slurm: its lines match no job
    rows = [header] + [
        f"{a + timedelta(hours=30, seconds=LOG_EVERY_S * k):%Y-%m-%dT%H:%M:%SZ},,ws-research-01,{25 * k},"
        f"{TOKENS_PER_STEP},23.280,{int(PARAMS)},8"
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
