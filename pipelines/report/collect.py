"""Collecting the weekly report from the warehouse: the `sql/reports/rpt_*.sql` queries for the week, COST002's
budget status, and the GPU-fleet, utilisation and data-quality summaries built from their rows."""

from __future__ import annotations

import csv
import json
import re
from datetime import datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from pipelines.config import Config
from pipelines.health.freshness import stale_sources
from pipelines.redact import redact
from pipelines.report.model import TREND_WEEKS, WeeklyReport, check_totals, team_pages
from pipelines.report.rows import (
    Action,
    Advice,
    Budget,
    CategorySpend,
    DataQuality,
    ExchangeRate,
    Finding,
    FleetRow,
    FocusBreak,
    Headline,
    NoTelemetry,
    Peak,
    ProjectWaste,
    Realised,
    RejectedFile,
    Resolved,
    Row,
    RuleWaste,
    SpareCapacity,
    StaleSource,
    TrainingJob,
    TrendWeek,
    UnmatchedTrainLines,
    UnpricedHost,
)
from pipelines.units import DAYS_PER_MONTH
from pipelines.warehouse import CATALOG_DIR, rows, scalar, sql_root, sql_text, utcnow
from rules import ALL_RULES, Window
from rules._contract import ATTENTION_CATEGORIES
from rules.cost002_budget_overrun.evaluate import budget_status


def _params(window: Window, config: Config) -> dict[str, Any]:
    gpu001 = config.rule_overrides("GPU001")
    # resource types of findings about a job run or a job name (GPU002-GPU005), as the scheduler-names
    # catalogue the rules name them from gives them: such a finding ends when the job does, so its absence the
    # next week is not waste that someone stopped (see rpt_weekly_resolved.sql)
    with (CATALOG_DIR / "scheduler_names.csv").open(encoding="utf-8", newline="") as f:
        job_types = sorted(
            {name for row in csv.DictReader(f) for name in (row["job_type"], row["job_name_type"])}
        )
    return {
        "window_start": window.start,
        "window_end": window.end,
        "week_start": window.start.date(),
        "prev_start": window.previous().start.date(),
        "trend_start": window.start - timedelta(weeks=TREND_WEEKS - 1),
        "attention": list(ATTENTION_CATEGORIES),
        "job_resource_types": job_types,
        "idle_util_pct": float(gpu001.get("max_util_pct", 5.0)),
        "min_coverage": float(gpu001.get("min_coverage", 0.5)),
        "days_per_month": DAYS_PER_MONTH,  # weekly waste x 30.44 / 7 = the monthly run-rate
    }


