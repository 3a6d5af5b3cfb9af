"""The weekly waste report: report.html, report.md, findings.csv/.parquet and teams/<team>.html for an ISO week.

Every figure comes from `sql/reports/rpt_*.sql` over the warehouse (plus COST002's month-to-date
computation for budget burn). The totals reconcile, per currency: the waste total is the sum of the
counted findings (status `waste`, a waste rule, not acknowledged for the week) and never exceeds spend.
Attention rules (categories in ATTENTION_CATEGORIES: unattributed spend, budgets, anomalies) are listed
apart with the amount at stake, never added to waste. The report is generic over the rule registry: a new
rule's findings appear under its id, name and category without changes here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
from jinja2 import Environment, PackageLoader, select_autoescape

from pipelines.config import Config
from pipelines.report import charts
from pipelines.units import DAYS_PER_MONTH
from pipelines.warehouse import rows, scalar, sql_root, sql_text, utcnow
from rules import ALL_RULES, FINDING_COLUMNS, Window
from rules._contract import ATTENTION_CATEGORIES
from rules.cost002_budget_overrun.evaluate import budget_status

TOP_N = 20
TREND_WEEKS = 8
CATEGORY_GROUPS = (
    ("compute", "Compute"),
    ("storage", "Storage"),
    ("network", "Network"),
    ("ai_ml", "AI/ML"),
    ("other", "Other"),
)
# finding columns written to findings.csv / .parquet after the contract's, in this order
LIFECYCLE_COLUMNS = (
    "finding_key", "attention", "counted", "acknowledged", "acked_until", "ack_reason", "acked_by",
    "lifecycle", "first_seen", "weeks_open", "cumulative_waste", "previous_waste",
)  # fmt: skip


@dataclass
class TeamPage:
    """One team's slice of the report (teams/<slug>.html)."""

    name: str
    slug: str
    headline: list[dict[str, Any]]
    projects: list[dict[str, Any]]
    spend_by_category: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    attention: list[dict[str, Any]]
    resolved: list[dict[str, Any]]
    budgets: list[dict[str, Any]]

    @property
    def counted(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["counted"]]

    @property
    def acknowledged(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["acknowledged"]]


