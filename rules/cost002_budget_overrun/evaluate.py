"""COST002's computation, also used by the weekly report's budget burn (one definition of month-to-date)."""

from __future__ import annotations

import calendar
import json
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import duckdb

from rules._contract import QUERY_COLUMNS, RuleParams, Window

if TYPE_CHECKING:
    import polars as pl

DIMENSIONS = ("team", "project")


def month_of(window: Window) -> tuple[datetime, datetime, datetime]:
    """(month start, month end, as-of) for the month holding the window's last day; as-of <= window end."""
    last = window.end - timedelta(microseconds=1)
    start = datetime(last.year, last.month, 1)
    days = calendar.monthrange(last.year, last.month)[1]
    end = start + timedelta(days=days)
    return start, end, min(window.end, end)


def budget_status(
    con: duckdb.DuckDBPyConnection,
    window: Window,
    budgets: dict[str, dict[str, Decimal]],
    currency: str,
    trailing_weeks: int = 2,
) -> list[dict[str, Any]]:
    """Month-to-date spend and two forecasts to month end for every budget; one dict per budget.

    Spend is effective cost from `cost_hourly` in `currency` (spend in other currencies is reported in
    `other_currency_spend`, never added). The straight-line forecast scales month-to-date to the whole
    month; the trailing forecast adds the mean daily spend of the last `trailing_weeks` weeks (of billing
    data) for each remaining day.
    """
    month_start, month_end, as_of = month_of(window)
    trailing_start = as_of - timedelta(weeks=trailing_weeks)
    month_days = (month_end - month_start).days
    elapsed_days = (as_of - month_start).total_seconds() / 86400
    remaining_days = month_days - elapsed_days
    data_start = con.execute("select min(hour) from cost_hourly").fetchall()[0][0]
    out = []
    for dimension in DIMENSIONS:
        entries = budgets.get(dimension) or {}
        if not entries:
            continue
        names = sorted(entries)
        # dimension comes from our own constant tuple; values are bound
        sql = f"""
            select
                {dimension} as name,
                sum(effective_cost) filter (where billing_currency = $cur and hour >= $ms) as mtd,
                sum(effective_cost) filter (where billing_currency = $cur and hour >= $ts) as trailing,
                sum(effective_cost) filter (where billing_currency <> $cur and hour >= $ms) as other,
                arg_max(team, effective_cost) filter (where hour >= $ms) as top_team
            from cost_hourly
            where {dimension} in (select unnest($names)) and hour >= least($ms, $ts) and hour < $asof
            group by 1
        """  # noqa: S608 - identifiers only
        got = {
            r[0]: r
            for r in con.execute(
                sql, {"cur": currency, "ms": month_start, "ts": trailing_start, "asof": as_of, "names": names}
            ).fetchall()
        }
        for name in names:
            budget = Decimal(entries[name])
            _, mtd, trailing, other, top_team = got.get(name, (name, None, None, None, None))
            mtd = Decimal(mtd or 0)
            trailing = Decimal(trailing or 0)
            # the trailing rate covers only days with billing data (a warehouse younger than the span)
            span_start = max(trailing_start, data_start) if data_start is not None else trailing_start
            span_days = max((as_of - span_start).total_seconds() / 86400, 0)
            daily = trailing / Decimal(str(span_days)) if span_days > 0 else None
            straight = mtd * Decimal(month_days) / Decimal(str(elapsed_days)) if elapsed_days > 0 else None
            trailing_fc = mtd + daily * Decimal(str(remaining_days)) if daily is not None else None
            forecasts = [f for f in (straight, trailing_fc) if f is not None]
            out.append(
                {
                    "dimension": dimension,
                    "name": name,
                    "team": name if dimension == "team" else top_team,
                    "project": name if dimension == "project" else None,
                    "currency": currency,
                    "budget": budget,
                    "month": month_start.strftime("%Y-%m"),
                    "as_of": as_of,
                    "month_days": month_days,
                    "elapsed_days": round(elapsed_days, 2),
                    "month_to_date": mtd,
                    "burn_pct": (100 * mtd / budget) if budget > 0 else None,
                    "forecast_straight_line": straight,
                    "forecast_trailing": trailing_fc,
                    "forecast_max": max(forecasts) if forecasts else None,
                    "trailing_weeks": trailing_weeks,
                    "trailing_daily_rate": daily,
                    "other_currency_spend": Decimal(other or 0),
                    "has_data": data_start is not None and data_start < as_of,
                }
            )
    return out


