"""ADV002 spot advice: for recurring job types, the expected interruption loss (work since the last
checkpoint plus the restart, times an interruption rate) against the spot discount. A job type whose runs
do not checkpoint is never recommended. Formulas and sources: docs/advice.md."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from decimal import Decimal
from typing import Any

import duckdb
from pydantic import Field

from pipelines.advice.contract import AdviceParams, Advisor, amount, job_type_item
from pipelines.advice.discounts import Discount, catalogue, from_catalogue, from_config
from pipelines.warehouse import rows, sql_text
from rules import Window

HOURS_PER_WEEK = 168


class SpotParams(AdviceParams):
    lookback_weeks: int = Field(4, ge=1, le=52, description="Weeks of job runs a job type is judged on.")
    min_runs: int = Field(3, ge=1, description="Runs in the lookback that make a job type recurring.")
    interruption_rate: float = Field(
        0.005,
        ge=0,
        le=1,
        description="Expected spot interruptions per instance-hour (0.005: one per 200 instance-hours); any "
        "node's interruption stops the whole job.",
    )
    restart_minutes: float = Field(
        15.0,
        ge=0,
        description="Minutes from an interruption until the job trains again (new instance, load).",
    )
    min_checkpointed_share: float = Field(
        0.8,
        ge=0,
        le=1,
        description="Share of a job type's runs that must have written a checkpoint while running for its "
        "checkpoints to count as usable.",
    )
    spot_discounts: dict[str, float] = Field(
        default_factory=dict,
        description="Spot discounts off on-demand (0-1) by `<family>` or `<family>/<region>`; they come before "
        "the catalogue's.",
    )


def advise(con: duckdb.DuckDBPyConnection, window: Window, params: SpotParams) -> list[dict[str, Any]]:
    lookback_start = window.end - timedelta(weeks=params.lookback_weeks)
    jobs = rows(
        con, sql_text("advice", "spot_jobs"), {"lookback_start": lookback_start, "window_end": window.end}
    )
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for j in jobs:
        key = (j["job_type"], j["provider"], j["region_id"], j["instance_family"], j["currency"])
        groups.setdefault(key, []).append(j)
    table = catalogue(con) if groups else []
    out = []
    for key, runs in sorted(groups.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        if len(runs) >= params.min_runs:
            out.append(_item(key, runs, params, table, window, lookback_start))
    return out


def _item(
    key: tuple[Any, ...],
    runs: list[dict[str, Any]],
    params: SpotParams,
    table: list[dict[str, Any]],
    window: Window,
    lookback_start: Any,
) -> dict[str, Any]:
    job_type, provider, region, family, cur = key
    restart_h = params.restart_minutes / 60
    lam = params.interruption_rate
    gpu_hours = sum(float(j["gpu_hours"]) for j in runs)
    cost_now = sum(float(j["cost"] or 0) for j in runs)
    runtime_h = sum(float(j["runtime_h"]) for j in runs)
    node_hours = sum(float(j["runtime_h"]) * int(j["nodes"]) for j in runs)
    checkpointed = [j for j in runs if j["checkpoints"] > 0]
    share = len(checkpointed) / len(runs)
    # expected hours lost since the last checkpoint at a random moment, over all the type's running time
    loss_h = sum(float(j["expected_loss_h"] or 0) * float(j["runtime_h"]) for j in runs) / runtime_h
    # interruptions: rate x instance-hours; each loses the work since the last checkpoint plus the restart,
    # on all of the job's GPUs
    interruptions = lam * node_hours
    rework_gpu_hours = sum(
        lam * float(j["runtime_h"]) * int(j["nodes"]) * (float(j["expected_loss_h"] or 0) + restart_h)
        * (float(j["gpu_hours"]) / float(j["runtime_h"]))
        for j in runs
    )  # fmt: skip
    rate = runs[0]["list_per_gpu_hour"]
    discount: Discount | None = from_config(params.spot_discounts, family, region) or from_catalogue(
        table, provider, family, region, "spot"
    )
    span_start = max(lookback_start, min(j["started_at"] for j in runs))
    span_h = max((window.end - span_start).total_seconds() / 3600, 1.0)
    per_week = HOURS_PER_WEEK / span_h
    spot_cost = (gpu_hours + rework_gpu_hours) * rate * (1 - discount.value) if rate and discount else None
    loss_cost = rework_gpu_hours * rate * (1 - discount.value) if rate and discount else None
    saving = cost_now - spot_cost if spot_cost is not None else None
    weekly = saving * per_week if saving is not None else None
    where = f"{job_type} on {family} in {region or 'an unnamed region'}"
    team = Counter(j["team"] for j in runs).most_common(1)[0][0]
    project = Counter(j["project"] for j in runs).most_common(1)[0][0]
    no_ckpt = len(runs) - len(checkpointed)
    if share < params.min_checkpointed_share:
        status = "not_recommended"
        reason = (
            f"{where}: {no_ckpt} of {len(runs)} runs wrote no checkpoint while running, so an interruption "
            f"loses all the work since the start ({loss_h:.1f} h on average, on every GPU of the job): never "
            "moved to spot until it checkpoints."
        )
    elif discount is None or not rate:
        status = "insufficient_data"
        reason = f"{where}: no spot discount or on-demand price is known for {family} (set advice.spot.spot_discounts)."
    elif saving is None or saving <= 0:
        status = "not_recommended"
        reason = (
            f"{where}: the expected interruption loss ({rework_gpu_hours:,.1f} GPU-hours) outweighs the "
            f"{100 * discount.value:.0f}% spot discount."
        )
    else:
        status = "recommended"
        reason = (
            f"{where}: {len(runs)} runs, {len(checkpointed)} checkpointing (an interruption loses {loss_h:.1f} h "
            f"since the last checkpoint + {params.restart_minutes:g} min restart); at {lam:g} interruptions per "
            f"instance-hour spot loses {rework_gpu_hours:,.1f} of {gpu_hours:,.1f} GPU-hours and, "
            f"{100 * discount.value:.0f}% off on-demand, saves {cur} {weekly:,.2f} a week."
        )
    evidence = {
        "job_type": job_type,
        "instance_family": family,
        "runs": len(runs),
        "runs_with_checkpoints": len(checkpointed),
        "checkpointed_share": round(share, 6),
        "job_ids": [j["job_id"] for j in runs][:50],
        "gpu_hours": round(gpu_hours, 6),
        "runtime_hours": round(runtime_h, 6),
        "instance_hours": round(node_hours, 6),
        "expected_loss_hours": round(loss_h, 6),
        "longest_gap_hours": round(max(float(j["longest_gap_h"] or 0) for j in runs), 6),
        "restart_hours": round(restart_h, 6),
        "interruption_rate": lam,
        "expected_interruptions": round(interruptions, 6),
        "rework_gpu_hours": round(rework_gpu_hours, 6),
        "cost_now": round(cost_now, 6),
        "list_per_gpu_hour": round(rate, 6) if rate else None,
        "spot_discount": discount.value if discount else None,
        "discount_source": discount.source if discount else None,
        "discount_detail": discount.detail if discount else None,
        "discount_url": discount.url if discount else None,
        "spot_cost": round(spot_cost, 6) if spot_cost is not None else None,
        "interruption_loss_cost": round(loss_cost, 6) if loss_cost is not None else None,
        "lookback_saving": round(saving, 6) if saving is not None else None,
        "weekly_saving": round(weekly, 6) if weekly is not None else None,
        "span_hours": round(span_h, 6),
        "commitment_share": round(float(runs[0]["commitment_share"]), 6),
    }
    committed = evidence["commitment_share"]
    source = (discount.detail + (f", {discount.url}" if discount.url else "")) if discount else "none known"
    return job_type_item(
        job_type,
        (provider, region, family),
        team=team,
        project=project,
        status=status,
        reason=reason,
        evidence=evidence,
        saving=amount(weekly) if status == "recommended" and weekly is not None else Decimal(0),
        currency=cur,
        basis=(
            "loss per interruption = hours since the last checkpoint (sum of squared gaps between start, "
            "checkpoints and end / 2 x runtime) + restart; rework GPU-hours = interruption rate x instance-hours "
            "x loss x the job's GPUs; saving a week = (GPU cost now - (GPU-hours + rework) x on-demand price per "
            "GPU-hour x (1 - spot discount)) x 168 / hours spanned; runs without checkpoints are never "
            "recommended; spot discount: " + source
        ),
        risk=(
            f"{interruptions:,.1f} interruption(s) expected at {lam:g} per instance-hour; a longer gap between "
            f"checkpoints (the longest: {evidence['longest_gap_hours']:.1f} h) or a higher interruption rate "
            "raises the loss"
            + (
                f"; {100 * committed:.0f}% of {family}'s hours in {region} run under a commitment: moving them "
                "to spot leaves it paid and unused until it ends (COM001), so the saving starts at its term"
                if committed > 0
                else ""
            )
        ),
    )


ADVISOR = Advisor(
    id="ADV002",
    name="spot-advice",
    kind="spot",
    summary="Recurring job types whose checkpoints make spot or preemptible instances pay, and those they do not.",
    params=SpotParams,
    requires=("jobs_enriched", "resources", "job_checkpoint_writes", "gpu_purchase_hours"),
    advise=advise,
)
