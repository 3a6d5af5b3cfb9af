"""The weekly waste report: report.md, report.html, findings.csv and findings.parquet for one ISO week.

Every figure comes from `sql/reports/rpt_*.sql` over the warehouse; the totals reconcile: the waste total
is the sum of the `waste` findings listed, per currency, and never exceeds that currency's spend.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
from jinja2 import Environment, PackageLoader, select_autoescape

from pipelines.config import Config
from pipelines.warehouse import rows, sql_text, utcnow
from rules import FINDING_COLUMNS, Window


@dataclass
class WeeklyReport:
    week: str
    window: Window
    directory: Path
    headline: list[dict[str, Any]]
    by_rule: list[dict[str, Any]]
    by_team: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    rejected_files: list[dict[str, Any]]
    generated_at: Any = field(default_factory=utcnow)

    @property
    def files(self) -> dict[str, Path]:
        names = ("report.md", "report.html", "findings.csv", "findings.parquet")
        return {n: self.directory / n for n in names}

    def totals(self) -> dict[str, dict[str, Decimal]]:
        return {h["currency"]: {"spend": h["spend"], "waste": h["waste"]} for h in self.headline}


def collect(con: duckdb.DuckDBPyConnection, window: Window, directory: Path) -> WeeklyReport:
    week_params = {"week_start": window.start.date()}
    span = {"window_start": window.start, "window_end": window.end, **week_params}
    findings = rows(con, sql_text("reports", "rpt_weekly_findings"), week_params)
    for f in findings:
        f["evidence"] = json.loads(f["evidence"]) if f["evidence"] else {}
    report = WeeklyReport(
        week=window.label,
        window=window,
        directory=directory,
        headline=rows(con, sql_text("reports", "rpt_weekly_spend"), span),
        by_rule=rows(con, sql_text("reports", "rpt_weekly_waste_by_rule"), week_params),
        by_team=rows(con, sql_text("reports", "rpt_weekly_waste_by_team"), span),
        findings=findings,
        rejected_files=rows(con, sql_text("reports", "rpt_rejected_files")),
    )
    check_totals(report)
    return report


def check_totals(report: WeeklyReport) -> None:
    """The report's own arithmetic: waste = sum of waste findings; waste <= spend (per currency)."""
    for h in report.headline:
        listed = sum(
            (
                f["estimated_waste"]
                for f in report.findings
                if f["status"] == "waste" and f["currency"] == h["currency"]
            ),
            Decimal(0),
        )
        if abs(listed - h["waste"]) > Decimal("0.01") * max(1, len(report.findings)):
            raise AssertionError(f"{report.week}: waste total {h['waste']} != sum of findings {listed}")
        if h["waste"] > h["spend"] + Decimal("0.01"):
            raise AssertionError(
                f"{report.week}: waste {h['waste']} exceeds spend {h['spend']} ({h['currency']})"
            )


def money(value: Any, currency: str | None = None) -> str:
    if value is None:
        return "–"
    text = f"{Decimal(value):,.2f}"
    return f"{currency} {text}" if currency else text


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("pipelines.report", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["money"] = money
    env.filters["md"] = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
    return env


def write_report(con: duckdb.DuckDBPyConnection, config: Config, window: Window) -> WeeklyReport:
    """Collect the week's figures and write the four report files under <reports_dir>/<ISO week>/."""
    directory = config.reports_path / window.label
    directory.mkdir(parents=True, exist_ok=True)
    report = collect(con, window, directory)
    env = _env()
    context = {
        "r": report,
        "max_waste": max((Decimal(x["waste"]) for x in report.by_rule), default=Decimal(0)),
    }
    _write_atomic(report.files["report.md"], env.get_template("report.md.j2").render(**context))
    _write_atomic(report.files["report.html"], env.get_template("report.html.j2").render(**context))
    frame = findings_frame(con, window)
    frame.write_csv(report.files["findings.csv"])
    frame.write_parquet(report.files["findings.parquet"])
    return report


def findings_frame(con: duckdb.DuckDBPyConnection, window: Window) -> pl.DataFrame:
    cols = ", ".join(FINDING_COLUMNS)
    rel = con.sql(
        f"select {cols} from findings where week_start = $w order by estimated_waste desc, rule_id, resource_id",  # noqa: S608 - our constants
        params={"w": window.start.date()},
    )
    assert rel is not None
    frame = rel.pl()
    return frame.with_columns(pl.col("evidence").cast(pl.String), pl.col("params").cast(pl.String))


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
