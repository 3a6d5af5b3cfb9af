"""The planted waste, priced by each rule family's definition, for expected.json.

Every amount is computed from what the generator wrote (the plan, the bill's lines, the utilisation
samples drawn), independently of the rule SQL, and rounded to the cent once, at the end.
"""

from __future__ import annotations

import csv
import json
import re
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from pipelines.demo.billing import EU_READS_USAGE_TYPE, INTER_REGION_PER_GB, RI_ARN, RI_HOURLY
from pipelines.demo.modelled import STRAY_LINES
from pipelines.demo.scaling import SCALE_RATE
from pipelines.demo.scenario import (
    GLACIER_IR,
    GROWTH_BUCKET,
    GROWTH_BUDGET,
    LOG_GROUPS,
    P4D,
    S3_STANDARD,
    Host,
    Job,
    Planner,
    job_times,
    quantize,
)
from pipelines.units import DAYS_PER_MONTH, GIB, HOURS_PER_WEEK
from pipelines.warehouse import CATALOG_DIR
from rules import Window


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


ADVICE_LOOKBACK_WEEKS = 4  # the advisors' default lookback
FLOOR_PERCENTILE = 0.10  # ADV001's default quantile of hourly on-demand instances
MIN_CHECKPOINTED_SHARE = 0.8  # ADV002's default share of runs that must checkpoint


def _catalogue_discount(family: str, option: str) -> Decimal:
    """The dated, cited discount of pipelines/catalog/gpu_purchase_discounts.csv for an AWS family."""
    with (CATALOG_DIR / "gpu_purchase_discounts.csv").open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if (r["provider"], r["instance_family"], r["region_id"], r["option"]) == (
                "AWS",
                family,
                "*",
                option,
            ):
                return Decimal(r["discount"])
    raise KeyError(f"no {option} discount for {family} in the catalogue")


def _commitment_advice(hosts: list[Host], start: datetime, weeks: int) -> dict[str, Any]:
    """ADV001 for the on-demand p4d.24xlarge hosts (the p5s run under the Savings Plan): every hour of the
    lookback counts the p4d hosts billed in it; the floor is the 10 % quantile (DuckDB's quantile_disc: the
    value at floor((n - 1) x 0.1) of the sorted hours); the saving is what a 1-year commitment for the floor,
    at the catalogue's discount, would have saved, per week."""
    lookback = min(weeks, ADVICE_LOOKBACK_WEEKS) * HOURS_PER_WEEK
    first = weeks * HOURS_PER_WEEK - lookback
    p4d = [h for h in hosts if h.itype is P4D]
    counts = [sum(1 for h in p4d if h.states[t] != "off") for t in range(first, weeks * HOURS_PER_WEEK)]
    floor_n = sorted(counts)[int((len(counts) - 1) * FLOOR_PERCENTILE)]
    d = _catalogue_discount("p4d", "commitment_1yr")
    rate = P4D.on_demand
    covered = sum(min(c, floor_n) for c in counts)
    saving = covered * rate - floor_n * len(counts) * rate * (1 - d)
    below = sorted(
        {
            Window.containing((start + timedelta(hours=first + i)).date()).label
            for i, c in enumerate(counts)
            if c < floor_n
        }
    )
    return {
        "resource_id": "AWS/us-east-1/p4d",
        "status": "recommended",
        "hours": len(counts),
        "floor_instances": floor_n,
        "floor_gpus": floor_n * 8,
        "on_demand_rate": float(rate),
        "discount": float(d),
        "discount_source": "catalogue",
        "commitment_per_hour": float(quantize(floor_n * rate * (1 - d))),
        "weekly_saving": float(quantize(saving * HOURS_PER_WEEK / len(counts))),
        "risk_weeks": below,
        "basis": "the 8 on-demand p4d.24xlarge hosts (one launched in the second week of a longer demo) billed "
        "every hour: floor = the 10 % quantile of hosts billed per hour over the last 4 weeks; a 1-year "
        f"commitment at the catalogue's {float(d):.0%} off ${rate} an hour; the p5s are under the Savings Plan "
        "already and the p4de Reserved Instance has no usage, so neither gets commitment advice",
    }