def _query(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    sql = sql_text("reports", name)
    needed = set(re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", re.sub(r"--[^\n]*", "", sql)))
    return rows(con, sql, {k: v for k, v in params.items() if k in needed})


R = TypeVar("R", bound=Row)


def _typed(kind: type[R], found: list[dict[str, Any]]) -> list[R]:
    """Query rows as typed report rows."""
    return [kind.of(r) for r in found]


def collect_report(
    con: duckdb.DuckDBPyConnection, config: Config, window: Window, directory: Path
) -> WeeklyReport:
    """The week's figures from the warehouse, as a WeeklyReport whose totals have been checked."""
    p = _params(window, config)
    rule_meta = {r.id: r for r in ALL_RULES}
    findings = []
    for f in _query(con, "rpt_weekly_findings", p):
        evidence = json.loads(f["evidence"]) if f["evidence"] else {}
        rule = rule_meta.get(f["rule_id"])
        findings.append(
            Finding.of(
                f,
                evidence=evidence,
                rule_summary=rule.summary if rule else "",
                amount_at_stake=evidence.get("amount_at_stake") if f["attention"] else None,
            )
        )
    gpu_hours = _query(con, "rpt_weekly_gpu_resource_hours", p)
    bands = _query(con, "rpt_weekly_util_histogram", p)
    data_start = {r["currency"]: r["first_hour"] for r in _query(con, "rpt_cost_data_start", p)}
    trend = _trend(_query(con, "rpt_weekly_trend", p), window, data_start)
    cost002 = config.rule_overrides("COST002")
    budgets = budget_status(
        con,
        window,
        {k: dict(v) for k, v in (cost002.get("budgets") or config.budgets).items()},
        str(cost002.get("budget_currency", config.currency)),
        int(cost002.get("trailing_weeks", 2)),
    )
    report = WeeklyReport(
        week=window.label,
        window=window,
        directory=directory,
        headline=_typed(Headline, _query(con, "rpt_weekly_spend", p)),
        by_rule=_typed(RuleWaste, _query(con, "rpt_weekly_waste_by_rule", p)),
        by_project=_typed(ProjectWaste, _query(con, "rpt_weekly_waste_by_project", p)),
        spend_by_category=_typed(CategorySpend, _query(con, "rpt_weekly_spend_by_category", p)),
        findings=findings,
        resolved=_typed(Resolved, _query(con, "rpt_weekly_resolved", p)),
        gpu_fleet=_gpu_fleet(gpu_hours),
        idle_cells=_idle_cells(gpu_hours),
        util_bands=_bands(bands),
        unobserved_gpu_hours=float(sum(r["gpus"] - r["observed_gpus"] for r in gpu_hours)),
        trend=trend,
        data_quality=_data_quality(
            _query(con, "rpt_weekly_data_quality", p), gpu_hours, _tag_coverage(con, p)
        ),
        budgets=_typed(Budget, budgets),
        # the ledger's errors are redacted when made; redacting again keeps the report safe for older rows
        rejected_files=[
            RejectedFile.of(x, error=redact(x["error"]) if x.get("error") else x.get("error"))
            for x in _query(con, "rpt_rejected_files", p)
        ],
        stale_sources=[
            StaleSource(source=s.source, kind=s.kind, problem=s.problem)
            for s in stale_sources(con, config, utcnow())
        ],
        idle_util_pct=p["idle_util_pct"],
        unpriced=_typed(UnpricedHost, _query(con, "rpt_weekly_unpriced_gpu_hours", p)),
        no_telemetry=_typed(NoTelemetry, _query(con, "rpt_weekly_gpu_hours_without_telemetry", p)),
        reporting_currency=config.reporting_currency,
        exchange_rates=[
            ExchangeRate(from_=r.from_, to=r.to, rate=r.rate, valid_from=r.valid_from)
            for r in config.exchange_rates
        ],
        training=_typed(TrainingJob, _query(con, "rpt_weekly_training", p)),
        advice=_advice(_query(con, "rpt_weekly_advice", p)),
        unmatched_train_lines=UnmatchedTrainLines.of(_query(con, "rpt_weekly_train_log_unmatched", p)[0]),
        focus_conformance=_focus_conformance(con, window),
        actions=_typed(Action, _query(con, "rpt_weekly_actions", p)),
        realised=_typed(Realised, _query(con, "rpt_remediation_realised", p)),
        data_start=data_start,
        spares=_typed(SpareCapacity, _query(con, "rpt_weekly_spare_capacity", p)),
        peaks=_typed(Peak, _query(con, "rpt_weekly_peaks", p)),
        previous_evaluated=bool(
            scalar(con, "select count(*) from findings where week_start = $w", {"w": p["prev_start"]})
        ),
    )
    report.teams = team_pages(report)
    check_totals(report)
    return report


def _advice(items: list[dict[str, Any]]) -> list[Advice]:
    """The week's advice items with their evidence parsed (the template shows the floor, discount and
    risk weeks from it)."""
    return [Advice.of(a, evidence=json.loads(a["evidence"]) if a["evidence"] else {}) for a in items]


def _trend(
    weeks: list[dict[str, Any]], window: Window, data_start: dict[str, Any] | None = None
) -> dict[str, list[TrendWeek]]:
    """Per currency, one entry per week from its first week with spend or waste to the report's week: the
    weeks before any data are left out (a chart of "the last 8 weeks" starting with empty weeks misleads),
    and so are the weeks before the data's start (`data_start`: where the bill's usage starts) and a first
    week the data starts in the middle of when a full week follows (its bar would read as a week of low
    spend); a week without spend after that is kept with spend 0 (and waste None unless it was evaluated)."""
    out: dict[str, list[TrendWeek]] = {}
    for currency in sorted({t["currency"] for t in weeks}):
        have = {t["week_start"]: t for t in weeks if t["currency"] == currency}
        with_data = [w for w, t in have.items() if t["spend"] or t["waste"]]
        if not with_data:
            continue
        start, series = min(with_data), []
        first = (data_start or {}).get(currency)
        partial = None
        if first is not None:
            # from the week the data starts in (rpt_cost_data_start), or the one after when it starts part-way
            begin = Window.containing(first).start.date()
            if first > datetime.combine(begin, time()) and begin + timedelta(weeks=1) < window.end.date():
                partial, begin = Window.containing(begin).label, begin + timedelta(weeks=1)
            if start < begin < window.end.date():
                start = begin
        while start < window.end.date():
            t = have.get(start) or {"week_start": start, "currency": currency, "spend": 0, "waste": None}
            series.append(TrendWeek.of(t, label=Window.containing(start).label, after_partial=partial))
            partial = None
            start += timedelta(weeks=1)
        out[currency] = series
    return out


def _gpu_fleet(hours: list[dict[str, Any]]) -> list[FleetRow]:
    """GPU-hours priced, idle share and effective cost per GPU-hour and per busy GPU-hour, by GPU model and
    pricing basis (a bill's cost and a cost model's are never added into one row)."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in hours:
        basis = r.get("pricing_basis") or "bill"
        g = out.setdefault(
            (r["gpu_model"], basis, r["currency"]),
            {
                "gpu_model": r["gpu_model"],
                "pricing_basis": basis,
                "currency": r["currency"],
                "resources": set(),
                "gpu_hours": 0,
                "observed": 0,
                "idle": 0,
                "cost": Decimal(0),
            },
        )
        g["resources"].add(r["resource_id"])
        g["gpu_hours"] += r["gpus"]
        g["observed"] += r["observed_gpus"]
        g["idle"] += r["idle_gpus"]
        g["cost"] += r["cost"]
    fleet = []
    for g in out.values():
        busy = g["observed"] - g["idle"]
        fleet.append(
            FleetRow(
                gpu_model=g["gpu_model"],
                pricing_basis=g["pricing_basis"],
                currency=g["currency"],
                instances=len(g["resources"]),
                gpu_hours=g["gpu_hours"],
                idle_gpu_hours=g["idle"],
                busy_gpu_hours=busy,
                unobserved_gpu_hours=g["gpu_hours"] - g["observed"],
                idle_pct=round(100 * g["idle"] / g["gpu_hours"], 1) if g["gpu_hours"] else None,
                unobserved_pct=round(100 * (g["gpu_hours"] - g["observed"]) / g["gpu_hours"], 1)
                if g["gpu_hours"]
                else None,
                cost=g["cost"],
                cost_per_gpu_hour=g["cost"] / g["gpu_hours"] if g["gpu_hours"] else None,
                cost_per_busy_gpu_hour=g["cost"] / busy if busy else None,
            )
        )
    return sorted(fleet, key=lambda g: (-g.cost, g.gpu_model))


def _bands(bands: list[dict[str, Any]]) -> dict[int, float]:
    """GPU-hours per utilisation band, all GPU models together."""
    out: dict[int, float] = {}
    for b in bands:
        out[int(b["band"])] = out.get(int(b["band"]), 0.0) + float(b["gpu_hours"])
    return out


def _idle_cells(hours: list[dict[str, Any]]) -> dict[tuple[int, int], float]:
    cells: dict[tuple[int, int], float] = {}
    for r in hours:
        if r["idle_gpus"]:
            key = (int(r["iso_weekday"]), int(r["hour_of_day"]))
            cells[key] = cells.get(key, 0.0) + float(r["idle_gpus"])
    return cells


def _tag_coverage(con: duckdb.DuckDBPyConnection, params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The billing side's tag coverage report (rpt_tag_coverage.sql), per currency, when it exists."""
    if not (sql_root() / "reports" / "rpt_tag_coverage.sql").is_file():
        return {}
    return {r["currency"]: r for r in _query(con, "rpt_tag_coverage", params)}


def _focus_conformance(con: duckdb.DuckDBPyConnection, window: Window) -> list[FocusBreak]:
    """The FOCUS conformance check's figures for the week's lines (those whose charge period overlaps it),
    from the same query as the check on billing_line_items, so the two never disagree on a rule."""
    params = {
        "subcategories_csv": str(CATALOG_DIR / "focus_service_subcategories.csv"),
        "window_start": window.start,
        "window_end": window.end,
    }
    found = rows(con, sql_text("checks", "billing_focus_conformance"), params)
    return [
        FocusBreak.of(
            r, spend_pct=round(100 * r["spend"] / r["source_spend"], 1) if r["source_spend"] else None
        )
        for r in found
    ]


def _data_quality(
    spend: list[dict[str, Any]], hours: list[dict[str, Any]], coverage: dict[str, dict[str, Any]]
) -> list[DataQuality]:
    """Per currency: share of spend with a team tag; share of GPU spend the telemetry covers.

    Tag coverage is rpt_tag_coverage's (positive spend, credits left out, with project and owner coverage
    and the largest untagged service) when that report exists, else rpt_weekly_data_quality's.
    """
    gpu: dict[str, list[Decimal]] = {}
    for r in hours:
        seen = gpu.setdefault(r["currency"], [Decimal(0), Decimal(0)])
        seen[0] += r["cost"]
        seen[1] += r["cost"] * Decimal(r["observed_gpus"]) / Decimal(r["gpus"])
    out = []
    for s in spend:
        total, covered = gpu.get(s["currency"], [Decimal(0), Decimal(0)])
        c = coverage.get(s["currency"])
        if c is not None:
            s = {
                **s,
                "spend": c["spend"],
                "tagged_spend": c["spend_with_team"],
                "tagged_pct": c["team_coverage_pct"],
                "project_pct": c["project_coverage_pct"],
                "owner_pct": c["owner_coverage_pct"],
                "top_untagged_service": c["top_untagged_service"],
                "top_untagged_spend": c["top_untagged_spend"],
            }
        out.append(
            DataQuality.of(
                s,
                gpu_spend=total,
                gpu_spend_with_telemetry=covered,
                gpu_telemetry_pct=round(100 * covered / total, 1) if total > 0 else None,
            )
        )
    return out
