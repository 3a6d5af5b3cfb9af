"""ADV003 checkpoint-cadence advice: for recurring job types, the measured failure rate (MTBF), checkpoint
write time δ and save interval against the Young/Daly optimum τ = √(2·δ·MTBF), and the money on both sides
a week: work lost to failures, training stalled by saves, and the checkpoints kept. Formulas and sources:
docs/advice.md."""

from __future__ import annotations

import math
from collections import Counter
from datetime import timedelta
from typing import Any

import duckdb
from pydantic import Field

from pipelines.advice.contract import AdviceParams, Advisor, amount, job_type_item
from pipelines.units import DAYS_PER_MONTH
from pipelines.warehouse import rows, sql_text
from rules import Window

HOURS_PER_WEEK = 168
CONFIDENCE = 0.95
# where δ comes from (sql/advice/checkpoint_write_time.sql's write_from)
WRITE_FROM = {"log": "train log save lines", "dip": "GPU utilisation dip at the checkpoint writes"}


class CadenceParams(AdviceParams):
    lookback_weeks: int = Field(4, ge=1, le=52, description="Weeks of job runs a job type is judged on.")
    min_runs: int = Field(3, ge=1, description="Runs in the lookback that make a job type recurring.")
    restart_minutes: float = Field(
        15.0,
        ge=0,
        description="Minutes from a failure until the job trains again (reschedule, load the checkpoint).",
    )
    min_weekly_saving: float = Field(
        25.0,
        ge=0,
        description="Weekly saving (billing currency) below which a cadence change is not recommended.",
    )
    dip_window_s: float | None = Field(
        None,
        gt=0,
        description="Seconds either side of a checkpoint object's write time searched for the utilisation dip "
        "(unset: 600, sql/advice/checkpoint_write_time.sql's, which the estimator reads too).",
    )
    dip_util_pct: float | None = Field(
        None,
        gt=0,
        le=100,
        description="GPU utilisation (%) below which a sample around a checkpoint write counts as stalled "
        "(unset: 20).",
    )