def _spot_advice(jobs: list[Job], objects: dict[str, Any], start: datetime, weeks: int) -> dict[str, Any]:
    """ADV002's two planted job types on the p5 hosts: llm-pretrain-train writes a checkpoint every 6 hours
    (spot-safe), llm-pretrain-dev (the dev box's working days) never does (spot-unsafe). A run counts when it
    ran in the lookback; it has a usable checkpoint when one of its run's steps was written while it ran."""
    end = start + timedelta(weeks=weeks)
    lookback_start = end - timedelta(weeks=ADVICE_LOOKBACK_WEEKS)
    written: dict[str, list[datetime]] = {}
    for key, _size, when, _etag in objects["acme-ckpt"]:
        written.setdefault(key.split("/")[1], []).append(when)
    out = {}
    for label, job_type in (("safe", "llm-pretrain-train"), ("unsafe", "llm-pretrain-dev")):
        runs = [
            j
            for j in jobs
            if re.fullmatch(rf"{job_type}-\d+", j.name)
            and job_times(j, start)[0] < end
            and job_times(j, start)[1] > lookback_start
        ]
        with_ckpt = [
            j
            for j in runs
            if any(job_times(j, start)[0] < w < job_times(j, start)[1] for w in written.get(j.name, []))
        ]
        share = len(with_ckpt) / len(runs)
        out[label] = {
            "job_type": job_type,
            "resource_id": f"{job_type}@AWS/us-east-1/p5",
            "status": "recommended" if share >= MIN_CHECKPOINTED_SHARE else "not_recommended",
            "runs": len(runs),
            "runs_with_checkpoints": len(with_ckpt),
            "spot_discount": float(_catalogue_discount("p5", "spot")),
        }
    out["safe"]["basis"] = (
        "nlp's pre-training runs on the p5 hosts write a checkpoint every 6 hours: an interruption loses about 3 "
        "hours plus the restart, far less than the spot discount saves"
    )
    out["unsafe"]["basis"] = (
        "the nlp dev box's 11-hour working days write no checkpoint: never recommended for spot, whatever the discount"
    )
    return out