def _money(x: Decimal | None) -> float | None:
    return None if x is None else float(round(x, 2))


def evaluate(con: duckdb.DuckDBPyConnection, window: Window, params: RuleParams) -> pl.DataFrame:
    import polars as pl

    p: Any = params
    records = []
    for b in budget_status(con, window, p.budgets, p.budget_currency, p.trailing_weeks):
        budget, mtd, fc = b["budget"], b["month_to_date"], b["forecast_max"]
        warn = budget * Decimal(str(p.warn_pct)) / 100
        both_over = all(
            f is not None and f > budget for f in (b["forecast_straight_line"], b["forecast_trailing"])
        )
        if not b["has_data"]:
            status = "insufficient_data"
        elif mtd > budget or both_over:
            status = "waste"
        elif fc is not None and fc >= warn:
            status = "suspect"
        else:
            continue
        at_stake = max(mtd, fc or Decimal(0)) - budget
        cur = b["currency"]
        month_name = b["as_of"].strftime("%B") if b["as_of"].day > 1 else b["month"]
        subject = f"{'Team' if b['dimension'] == 'team' else 'Project'} {b['name']}"
        if status == "insufficient_data":
            reason = (
                f"{subject} has a {cur} {budget:,.2f} budget for {b['month']} but the bill has no data yet."
            )
        else:
            state = "over" if mtd > budget else "forecast over" if both_over else "close to"
            fc_text = " and ".join(
                f"{cur} {v:,.2f} {how}"
                for v, how in (
                    (b["forecast_straight_line"], "straight-line"),
                    (b["forecast_trailing"], f"at the last {p.trailing_weeks} weeks' rate"),
                )
                if v is not None
            )
            reason = (
                f"{subject} spent {cur} {mtd:,.2f} in {month_name} to {b['as_of']:%Y-%m-%d} "
                f"({b['elapsed_days']:g} of {b['month_days']} days), {b['burn_pct']:.1f} % of its {cur} "
                f"{budget:,.2f} monthly budget ({state} budget); forecast to month end {fc_text}."
            )
        evidence = {
            "dimension": b["dimension"],
            "name": b["name"],
            "month": b["month"],
            "as_of": b["as_of"].strftime("%Y-%m-%dT%H:%M:%SZ"),
            "budget": _money(budget),
            "month_to_date": _money(mtd),
            "burn_pct": None if b["burn_pct"] is None else round(float(b["burn_pct"]), 1),
            "elapsed_days": b["elapsed_days"],
            "month_days": b["month_days"],
            "forecast_straight_line": _money(b["forecast_straight_line"]),
            "forecast_trailing": _money(b["forecast_trailing"]),
            "trailing_weeks": p.trailing_weeks,
            "trailing_daily_rate": _money(b["trailing_daily_rate"]),
            "overrun_to_date": _money(max(mtd - budget, Decimal(0))),
            "forecast_overrun": _money(max((fc or Decimal(0)) - budget, Decimal(0))),
            "amount_at_stake": _money(max(at_stake, Decimal(0))),
            "other_currency_spend": _money(b["other_currency_spend"]),
        }
        records.append(
            {
                "resource_id": f"budget:{b['dimension']}:{b['name']}",
                "resource_type": f"{b['dimension']} budget",
                "provider": None,
                "account_id": None,
                "region_id": None,
                "team": b["team"],
                "project": b["project"],
                "owner": None,
                "job_id": None,
                "status": status,
                "reason": reason,
                "evidence": json.dumps(evidence),
                "estimated_waste": (
                    Decimal(0) if status == "insufficient_data" else max(at_stake, Decimal(0))
                ).quantize(Decimal("0.000001")),
                "currency": cur,
                "waste_basis": "amount at stake, not waste: the larger of month-to-date spend and its forecast "
                "to month end, minus the monthly budget",
            }
        )
    schema = {c: pl.String for c in QUERY_COLUMNS} | {"estimated_waste": pl.Decimal(18, 6)}
    return pl.DataFrame(records, schema=schema)
