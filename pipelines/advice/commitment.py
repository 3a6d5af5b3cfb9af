"""ADV001 commitment advice: the steady floor of on-demand GPU instances per family and region, the
commitment it supports, its break-even utilisation and the expected saving; the weeks below the floor are
the risk. Formulas and sources: docs/advice.md."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import duckdb
from pydantic import Field

from pipelines.advice.contract import AdviceParams, Advisor, amount
from pipelines.advice.discounts import Discount, catalogue, from_catalogue, from_config
from pipelines.warehouse import rows, sql_text
from rules import Window

HOURS_PER_WEEK = 168


class CommitmentParams(AdviceParams):
    lookback_weeks: int = Field(4, ge=1, le=52, description="Weeks of billed usage the floor is read from.")
    percentile: float = Field(
        0.10, ge=0, le=0.5, description="Quantile of the hourly on-demand instances that is the steady floor."
    )
    min_hours: int = Field(
        168,
        ge=1,
        description="Hours of billing data needed in the lookback before advising (else insufficient_data).",
    )
    discounts: dict[str, float] = Field(
        default_factory=dict,
        description="1-year commitment discounts off on-demand (0-1) by `<family>` or `<family>/<region>`; "
        "they come before the bill's and the catalogue's.",
    )


def _label(d: date) -> str:
    return Window.containing(d).label


def advise(con: duckdb.DuckDBPyConnection, window: Window, params: CommitmentParams) -> list[dict[str, Any]]:
    lookback_start: datetime = window.end - timedelta(weeks=params.lookback_weeks)
    found = rows(
        con,
        sql_text("advice", "commitment_floor"),
        {"lookback_start": lookback_start, "window_end": window.end, "percentile": params.percentile},
    )
    table = catalogue(con) if found else []
    return [_item(r, params, table) for r in found]


def _discount(r: dict[str, Any], params: CommitmentParams, table: list[dict[str, Any]]) -> Discount | None:
    family, region = r["instance_family"], r["region_id"]
    configured = from_config(params.discounts, family, region)
    if configured is not None:
        return configured
    if r["bill_discount"] is not None and r["bill_discount"] > 0:
        return Discount(
            r["bill_discount"],
            "bill",
            f"the bill's {r['bill_commitment_type'] or 'commitment'} on {family} in {region}: 1 - effective / list "
            f"cost of {r['bill_committed_instance_hours']:,.0f} committed instance-hours in the lookback",
        )
    return from_catalogue(table, r["provider"], family, region, "commitment_1yr")


def _item(r: dict[str, Any], params: CommitmentParams, table: list[dict[str, Any]]) -> dict[str, Any]:
    family, region, cur = r["instance_family"], r["region_id"], r["currency"]
    hours, floor_n, rate = int(r["hours"]), int(r["floor_instances"]), float(r["on_demand_rate"])
    gpus = int(r["gpus_per_instance"] or 0)
    discount = _discount(r, params, table)
    d = discount.value if discount else None
    covered = sum(float(w["covered_instance_hours"]) for w in r["weeks"])
    committed_hours = floor_n * hours
    weeks = []
    for w in r["weeks"]:
        unused = floor_n * int(w["hours"]) - float(w["covered_instance_hours"])
        weeks.append(
            {
                "week": _label(w["week_start"]),
                "hours": int(w["hours"]),
                "instance_hours": float(w["instance_hours"]),
                "hours_below_floor": int(w["hours_below_floor"]),
                "unused_instance_hours": round(unused, 6),
                "unused_commitment_cost": round(unused * rate * (1 - d), 2) if d is not None else None,
            }
        )
    risk_weeks = [w for w in weeks if w["hours_below_floor"] > 0]
    per_hour = floor_n * rate * (1 - d) if d is not None else None
    saving = (covered * rate - committed_hours * rate * (1 - d)) if d is not None else None
    weekly = saving * HOURS_PER_WEEK / hours if saving is not None and hours else None
    where = f"{family} in {region or 'an unnamed region'}"
    pct = 100 * (1 - params.percentile)
    if hours < params.min_hours:
        status = "insufficient_data"
        reason = (
            f"{where}: only {hours} hours of billing data in the lookback ({params.min_hours} needed) to read a "
            "steady floor from."
        )
    elif d is None:
        status = "insufficient_data"
        reason = (
            f"{where}: a floor of {floor_n} on-demand instance(s), but no commitment discount is known: the bill "
            "shows none for this family and region and the catalogue has no row; set advice.commitment.discounts."
        )
    elif floor_n < 1:
        status = "not_recommended"
        reason = (
            f"{where}: on-demand usage fell to {r['floor_quantile']:g} instances in {100 * params.percentile:g}% of "
            f"the last {hours} hours: no whole instance ran steadily enough to commit to."
        )
    elif saving is None or saving <= 0:
        status = "not_recommended"
        reason = (
            f"{where}: a commitment for {floor_n} instance(s) would have cost more than on demand over the last "
            f"{hours} hours."
        )
    else:
        status = "recommended"
        reason = (
            f"{where} ran at least {floor_n} on-demand instance(s) ({floor_n * gpus} GPUs) in {pct:g}% of the last "
            f"{hours} hours: a 1-year commitment for {floor_n} instance(s) ({cur} {per_hour:,.2f} an hour, "
            f"{100 * d:.0f}% off {cur} {rate:,.2f}) breaks even at {100 * (1 - d):.0f}% utilisation, would have been "
            f"{100 * covered / committed_hours:.1f}% used and saves {cur} {weekly:,.2f} a week; "
            + (
                f"{len(risk_weeks)} week(s) fell below the floor."
                if risk_weeks
                else "no week fell below the floor."
            )
        )
    if risk_weeks and d is not None:
        risk = "weeks below the floor: " + "; ".join(
            f"{w['week']} ({w['hours_below_floor']} h below, {cur} {w['unused_commitment_cost']:,.2f} of the "
            "commitment unused)"
            for w in risk_weeks
        )
    else:
        risk = (
            f"no week of the {hours}-hour lookback fell below the floor; the commitment runs a year, longer than "
            "the lookback shows"
        )
    evidence = {
        "instance_family": family,
        "instance_types": list(r["instance_types"]),
        "gpus_per_instance": gpus,
        "hours": hours,
        "first_hour": r["first_hour"],
        "end_hour": r["end_hour"],
        "percentile": params.percentile,
        "floor_instances": floor_n,
        "floor_gpus": floor_n * gpus,
        "min_instances": float(r["min_instances"]),
        "mean_instances": round(float(r["mean_instances"]), 6),
        "max_instances": float(r["max_instances"]),
        "on_demand_rate": round(rate, 6),
        "discount": d,
        "discount_source": discount.source if discount else None,
        "discount_detail": discount.detail if discount else None,
        "discount_url": discount.url if discount else None,
        "commitment_per_hour": round(per_hour, 6) if per_hour is not None else None,
        "break_even_utilisation": round(1 - d, 6) if d is not None else None,
        "utilisation": round(covered / committed_hours, 6) if committed_hours else None,
        "covered_instance_hours": covered,
        "lookback_saving": round(saving, 6) if saving is not None else None,
        "weekly_saving": round(weekly, 6) if weekly is not None else None,
        "weeks": weeks,
        "risk_weeks": [w["week"] for w in risk_weeks],
    }
    source = (
        f"{discount.detail}" + (f", {discount.url}" if discount and discount.url else "")
        if discount
        else "none known"
    )
    return {
        "resource_id": f"{r['provider']}/{region or 'no-region'}/{family}",
        "resource_type": "instance family",
        "provider": r["provider"],
        "account_id": None,
        "region_id": region,
        "team": None,
        "project": None,
        "owner": None,
        "job_id": None,
        "status": status,
        "reason": reason,
        "evidence": evidence,
        "estimated_saving": amount(weekly) if status == "recommended" and weekly is not None else Decimal(0),
        "currency": cur,
        "basis": (
            f"floor = the {params.percentile:g} quantile of on-demand instances per hour over the lookback, whole "
            "instances; saving a week = (instance-hours the floor covers x on-demand rate - floor x hours x "
            "on-demand rate x (1 - discount)) x 168 / hours; break-even utilisation = 1 - discount; discount: "
            + source
        ),
        "risk": risk,
    }


ADVISOR = Advisor(
    id="ADV001",
    name="commitment-advice",
    kind="commitment",
    summary="The steady floor of on-demand GPU instances per family and region, and the commitment it supports.",
    params=CommitmentParams,
    requires=("gpu_purchase_hours",),
    advise=advise,
)