def _cadence_advice(cadence: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """ADV003's two planted job types on the contract cluster (modelled.expected_cadence), rounded once."""
    notes = {
        "frequent_saves": "rent-h100-02's pre-training saves every 10 minutes (40 s a save) and one run in the "
        "week is preempted: the write stalls outweigh the little work a failure loses, so it should save less often",
        "rare_saves": "rent-h100-01's fine-tuning saves every 12 hours (300 s a save) and every other run is "
        "preempted: each failure loses about 6 hours of 8 GPUs, so it should save more often",
    }
    out: dict[str, Any] = {
        "formula": "MTBF = job-hours / preempted runs; optimum = sqrt(2 x write seconds / 3600 x MTBF) (Young/Daly); "
        "a week (x 168 / hours from the first run's start to the week's end): lost work = failures a week x "
        "(interval / 2 + 15 min restart) x 8 GPUs x 2.10 a GPU-hour (the contract), write stalls = job-hours a week / "
        "interval x write seconds / 3600 x 8 x 2.10, no checkpoint objects stored; weekly_saving = (lost work + "
        "write stalls) now - at the optimum",
    }
    for label, c in cadence.items():
        out[label] = {
            "planted": notes[label],
            **{k: c[k] for k in ("resource_id", "status", "runs", "failures", "gpus")},
            **{
                k: float(round(c[k], 6))
                for k in (
                    "job_hours",
                    "mtbf_hours",
                    "write_seconds",
                    "interval_hours",
                    "optimum_hours",
                    "cost_per_gpu_hour",
                    "failures_per_week",
                )
            },  # fmt: skip
            **{
                k: float(quantize(c[k]))
                for k in (
                    "lost_work_now",
                    "write_stalls_now",
                    "lost_work_optimal",
                    "write_stalls_optimal",
                    "weekly_saving",
                )
            },  # fmt: skip
        }
    return out


def build_expected(hosts: list[Host], planner: Planner, notes: dict[str, Any], facts: dict[str, Any], objects: dict[str, Any],
              lines: list[dict[str, Any]], start: datetime, weeks: int, spike: tuple[int, str, Decimal], samples: int,
              starved_samples: dict[tuple[str, int, int], list[tuple[int, int]]], seed: int,
              last_week: str, modelled: dict[str, Any], logs: dict[int, dict[str, Any]],
              research_jobs: int, listings: list[datetime], growth: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """expected.json: the report week's spend (billed, and modelled apart) and every rule's planted
    amount, GPU001 and GPU004 per week, the training logs and the sizes of what was written. `modelled` is
    the research cluster's (modelled.expected_modelled): its hosts are priced by the config's `pricing:`
    entries, so their amounts join the rules' totals and never the billed spend."""
    rw = weeks - 1
    cloud_gpu001 = _gpu001_by_week(hosts, weeks)
    gpu001 = {w: {**cloud_gpu001[w], **modelled["idle_by_week"][w]} for w in range(weeks)}
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
    unused_commitment = Decimal(0)
    eu_reads, eu_reads_gb = Decimal(0), Decimal(0)
    untagged = Decimal(0)
    untagged_gpu = Decimal(0)
    team_mtd: dict[str, Decimal] = {}
    month_start = rw_end.replace(day=1) if rw_end.day > 1 else (rw_end - timedelta(days=1)).replace(day=1)
    log_storage = {g.arn: Decimal(0) for g in LOG_GROUPS}
    for line in lines:
        eff = Decimal(line["EffectiveCost"] or 0)
        part = eff * share_in(line, rw_start, rw_end)
        spend += part
        if line["ResourceId"] in log_storage:
            log_storage[line["ResourceId"]] += part
        if line["CommitmentDiscountStatus"] == "Unused":
            unused_commitment += part
        if line["x_UsageType"] == EU_READS_USAGE_TYPE:
            eu_reads += part
            eu_reads_gb += Decimal(line["ConsumedQuantity"]) * share_in(line, rw_start, rw_end)
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

    cloud_failed = [{**x, "basis": "bill"} for x in failed_in(rw)]
    failed = sorted([*cloud_failed, modelled["crash"]], key=lambda x: (-x["waste"], x["job_id"]))
    gpu004_by_week = {
        week_labels[w]: sum((x["waste"] for x in failed_in(w)), Decimal(0))
        + (modelled["crash"]["waste"] if w == rw else 0)
        for w in range(weeks)
    }
    crash = next(j for j in planner.jobs if j.job_id == notes["crash_job"])
    [crash_failed] = [x for x in cloud_failed if x["job_id"] == crash.job_id]
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
        return float(quantize(x))

    # STO005: a log group past a 30-day retention is priced from its storage lines: its daily ingestion is the
    # growth of its stored bytes between the two listings a week apart, 30 days of which a retention would
    # keep; the rest of the week's storage cost is waste. Plus the scratch bucket's old event files and traces.
    prev_at, last_at = listings
    log_findings = []
    for g in LOG_GROUPS:
        if g.retention_days is not None and g.retention_days <= 30:
            continue
        stored, before = g.stored_bytes(last_at, rw_end), g.stored_bytes(prev_at, rw_end)
        daily = Decimal(stored - before) / (Decimal((last_at - prev_at).total_seconds()) / 86400)
        excess = max(Decimal(stored) - 30 * daily, Decimal(0))
        log_findings.append(
            {
                "resource_id": g.arn,
                "log_group": g.name,
                "stored_bytes": stored,
                "daily_ingested_bytes": int(daily),
                "excess_bytes": int(excess),
                "storage_cost": money(log_storage[g.arn]),
                "waste_exact": log_storage[g.arn] * excess / stored,
            }
        )
    old_logs = [
        o
        for o in objects["acme-scratch"]
        if o[0].startswith("tensorboard/") and o[2] <= rw_end - timedelta(days=30)
    ]
    old_log_bytes = sum(o[1] for o in old_logs)
    sto005_files = Decimal(old_log_bytes) * week_cost
    # the Thanos blocks whose files were all written more than 30 days before the week's end (each block's
    # files are written minutes apart, so a block is old when its last file is)
    blocks: dict[str, list[tuple[str, int, datetime, str]]] = {}
    for o in objects["acme-scratch"]:
        if o[0].startswith("thanos/"):
            blocks.setdefault(o[0].split("/")[1], []).append(o)
    old_blocks = {
        b: files for b, files in blocks.items() if max(f[2] for f in files) <= rw_end - timedelta(days=30)
    }
    old_block_bytes = sum(f[1] for files in old_blocks.values() for f in files)
    sto005_blocks = Decimal(old_block_bytes) * week_cost
    sto005 = sum((x["waste_exact"] for x in log_findings), Decimal(0)) + sto005_files + sto005_blocks

    # NET001: the cloud jobs (all in us-east-1) that ran in the report week are the EU copy's readers
    readers = sorted(
        {
            j.team
            for j in planner.jobs
            if job_times(j, start)[0] < rw_end and job_times(j, start)[1] > rw_start
        }
    )

    # COST004: the growth bucket's monthly growth (a straight line through its two inventories, scaled to
    # 30.44 days) x the STANDARD price its bucket has (the config's fallback: the bucket is not on the bill)
    span = Decimal((growth["newest_at"].date() - growth["first_at"].date()).days)
    monthly_growth = Decimal(growth["newest_bytes"] - growth["first_bytes"]) * DAYS_PER_MONTH / span
    growth_pct = 100 * monthly_growth / growth["first_bytes"]
    growth_cost = monthly_growth / GIB * S3_STANDARD
    allowed = Decimal(growth["first_bytes"]) * Decimal(GROWTH_BUDGET.rstrip("%")) / 100

    gpu001_rw = gpu001[rw]
    low = modelled["low_mfu"]
    return {
        "company": "Acme AI (demo)",
        "seed": seed,
        "weeks": week_labels,
        "report_week": {
            "week": last_week,
            "spend": money(spend),
            "currency": "USD",
            "modelled_spend": {
                "owned": money(modelled["spend"]["owned"]),
                "contract": money(modelled["spend"]["contract"]),
                "by_host": {k: money(v) for k, v in sorted(modelled["spend_by_host"].items())},
                "hours_by_host": dict(sorted(modelled["hours_by_host"].items())),
                "basis": "the research team's hosts no bill lists, priced by the demo config's pricing: entries "
                "for every hour of the week: dgx-01/02 owned (320,000 USD over 4 years + the GPUs' measured "
                "watts x 1.5 host overhead x PUE 1.3 x 0.11 USD/kWh + 900 USD a month), rent-h100-01/02 and the hot "
                "spares rent-spare-01..03 on contract (2.10 USD per GPU-hour x 8 GPUs); and the scaling-test pool "
                f"scale-h100-01..08 for the 24 hours of its rental day only, on its own contract ({SCALE_RATE} USD "
                "per GPU-hour x 8 GPUs)",
            },
            "rules": {
                "GPU001": {
                    "name": "idle-gpu-instance",
                    "waste": money(sum(gpu001_rw.values(), Decimal(0))),
                    "by_host": {k: money(v) for k, v in sorted(gpu001_rw.items())},
                    "by_basis": {
                        "bill": money(sum(cloud_gpu001[rw].values(), Decimal(0))),
                        "owned": money(sum(modelled["idle_by_week"][rw].values(), Decimal(0))),
                    },
                    "owned_idle": {
                        **modelled["idle"],
                        "waste": money(
                            modelled["idle_by_week"][rw].get(modelled["idle"]["host"], Decimal(0))
                        ),
                    },
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
                "GPU005": {
                    "name": "low-efficiency-job",
                    "job_id": low["job_id"],
                    "host": low["host"],
                    "pricing_basis": "contract",
                    "mfu": float(round(low["mfu"], 6)),
                    "floor": float(low["floor"]),
                    "gpu_hours": float(round(low["gpu_hours"], 6)),
                    "gpu_cost": money(low["gpu_cost"]),
                    "waste": money(low["waste"]),
                    "basis": "the job on rent-h100-02 whose training log gives a median MFU of "
                    f"{float(low['mfu']):.4f} (6 x 6.7e9 x tokens per 10-minute interval / 600 s / (8 x 989.4 "
                    "TFLOP/s)) with its GPUs busy (no other rule prices them): its contract GPU cost x "
                    "(1 - MFU / 0.25); every other logged job measures about 0.45",
                },
                "COM001": {
                    "name": "unused-commitment",
                    "commitment": RI_ARN,
                    "utilisation": 0.0,
                    "waste": money(unused_commitment),
                    "basis": "the p4de.24xlarge Reserved Instance's 168 hours in the week, every one unused, at its "
                    f"amortised ${RI_HOURLY} an hour (FOCUS lines with CommitmentDiscountStatus Unused)",
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
                    "GPU001's), the crash on the contract cluster's rent-h100-01 (no checkpoint: all its GPU time, "
                    "at 2.10 USD per GPU-hour) "
                    "and the training jobs that failed at random (~6 % of those longer than 8 h); "
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
                "STO005": {
                    "name": "log-retention",
                    "waste": money(sto005),
                    "log_groups": [
                        {k: v for k, v in x.items() if k != "waste_exact"}
                        | {"waste": money(x["waste_exact"])}
                        for x in log_findings
                    ],
                    "log_files": {
                        "resource_id": "s3://acme-scratch/",
                        "objects": len(old_logs),
                        "bytes": old_log_bytes,
                        "waste": money(sto005_files),
                    },
                    "metric_blocks": {
                        "resource_id": "s3://acme-scratch/thanos/",
                        "blocks": len(old_blocks),
                        "newer_blocks": len(blocks) - len(old_blocks),
                        "objects": sum(len(files) for files in old_blocks.values()),
                        "bytes": old_block_bytes,
                        "oldest_block": min(old_blocks),
                        "waste": money(sto005_blocks),
                    },
                    "basis": "the SageMaker training jobs' log group never expires: the week's storage cost of its "
                    "lines x (stored bytes - 30 days x its growth a day between the two listings) / stored bytes; "
                    "the EKS group keeps 14 days (no finding); plus three September runs' TensorBoard event files "
                    "and profiler traces, and three Thanos blocks last written more than 30 days ago, in acme-scratch x "
                    "$0.023 per GiB-month x 7 / 30.44",
                },
                "NET001": {
                    "name": "cross-region-transfer",
                    "resource_id": "acme-datasets-eu -> us-east-1",
                    "source_region": "eu-west-1",
                    "destination_region": "us-east-1",
                    "usage_type": EU_READS_USAGE_TYPE,
                    "gb": float(eu_reads_gb),
                    "local_copies": [
                        "s3://acme-datasets/datasets/laion-400m-subset/",
                        "s3://acme-scratch/datasets/laion-copy/",
                    ],
                    "reader_teams": readers,
                    "waste": money(eu_reads),
                    "basis": f"the jobs in us-east-1 read the Ireland copy of laion although the us-east-1 copy holds "
                    f"the same bytes: every GB of the week's {EU_READS_USAGE_TYPE} lines (at "
                    f"${INTER_REGION_PER_GB} a GB) was avoidable; STO002 prices the Ireland copy's storage, NET001 "
                    "its transfer",
                },
                "COST001": {
                    "name": "unattributed-spend",
                    "spend": money(untagged),
                    "gpu_spend": money(untagged_gpu),
                    "note": "gpu-a100-08 has no team tag (suggested owner: speech, from its Slurm jobs); acme-scratch, the "
                    "support fee, the Savings Plan fee and the p4de Reserved Instance are untagged",
                },
                "COST002": {
                    "name": "budget-overrun",
                    "month_to_date_by_team": {k: money(v) for k, v in sorted(team_mtd.items())},
                    "budgets": {"nlp": 260000, "vision": 110000, "speech": 60000},
                },
                "COST004": {
                    "name": "storage-growth",
                    "resource_id": f"storage-growth:s3://{GROWTH_BUCKET}/",
                    "budget": GROWTH_BUDGET,
                    "first_date": growth["first_at"].date().isoformat(),
                    "last_date": growth["newest_at"].date().isoformat(),
                    "bytes_first": growth["first_bytes"],
                    "bytes_last": growth["newest_bytes"],
                    "growth_pct_per_month": float(round(growth_pct, 2)),
                    "monthly_growth_gib": float(round(monthly_growth / GIB, 3)),
                    "amount_at_stake": money(growth_cost),
                    "over_budget_monthly_cost": money((monthly_growth - allowed) / GIB * S3_STANDARD),
                    "grew_most": [
                        f"s3://{GROWTH_BUCKET}/vit-g/run-07/",
                        f"s3://{GROWTH_BUCKET}/vit-h/run-01/",
                    ],
                    "basis": "attention, never waste: (bytes at the last inventory - bytes at the first) x 30.44 / "
                    "28 days = the monthly growth, x $0.023 per GiB-month (the config's STANDARD price): what "
                    "the growth adds to the storage bill each month, against a budget of 10 % of the first "
                    "inventory's bytes a month",
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
        "advice": {
            "note": "advice, never waste or spend: the report's Actions and advice section (docs/advice.md)",
            "commitment": [_commitment_advice(hosts, start, weeks)],
            "spot": _spot_advice(planner.jobs, objects, start, weeks),
            "checkpoint": _cadence_advice(modelled["cadence"]),
        },
        "gpu001_by_week": {week_labels[w]: money(sum(v.values(), Decimal(0))) for w, v in gpu001.items()},
        "gpu004_by_week": {label: money(v) for label, v in gpu004_by_week.items()},
        "train_logs": {
            "jobs": len(logs),
            "lines": sum(x["lines"] for x in logs.values()),
            "unmatched_lines": STRAY_LINES,
            "median_mfu_by_job": {
                str(k): float(round(v["mfu"], 6)) for k, v in sorted(logs.items()) if v["mfu"]
            },
        },
        "sizes": {
            "gpu_hosts": len(hosts) + len(modelled["spend_by_host"]),
            "billing_lines": len(lines),
            "gpu_samples": samples,
            "jobs": len(planner.jobs) + research_jobs,
            "storage_objects": sum(len(v) for v in objects.values()),
        },
    }