def poisson_interval(k: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact (Garwood) interval of a Poisson mean given `k` events: the means at which seeing at least
    `k` (lower), or at most `k` (upper), events has probability (1 - confidence) / 2."""
    tail = (1 - confidence) / 2

    def at_most(lam: float, n: int) -> float:
        if lam == 0:
            return 1.0
        return sum(math.exp(i * math.log(lam) - lam - math.lgamma(i + 1)) for i in range(n + 1))

    def solve(n: int, target: float) -> float:
        """The mean at which P(X <= n) = target (P(X <= n) falls as the mean rises)."""
        lo, hi = 0.0, n + 20 + 10 * math.sqrt(n + 1)
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if at_most(mid, n) > target else (lo, mid)
        return (lo + hi) / 2

    upper = solve(k, tail)  # P(X <= k) = tail
    lower = 0.0 if k == 0 else solve(k - 1, 1 - tail)  # P(X >= k) = tail
    return lower, upper


def young_daly_hours(delta_h: float, mtbf_h: float) -> float:
    """τ = √(2·δ·MTBF): the save interval that minimises the expected time lost to saves and to failures
    (Young 1974; Daly 2006's first-order optimum)."""
    return math.sqrt(2 * delta_h * mtbf_h)


def advise(con: duckdb.DuckDBPyConnection, window: Window, params: CadenceParams) -> list[dict[str, Any]]:
    lookback_start = window.end - timedelta(weeks=params.lookback_weeks)
    bounds = {"lookback_start": lookback_start, "window_end": window.end}
    runs = rows(con, sql_text("advice", "checkpoint_runs"), bounds)
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for j in runs:
        key = (j["job_type"], j["provider"], j["region_id"], j["instance_family"], j["currency"])
        groups.setdefault(key, []).append(j)
    if not groups:
        return []
    since = {"since": lookback_start, "until": window.end}
    failures = {
        r["job_type"]: r for r in rows(con, sql_text("advice", "job_failures"), since) if not r["all_types"]
    }
    dips = {"dip_window_s": params.dip_window_s, "dip_util_pct": params.dip_util_pct}
    writes = {
        r["job_type"]: r for r in rows(con, sql_text("advice", "checkpoint_write_time"), {**since, **dips})
    }
    out = []
    for key, group in sorted(groups.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        if len(group) >= params.min_runs:
            out.append(
                _item(key, group, failures.get(key[0]), writes.get(key[0]), params, window, lookback_start)
            )
    return out


def _interval(group: list[dict[str, Any]]) -> tuple[float | None, str | None, int]:
    """The current save interval in hours: the hours from the runs' starts to their last checkpoints over
    their checkpoints (a run starts from a checkpoint); where the times come from; how many intervals."""
    saving = [j for j in group if j["ckpts"] >= 1 and j["ckpt_span_h"]]
    gaps = sum(j["ckpts"] for j in saving)
    if not gaps:
        return None, None, 0
    source = Counter(j["ckpt_from"] for j in saving).most_common(1)[0][0]
    named = {"objects": "checkpoint objects' write times", "log": "train log save lines"}[source]
    return sum(float(j["ckpt_span_h"]) for j in saving) / gaps, named, gaps


def _item(
    key: tuple[Any, ...],
    group: list[dict[str, Any]],
    failed: dict[str, Any] | None,
    written: dict[str, Any] | None,
    params: CadenceParams,
    window: Window,
    lookback_start: Any,
) -> dict[str, Any]:
    job_type, provider, region, family, cur = key
    where = f"{job_type} on {family} in {region or 'an unnamed region'}"
    restart_h = params.restart_minutes / 60
    hours = sum(float(j["runtime_h"]) for j in group)
    gpu_hours = sum(float(j["gpu_hours"]) for j in group)
    cost = sum(float(j["cost"] or 0) for j in group)
    gpus = sum(float(j["gpus"]) * float(j["runtime_h"]) for j in group) / hours if hours else 0.0
    rate = cost / gpu_hours if gpu_hours else 0.0  # effective cost per GPU-hour
    span_start = max(lookback_start, min(j["started_at"] for j in group))
    span_h = max((window.end - span_start).total_seconds() / 3600, 1.0)
    per_week = HOURS_PER_WEEK / span_h
    hours_week = hours * per_week

    k = int(failed["failures"]) if failed else 0
    failure_hours = float(failed["job_hours"]) if failed else hours
    low, high = poisson_interval(k)
    mtbf = failure_hours / k if k else None
    mtbf_low = failure_hours / high  # the interval of the rate, turned over
    mtbf_high = failure_hours / low if low else None
    delta_s = float(written["write_s"]) if written and written["write_s"] is not None else None
    delta_from = WRITE_FROM.get(written["write_from"]) if written else None
    delta_n = (
        (written["log_saves"] if delta_from == WRITE_FROM["log"] else written["dip_writes"]) if written else 0
    )
    interval_h, interval_from, gaps = _interval(group)
    stored_month = float(group[0]["type_stored_monthly_cost"] or 0)
    storage_now = stored_month * 7 / float(DAYS_PER_MONTH)

    missing = []
    if not k:
        missing.append(
            f"no failure in {failure_hours:,.1f} job-hours, so no measured MTBF (at least "
            f"{mtbf_low:,.0f} h at {100 * CONFIDENCE:.0f}% confidence)"
        )
    if delta_s is None:
        missing.append(
            "no checkpoint write time: no train-log save line with a duration, and "
            + (
                f"no utilisation dip in the GPU telemetry around its {delta_n} checkpoint write(s)"
                if delta_n
                else "no GPU telemetry around the checkpoint objects' writes"
            )
        )
    if interval_h is None:
        missing.append(
            "no current interval: no run wrote a checkpoint while it ran (checkpoint objects under "
            "`checkpoints:` patterns, or save lines in its train log)"
        )
    if not rate:
        missing.append("no GPU cost for its runs")

    money: dict[str, float] = {}
    optimum_h = optimum_low = optimum_high = None
    if not missing:
        assert mtbf is not None and delta_s is not None and interval_h is not None
        delta_h = delta_s / 3600
        optimum_h = young_daly_hours(delta_h, mtbf)
        optimum_low = young_daly_hours(delta_h, mtbf_low)
        optimum_high = young_daly_hours(delta_h, mtbf_high) if mtbf_high else None
        failures_week = hours_week / mtbf

        def sides(tau: float, storage: float) -> dict[str, float]:
            lost = failures_week * (tau / 2 + restart_h) * gpus * rate
            stalls = hours_week / tau * delta_h * gpus * rate
            return {
                "lost_work": lost,
                "write_stalls": stalls,
                "storage": storage,
                "total": lost + stalls + storage,
            }

        now = sides(interval_h, storage_now)
        # keeping every save, the stored checkpoints scale with how often the job saves
        best = sides(optimum_h, storage_now * interval_h / optimum_h)
        money = {f"{k}_now": v for k, v in now.items()} | {f"{k}_optimal": v for k, v in best.items()}
        money["failures_per_week"] = failures_week
        money["saving"] = now["total"] - best["total"]

    saving = money.get("saving")
    if missing:
        status = "insufficient_data"
        reason = f"{where}: " + "; ".join(missing) + "."
    else:
        assert optimum_h is not None and interval_h is not None and saving is not None
        direction = "more often" if optimum_h < interval_h else "less often"
        figures = (
            f"{where}: saves every {_duration(interval_h)}; with a failure every {_duration(mtbf or 0)} of a run "
            f"({k} in {failure_hours:,.0f} job-hours) and {delta_s:,.0f} s to write a checkpoint, the optimum is "
            f"every {_duration(optimum_h)}"
        )
        if saving >= params.min_weekly_saving:
            status = "recommended"
            reason = f"{figures}: saving {direction} saves {cur} {saving:,.2f} a week."
        else:
            status = "not_recommended"
            reason = (
                f"{figures}: the change saves {cur} {saving:,.2f} a week, below the "
                f"{cur} {params.min_weekly_saving:,.2f} floor."
            )
    team = Counter(j["team"] for j in group).most_common(1)[0][0]
    project = Counter(j["project"] for j in group).most_common(1)[0][0]
    evidence: dict[str, Any] = {
        "job_type": job_type,
        "instance_family": family,
        "runs": len(group),
        "job_ids": [j["job_id"] for j in group][:50],
        "job_hours": round(hours, 6),
        "job_hours_per_week": round(hours_week, 6),
        "gpus": round(gpus, 6),
        "cost_per_gpu_hour": round(rate, 6),
        "failures": k,
        "failure_job_hours": round(failure_hours, 6),
        "mtbf_hours": round(mtbf, 6) if mtbf else None,
        "mtbf_hours_low": round(mtbf_low, 6),
        "mtbf_hours_high": round(mtbf_high, 6) if mtbf_high else None,
        "confidence": CONFIDENCE,
        "write_seconds": round(delta_s, 6) if delta_s is not None else None,
        "write_seconds_from": delta_from,
        "write_seconds_measurements": delta_n,
        "interval_hours": round(interval_h, 6) if interval_h is not None else None,
        "interval_from": interval_from,
        "interval_gaps": gaps,
        "optimum_hours": round(optimum_h, 6) if optimum_h is not None else None,
        "optimum_hours_low": round(optimum_low, 6) if optimum_low is not None else None,
        "optimum_hours_high": round(optimum_high, 6) if optimum_high is not None else None,
        "restart_hours": round(restart_h, 6),
        "stored_checkpoint_bytes": int(group[0]["type_stored_bytes"] or 0),
        "stored_monthly_cost": round(stored_month, 6),
        "span_hours": round(span_h, 6),
        **{k: round(v, 6) for k, v in money.items()},
    }
    weekly = saving if status == "recommended" and saving is not None else 0.0
    return job_type_item(
        job_type,
        (provider, region, family),
        team=team,
        project=project,
        status=status,
        reason=reason,
        evidence=evidence,
        saving=amount(weekly),
        currency=cur,
        basis=(
            "MTBF = the job type's job-hours / its failed runs (FAILED, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, "
            "PREEMPTED) in the lookback, with the exact Poisson interval of the count; δ = the train logs' save "
            "durations, else the GPU utilisation dip around each checkpoint object's write; interval = the runs' "
            "hours from their starts to their last checkpoints / their checkpoints; optimum τ = √(2·δ·MTBF) (Young/Daly); a week at interval τ: lost "
            "work = failures a week (job-hours a week / MTBF) x (τ/2 + restart) x GPUs x effective cost per "
            "GPU-hour, write stalls = job-hours a week / τ x δ x GPUs x cost, storage = the stored checkpoints' "
            "monthly cost x 7 / 30.44 (scaled by interval / τ at the optimum: every save kept); saving = now - "
            "optimum"
        ),
        risk=(
            "the failure count gives an MTBF "
            + (
                f"between {_duration(mtbf_low)} and {_duration(mtbf_high)}"
                if mtbf_high
                else f"of at least {_duration(mtbf_low)}"
            )
            + f" at {100 * CONFIDENCE:.0f}% confidence"
            + (
                f", so the optimum lies between {_duration(optimum_low)} and {_duration(optimum_high)}"
                if optimum_low is not None and optimum_high is not None
                else ""
            )
            + "; a retention policy that keeps only the last few checkpoints makes the storage side smaller"
        ),
    )


def _duration(hours: float) -> str:
    if hours < 1:
        return f"{hours * 60:,.0f} min"
    return f"{hours:,.1f} h"


ADVISOR = Advisor(
    id="ADV003",
    name="checkpoint-cadence",
    kind="checkpoint",
    summary="Recurring job types whose checkpoint interval is far from the Young/Daly optimum for their measured "
    "failure rate and write time, with the money on both sides.",
    params=CadenceParams,
    # job_mfu: the train logs' lines matched to their jobs (int_train_intervals) are refreshed with it
    requires=(
        "jobs_enriched",
        "resources",
        "storage_checkpoints",
        "job_checkpoint_writes",
        "job_mfu",
        "gpu_samples",
    ),
    advise=advise,
)