@dataclass
class WeeklyReport:
    week: str
    window: Window
    directory: Path
    headline: list[dict[str, Any]]
    by_rule: list[dict[str, Any]]
    by_project: list[dict[str, Any]]
    spend_by_category: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    resolved: list[dict[str, Any]]
    gpu_fleet: list[dict[str, Any]]
    idle_cells: dict[tuple[int, int], float]
    util_bands: dict[int, float]
    unobserved_gpu_hours: float
    trend: dict[str, list[dict[str, Any]]]
    data_quality: list[dict[str, Any]]
    budgets: list[dict[str, Any]]
    rejected_files: list[dict[str, Any]]
    idle_util_pct: float
    previous_evaluated: bool = False  # any finding stored for last week: new/resolved are meaningful
    generated_at: datetime = field(default_factory=utcnow)
    teams: list[TeamPage] = field(default_factory=list)

    @property
    def files(self) -> dict[str, Path]:
        names = ("report.md", "report.html", "findings.csv", "findings.parquet")
        return {n: self.directory / n for n in names}

    @property
    def previous_week(self) -> str:
        return self.window.previous().label

    def totals(self) -> dict[str, dict[str, Decimal]]:
        return {h["currency"]: {"spend": h["spend"], "waste": h["waste"]} for h in self.headline}

    # the findings, by the section they appear in
    @property
    def counted(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["counted"]]

    @property
    def top(self) -> list[dict[str, Any]]:
        return sorted(
            self.counted, key=lambda f: (-f["estimated_waste"], f["rule_id"], f["resource_id"] or "")
        )[:TOP_N]

    @property
    def attention(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["attention"] and not f["acknowledged"]]

    @property
    def acknowledged(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["acknowledged"]]

    @property
    def new(self) -> list[dict[str, Any]]:
        return [f for f in self.counted if f["lifecycle"] == "new"]

    @property
    def persisting(self) -> list[dict[str, Any]]:
        return [f for f in self.counted if f["lifecycle"] != "new"]

    def savings(self) -> dict[str, Decimal]:
        """Realised savings per currency: last week's counted waste of findings resolved since.

        Only a finding that is gone counts: one that turned `suspect` or `insufficient_data` (telemetry
        stopped) is listed as no longer waste, but nothing proves its money stopped burning.
        """
        out: dict[str, Decimal] = {}
        for r in self.resolved:
            if r["counted_last_week"] and r["now"] == "gone":
                out[r["currency"]] = out.get(r["currency"], Decimal(0)) + r["last_week_waste"]
        return out

    def attention_by_rule(self) -> list[dict[str, Any]]:
        """One row per attention rule and currency: findings and the amount at stake (never waste)."""
        groups: dict[tuple[str, str], dict[str, Any]] = {}
        for f in self.findings:
            if not f["attention"]:
                continue
            key = (f["rule_id"], f["currency"] or "")
            g = groups.setdefault(
                key,
                {
                    "rule_id": f["rule_id"],
                    "rule_name": f["rule_name"],
                    "category": f["category"],
                    "currency": f["currency"],
                    "findings": 0,
                    "at_stake": Decimal(0),
                    "insufficient_data": 0,
                },
            )
            if f["status"] == "insufficient_data":
                g["insufficient_data"] += 1
            elif not f["acknowledged"]:
                g["findings"] += 1
                g["at_stake"] += f["estimated_waste"]
        return sorted(groups.values(), key=lambda g: (g["rule_id"], g["currency"] or ""))

    def by_category(self) -> list[dict[str, Any]]:
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for r in self.by_rule:
            g = out.setdefault(
                (r["category"], r["currency"]),
                {"category": r["category"], "currency": r["currency"], "waste": Decimal(0), "findings": 0},
            )
            g["waste"] += r["waste"]
            g["findings"] += r["waste_findings"]
        return sorted(out.values(), key=lambda g: (-g["waste"], g["category"]))

    def by_team(self) -> list[dict[str, Any]]:
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for r in self.by_project:
            g = out.setdefault(
                (r["team"], r["currency"]),
                {
                    "team": r["team"],
                    "currency": r["currency"],
                    "spend": Decimal(0),
                    "waste": Decimal(0),
                    "waste_findings": 0,
                },
            )
            g["spend"] += r["spend"]
            g["waste"] += r["waste"]
            g["waste_findings"] += r["waste_findings"]
        for g in out.values():
            g["waste_pct"] = round(100 * g["waste"] / g["spend"], 1) if g["spend"] > 0 else None
            g["budget"] = next(
                (b for b in self.budgets if b["dimension"] == "team" and b["name"] == g["team"]), None
            )
            g["slug"] = self.team_slug(g["team"])
        return sorted(out.values(), key=lambda g: (-g["waste"], -g["spend"], g["team"]))

    def project_budget(self, project: str) -> dict[str, Any] | None:
        return next((b for b in self.budgets if b["dimension"] == "project" and b["name"] == project), None)

    def team_slug(self, team: str) -> str | None:
        return next((t.slug for t in self.teams if t.name == team), None)

    def max_rule_waste(self) -> Decimal:
        return max((Decimal(x["waste"]) for x in self.by_rule), default=Decimal(0))


def _params(window: Window, config: Config) -> dict[str, Any]:
    gpu001 = config.rule_overrides("GPU001")
    return {
        "window_start": window.start,
        "window_end": window.end,
        "week_start": window.start.date(),
        "prev_start": window.previous().start.date(),
        "trend_start": window.start - timedelta(weeks=TREND_WEEKS - 1),
        "attention": list(ATTENTION_CATEGORIES),
        "idle_util_pct": float(gpu001.get("max_util_pct", 5.0)),
        "min_coverage": float(gpu001.get("min_coverage", 0.5)),
        "days_per_month": DAYS_PER_MONTH,  # weekly waste x 30.44 / 7 = the monthly run-rate
    }


def _query(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    sql = sql_text("reports", name)
    needed = set(re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", re.sub(r"--[^\n]*", "", sql)))
    return rows(con, sql, {k: v for k, v in params.items() if k in needed})


def slugify(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-.") or "team"
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


def collect(con: duckdb.DuckDBPyConnection, config: Config, window: Window, directory: Path) -> WeeklyReport:
    p = _params(window, config)
    rule_meta = {r.id: r for r in ALL_RULES}
    findings = _query(con, "rpt_weekly_findings", p)
    for f in findings:
        f["evidence"] = json.loads(f["evidence"]) if f["evidence"] else {}
        rule = rule_meta.get(f["rule_id"])
        f["rule_summary"] = rule.summary if rule else ""
        f["amount_at_stake"] = f["evidence"].get("amount_at_stake") if f["attention"] else None
    gpu_hours = _query(con, "rpt_weekly_gpu_resource_hours", p)
    bands = _query(con, "rpt_weekly_util_histogram", p)
    trend: dict[str, list[dict[str, Any]]] = {}
    for t in _query(con, "rpt_weekly_trend", p):
        trend.setdefault(t["currency"], []).append({**t, "label": Window.containing(t["week_start"]).label})
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
        headline=_query(con, "rpt_weekly_spend", p),
        by_rule=_query(con, "rpt_weekly_waste_by_rule", p),
        by_project=_query(con, "rpt_weekly_waste_by_project", p),
        spend_by_category=_query(con, "rpt_weekly_spend_by_category", p),
        findings=findings,
        resolved=_query(con, "rpt_weekly_resolved", p),
        gpu_fleet=_gpu_fleet(gpu_hours),
        idle_cells=_idle_cells(gpu_hours),
        util_bands=_bands(bands),
        unobserved_gpu_hours=float(sum(r["gpus"] - r["observed_gpus"] for r in gpu_hours)),
        trend=trend,
        data_quality=_data_quality(
            _query(con, "rpt_weekly_data_quality", p), gpu_hours, _tag_coverage(con, p)
        ),
        budgets=budgets,
        rejected_files=_query(con, "rpt_rejected_files", p),
        idle_util_pct=p["idle_util_pct"],
        previous_evaluated=bool(
            scalar(con, "select count(*) from findings where week_start = $w", {"w": p["prev_start"]})
        ),
    )
    report.teams = _team_pages(report)
    check_totals(report)
    return report


def _gpu_fleet(hours: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GPU-hours billed, idle share and effective cost per GPU-hour and per busy GPU-hour, by GPU model."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in hours:
        g = out.setdefault(
            (r["gpu_model"], r["currency"]),
            {
                "gpu_model": r["gpu_model"],
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
            {
                "gpu_model": g["gpu_model"],
                "currency": g["currency"],
                "instances": len(g["resources"]),
                "gpu_hours": g["gpu_hours"],
                "idle_gpu_hours": g["idle"],
                "busy_gpu_hours": busy,
                "unobserved_gpu_hours": g["gpu_hours"] - g["observed"],
                "idle_pct": round(100 * g["idle"] / g["gpu_hours"], 1) if g["gpu_hours"] else None,
                "unobserved_pct": round(100 * (g["gpu_hours"] - g["observed"]) / g["gpu_hours"], 1)
                if g["gpu_hours"]
                else None,
                "cost": g["cost"],
                "cost_per_gpu_hour": g["cost"] / g["gpu_hours"] if g["gpu_hours"] else None,
                "cost_per_busy_gpu_hour": g["cost"] / busy if busy else None,
            }
        )
    return sorted(fleet, key=lambda g: (-g["cost"], g["gpu_model"]))


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


def _data_quality(
    spend: list[dict[str, Any]], hours: list[dict[str, Any]], coverage: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
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
            {
                **s,
                "gpu_spend": total,
                "gpu_spend_with_telemetry": covered,
                "gpu_telemetry_pct": round(100 * covered / total, 1) if total > 0 else None,
            }
        )
    return out


def _team_pages(report: WeeklyReport) -> list[TeamPage]:
    names: set[str] = {r["team"] for r in report.by_project}
    names |= {f["team"] for f in report.findings}
    taken: set[str] = set()
    pages = []
    for name in sorted(names, key=lambda n: (n.startswith("("), n)):
        findings = [f for f in report.findings if f["team"] == name and not f["attention"]]
        attention = [
            f
            for f in report.findings
            if f["attention"] and (f["team"] == name or f["evidence"].get("suggested_team") == name)
        ]
        headline = []
        for currency in sorted({r["currency"] for r in report.by_project if r["team"] == name}):
            projects = [r for r in report.by_project if r["team"] == name and r["currency"] == currency]
            spend = sum((r["spend"] for r in projects), Decimal(0))
            waste = sum((r["waste"] for r in projects), Decimal(0))
            headline.append(
                {
                    "currency": currency,
                    "spend": spend,
                    "waste": waste,
                    "waste_pct": round(100 * waste / spend, 1) if spend > 0 else None,
                    "waste_findings": sum(r["waste_findings"] for r in projects),
                }
            )
        pages.append(
            TeamPage(
                name=name,
                slug=slugify(name, taken),
                headline=headline,
                projects=[r for r in report.by_project if r["team"] == name],
                spend_by_category=[r for r in report.spend_by_category if r["team"] == name],
                findings=findings,
                attention=attention,
                resolved=[r for r in report.resolved if r["team"] == name],
                budgets=[
                    b
                    for b in report.budgets
                    if (b["dimension"] == "team" and b["name"] == name)
                    or (b["dimension"] == "project" and b["team"] == name)
                ],
            )
        )
    return pages


def check_totals(report: WeeklyReport) -> None:
    """The report's own arithmetic, per currency: waste = sum of counted findings; waste <= spend."""
    for h in report.headline:
        listed = sum(
            (f["estimated_waste"] for f in report.counted if f["currency"] == h["currency"]), Decimal(0)
        )
        if abs(listed - h["waste"]) > Decimal("0.01"):
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


def signed_pct(value: Any) -> str:
    if value is None:
        return "–"
    return f"{Decimal(value):+.1f} %"


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("pipelines.report", "templates"),
        autoescape=select_autoescape(["html", "html.j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["money"] = money
    env.filters["signed_pct"] = signed_pct
    env.filters["md"] = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
    env.filters["num"] = lambda v, d=0: "–" if v is None else f"{Decimal(str(v)):,.{d}f}"
    env.globals.update(
        charts=charts,
        CATEGORY_GROUPS=CATEGORY_GROUPS,
        DAYS=charts.DAYS,
        ATTENTION_CATEGORIES=ATTENTION_CATEGORIES,
        DAYS_PER_MONTH=DAYS_PER_MONTH,
        # what an attention finding's status means to a reader: it is never "waste"
        ATTENTION_LABELS={"waste": "act", "suspect": "watch", "insufficient_data": "not judged"},
    )
    return env


def write_report(con: duckdb.DuckDBPyConnection, config: Config, window: Window) -> WeeklyReport:
    """Collect the week's figures and write the report files under <reports_dir>/<ISO week>/."""
    directory = config.reports_path / window.label
    directory.mkdir(parents=True, exist_ok=True)
    report = collect(con, config, window, directory)
    env = _env()
    context = {"r": report}
    _write_atomic(report.files["report.md"], env.get_template("report.md.j2").render(**context))
    _write_atomic(report.files["report.html"], env.get_template("report.html.j2").render(**context))
    teams_dir = directory / "teams"
    teams_dir.mkdir(exist_ok=True)
    wanted = {f"{t.slug}.html" for t in report.teams}
    for stale in teams_dir.glob("*.html"):
        if stale.name not in wanted:  # a team that had a page last time this week was written
            stale.unlink()
    for team in report.teams:
        _write_atomic(
            teams_dir / f"{team.slug}.html", env.get_template("team.html.j2").render(r=report, t=team)
        )
    frame = findings_frame(report)
    _write_frame(frame, report.files["findings.csv"], "csv")
    _write_frame(frame, report.files["findings.parquet"], "parquet")
    return report


def findings_frame(report: WeeklyReport) -> pl.DataFrame:
    """The week's findings: the contract's columns, then the lifecycle and acknowledgement columns."""
    schema: dict[str, Any] = {c: pl.String for c in FINDING_COLUMNS}
    schema.update(
        week_start=pl.Date,
        week_end=pl.Date,
        estimated_waste=pl.Decimal(18, 6),
        detected_at=pl.Datetime("us"),
        finding_key=pl.String,
        attention=pl.Boolean,
        counted=pl.Boolean,
        acknowledged=pl.Boolean,
        acked_until=pl.Date,
        ack_reason=pl.String,
        acked_by=pl.String,
        lifecycle=pl.String,
        first_seen=pl.Date,
        weeks_open=pl.Int64,
        cumulative_waste=pl.Decimal(18, 6),
        previous_waste=pl.Decimal(18, 6),
    )
    week_end = (report.window.end - timedelta(days=1)).date()
    records = []
    for f in report.findings:
        rec = {c: f.get(c) for c in schema}
        rec["week_start"] = report.window.start.date()
        rec["week_end"] = week_end
        rec["team"] = None if f["team"] == "(untagged)" else f["team"]
        rec["evidence"] = json.dumps(f["evidence"], sort_keys=True)
        records.append(rec)
    return pl.DataFrame(records, schema=schema) if records else pl.DataFrame(schema=schema)


def _write_frame(frame: pl.DataFrame, path: Path, kind: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    if kind == "csv":
        frame.write_csv(tmp)
    else:
        frame.write_parquet(tmp)
    tmp.replace(path)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
