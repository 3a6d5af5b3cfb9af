"""The weekly report's figures, checked against a small fleet whose every number is worked out by hand.

The marts are filled directly (hourly rows, as the rule-case runner does) in a real warehouse file; the
waste findings are written as a waste rule would write them (the report is generic over rules, and the GPU
rules have their own tests), the attention rules COST001-COST003 really evaluate the week, and the real
report code writes every file. Week 2026-W48 is Monday
2026-11-23 00:00 to Monday 2026-11-30 00:00 UTC (168 hours).

The fleet:
- i-h100: 8×H100, nlp / llm, 80.00 an hour; busy (60 %) Mon–Fri 08:00–20:00, idle (0.5 %) otherwise:
  108 idle hours in stretches of 8, 12 (x4) and 52 h -> a GPU001 waste finding of 108 × 80 = 8,640.00;
- i-a100: 8×A100, vision / vit, 30.00 an hour, busy (85 %) all week;
- i-untagged: 8×A100, no tags, 30.00 an hour Mon–Wed (72 h), no telemetry -> a GPU001 insufficient-data
  finding, COST001 unattributed GPU spend 2,160.00;
- bucket-ckpt (storage, nlp / llm) 0.50 an hour, nat-speech (networking, speech / asr) 1.00, sagemaker
  (AI and Machine Learning, vision / vit) 2.00, a support fee without resource id (untagged) 2.00.
Spend 21,564.00; waste 8,640.00.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from pipelines.config import Config, load_config
from pipelines.evaluate import write_findings
from pipelines.report import WeeklyReport, write_report
from pipelines.transform import build_marts
from pipelines.warehouse import connect, rows
from rules import FINDING_COLUMNS, Window, finding_id, get_rule
from tests.helpers.config import write_config

W48 = Window.iso_week("2026-W48")
MON = W48.start


def hours(start: datetime, end: datetime) -> list[datetime]:
    out, t = [], start
    while t < end:
        out.append(t)
        t += timedelta(hours=1)
    return out


class Marts:
    """Rows for the marts, inserted by column name (columns a row leaves out are NULL)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.rows: dict[str, list[dict[str, Any]]] = {"resources": [], "cost_hourly": [], "gpu_hours": []}
        self.meta: dict[str, dict[str, Any]] = {}

    def resource(
        self,
        resource_id: str,
        gpus: int = 8,
        model: str | None = "H100",
        team: str | None = None,
        project: str | None = None,
        instance_type: str | None = "p5.48xlarge",
        resource_type: str = "Instance",
        currency: str = "USD",
    ) -> None:
        row = {
            "resource_id": resource_id,
            "resource_name": resource_id,
            "resource_type": resource_type,
            "provider": "AWS",
            "account_id": "111122223333",
            "region_id": "us-east-1",
            "instance_type": instance_type,
            "host": resource_id,
            "gpu_model": model,
            "gpu_count": gpus,
            "team": team,
            "project": project,
            "currency": currency,
        }
        self.meta[resource_id] = row
        self.rows["resources"].append(row)

    def bill(
        self,
        resource_id: str | None,
        start: datetime,
        end: datetime,
        hourly: float,
        category: str = "Compute",
        service: str = "Amazon Elastic Compute Cloud",
        team: str | None = None,
        project: str | None = None,
    ) -> None:
        meta = self.meta.get(resource_id or "", {})
        for h in hours(start, end):
            self.rows["cost_hourly"].append(
                {
                    "hour": h,
                    "resource_id": resource_id,
                    "billing_currency": meta.get("currency", "USD"),
                    "provider": "AWS",
                    "account_id": "111122223333",
                    "region_id": "us-east-1",
                    "service_category": category,
                    "service_name": service,
                    "charge_category": "Usage",
                    "instance_type": meta.get("instance_type"),
                    "team": meta.get("team") or team,
                    "project": meta.get("project") or project,
                    "billed_cost": hourly,
                    "effective_cost": hourly,
                    "list_cost": hourly,
                }
            )

    def util(self, resource_id: str, start: datetime, end: datetime, util: float, gpus: int = 8) -> None:
        meta = self.meta[resource_id]
        for h in hours(start, end):
            for g in range(gpus):
                self.rows["gpu_hours"].append(
                    {
                        "hour": h,
                        "host": resource_id,
                        "resource_id": resource_id,
                        "gpu_id": f"{resource_id}/gpu{g}",
                        "gpu_uuid": f"GPU-{resource_id}-{g}",
                        "gpu_index": g,
                        "gpu_model": f"NVIDIA {meta['gpu_model']}",
                        "samples": 60,
                        "coverage": 1.0,
                        "util_mean": util,
                        "util_p95": util,
                        "util_max": util,
                        "mem_used_mean_mib": 1000.0,
                        "mem_used_max_mib": 1000.0,
                        "mem_total_mib": 81559.0,
                        "power_mean_w": 300.0 if util > 5 else 70.0,
                        "power_max_w": 300.0 if util > 5 else 70.0,
                    }
                )

    def flush(self) -> None:
        for table, items in self.rows.items():
            if not items:
                continue
            frame = pl.DataFrame(items, infer_schema_length=None)
            self.con.register("_rows", frame.to_arrow())
            try:
                self.con.execute(f"insert into {table} by name select * from _rows")
            finally:
                self.con.unregister("_rows")
            items.clear()


def busy_weekdays(m: Marts, resource_id: str, monday: datetime) -> None:
    """Busy (60 %) Mon–Fri 08:00–20:00, idle (0.5 %) the rest of the week starting `monday`."""
    t = monday
    for day in range(7):
        d = monday + timedelta(days=day)
        if day < 5:
            m.util(resource_id, t, d + timedelta(hours=8), 0.5)
            m.util(resource_id, d + timedelta(hours=8), d + timedelta(hours=20), 60.0)
            t = d + timedelta(hours=20)
    m.util(resource_id, t, monday + timedelta(days=7), 0.5)


def evaluate_attention(con: duckdb.DuckDBPyConnection, config: Config, window: Window) -> None:
    """COST001-COST003 as the weekly run evaluates them, with the config's budgets for COST002."""
    for rule_id in ("COST001", "COST002", "COST003"):
        rule = get_rule(rule_id)
        params = rule.make_params(config.rule_overrides(rule.id), config)
        write_findings(con, rule.id, window, rule.evaluate(con, window, params))


def put_findings(
    con: duckdb.DuckDBPyConnection, window: Window, rule_id: str, items: list[dict[str, Any]]
) -> None:
    """Findings of `rule_id` for `window`, as the rule's own evaluation writes them (contract columns)."""
    rule = get_rule(rule_id)
    records = []
    for item in items:
        f = {c: None for c in FINDING_COLUMNS}
        f.update(
            rule_id=rule.id, rule_name=rule.name, category=rule.category, severity=rule.severity,
            week_start=window.start.date(), week_end=(window.end - timedelta(days=1)).date(),
            resource_type="GPU instance", currency="USD", reason=f"{item['resource_id']} was idle.",
            evidence=json.dumps(item.pop("evidence", {})), waste_basis="effective cost of idle hours",
            params="{}", detected_at=window.end, status="waste",
        )  # fmt: skip
        f.update(item)
        f["finding_id"] = finding_id(rule.id, f["resource_id"], window.label)
        f["estimated_waste"] = Decimal(str(f["estimated_waste"]))
        records.append(f)
    schema = {c: pl.String for c in FINDING_COLUMNS} | {
        "week_start": pl.Date, "week_end": pl.Date, "estimated_waste": pl.Decimal(18, 6),
        "detected_at": pl.Datetime("us"),
    }  # fmt: skip
    write_findings(con, rule.id, window, pl.DataFrame(records, schema=schema))


@dataclass
class Built:
    config: Config
    report: WeeklyReport
    directory: Path


def fleet(con: duckdb.DuckDBPyConnection) -> None:
    m = Marts(con)
    m.resource("i-h100", team="nlp", project="llm")
    m.resource("i-a100", model="A100", team="vision", project="vit", instance_type="p4d.24xlarge")
    m.resource("i-untagged", model="A100", instance_type="p4d.24xlarge")
    for rid, kind in (("bucket-ckpt", "Bucket"), ("nat-speech", "NAT Gateway"), ("sagemaker", "Endpoint")):
        m.resource(rid, gpus=0, model=None, instance_type=None, resource_type=kind)
    end = MON + timedelta(days=7)
    m.bill("i-h100", MON, end, 80.0)
    m.bill("i-a100", MON, end, 30.0)
    m.bill("i-untagged", MON, MON + timedelta(days=3), 30.0)
    m.bill("bucket-ckpt", MON, end, 0.5, "Storage", "Amazon Simple Storage Service", "nlp", "llm")
    m.bill("nat-speech", MON, end, 1.0, "Networking", "Amazon Virtual Private Cloud", "speech", "asr")
    m.bill("sagemaker", MON, end, 2.0, "AI and Machine Learning", "Amazon SageMaker", "vision", "vit")
    m.bill(None, MON, end, 2.0, "Management and Governance", "AWS Support (Business)")
    busy_weekdays(m, "i-h100", MON)
    m.util("i-a100", MON, end, 85.0)
    m.flush()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    directory = tmp_path_factory.mktemp("report")
    write_config(
        directory,
        """
        budgets:
          team: {nlp: 10000, vision: 50000}
          project: {vit: 20000}
        """,
    )
    config = load_config(directory / "wastewatch.yaml")
    con = connect(config.warehouse_path)
    try:
        build_marts(con)
        fleet(con)
        con.execute(
            "insert into ingest_files (file_id, source, kind, uri, status, error, first_seen_at, checked_at) "
            "values ('x', 'focus-main', 'focus', '/landing/bad.csv', 'rejected', "
            "'/landing/bad.csv:12:4: BilledCost: ''abc'' is not a number', now()::timestamp, now()::timestamp)"
        )
        put_findings(
            con, W48, "GPU001",
            [
                {"resource_id": "i-h100", "team": "nlp", "project": "llm", "estimated_waste": 8640,
                 "evidence": {"idle_hours": 108, "host": "i-h100"}},
                {"resource_id": "i-untagged", "status": "insufficient_data", "estimated_waste": 0,
                 "evidence": {"hours_without_telemetry": 72}},
            ],
        )  # fmt: skip
        evaluate_attention(con, config, W48)
        report = write_report(con, config, W48)
    finally:
        con.close()
    yield Built(config, report, config.reports_path / "2026-W48")


def test_headline_reconciles_and_attention_is_apart(built: Built) -> None:
    [h] = built.report.headline
    assert h["currency"] == "USD"
    assert h["spend"] == Decimal("21564.00")
    assert h["waste"] == Decimal("8640.00")  # GPU001 on i-h100 only
    assert h["waste_pct"] == pytest.approx(40.1)
    assert h["waste_findings"] == 1
    assert h["prev_waste"] is None  # 2026-W47 was never evaluated: no change shown, not "0"
    counted = [f for f in built.report.findings if f["counted"]]
    assert [(f["rule_id"], f["resource_id"]) for f in counted] == [("GPU001", "i-h100")]
    # the attention items carry their amount at stake but never reach the waste total
    attention = {(f["rule_id"], f["resource_id"]): f for f in built.report.findings if f["attention"]}
    assert attention[("COST001", "i-untagged")]["estimated_waste"] == Decimal("2160")
    assert attention[("COST001", "service:AWS Support (Business)")]["estimated_waste"] == Decimal("336")
    assert attention[("COST002", "budget:team:nlp")]["status"] == "waste"
    assert not any(f["counted"] for f in attention.values())
    by_rule = {a["rule_id"]: a for a in built.report.attention_by_rule()}
    assert by_rule["COST001"]["at_stake"] == Decimal("2496")


def test_spend_by_focus_category_per_team_and_project(built: Built) -> None:
    got = {(r["team"], r["project"]): r for r in built.report.spend_by_category}
    assert got[("nlp", "llm")]["compute"] == Decimal("13440.00")
    assert got[("nlp", "llm")]["storage"] == Decimal("84.00")
    assert got[("vision", "vit")]["ai_ml"] == Decimal("336.00")
    assert got[("speech", "asr")]["network"] == Decimal("168.00")
    untagged = got[("(untagged)", "(no project)")]
    assert (untagged["compute"], untagged["other"], untagged["total"]) == (
        Decimal("2160.00"),
        Decimal("336.00"),
        Decimal("2496.00"),
    )
    assert sum(r["total"] for r in got.values()) == Decimal("21564.00")


def test_gpu_fleet_idle_share_and_cost_per_busy_gpu_hour(built: Built) -> None:
    fleet_rows = {g["gpu_model"]: g for g in built.report.gpu_fleet}
    h100, a100 = fleet_rows["H100"], fleet_rows["A100"]
    assert (h100["gpu_hours"], h100["idle_gpu_hours"], h100["busy_gpu_hours"]) == (1344, 864, 480)
    assert h100["idle_pct"] == pytest.approx(64.3)
    assert h100["cost_per_gpu_hour"] == Decimal("10")
    assert h100["cost_per_busy_gpu_hour"] == Decimal("28")
    assert (a100["instances"], a100["gpu_hours"], a100["unobserved_gpu_hours"]) == (2, 1920, 576)
    assert a100["unobserved_pct"] == pytest.approx(30.0)
    assert a100["cost_per_gpu_hour"] == Decimal("3.75")
    assert float(a100["cost_per_busy_gpu_hour"]) == pytest.approx(7200 / 1344)


def test_idle_heatmap_and_utilisation_histogram(built: Built) -> None:
    cells = built.report.idle_cells
    assert cells[(1, 0)] == 8  # Monday 00:00: the H100's 8 GPUs idle
    assert (3, 12) not in cells  # Wednesday noon: busy
    assert cells[(6, 12)] == 8  # Saturday noon: idle
    assert sum(cells.values()) == 864
    assert built.report.util_bands == {0: 864.0, 60: 480.0, 80: 1344.0}
    assert built.report.unobserved_gpu_hours == 576


def test_data_quality_and_rejected_files(built: Built) -> None:
    [d] = built.report.data_quality
    assert d["tagged_spend"] == Decimal("19068.00") and d["tagged_pct"] == pytest.approx(88.4)
    assert d["gpu_spend"] == Decimal("20640") and d["gpu_telemetry_pct"] == Decimal("89.5")
    if "top_untagged_service" in d:  # the billing side's rpt_tag_coverage.sql, when it is there
        assert d["top_untagged_service"] == "Amazon Elastic Compute Cloud"
        assert d["project_pct"] == pytest.approx(88.4)
    [rejected] = built.report.rejected_files
    assert "/landing/bad.csv:12:4" in rejected["error"]


def test_budget_burn_by_team_and_project(built: Built) -> None:
    budgets = {(b["dimension"], b["name"]): b for b in built.report.budgets}
    nlp = budgets[("team", "nlp")]
    # November to date = this week only: 13,440 + 84; 29 of 30 days elapsed
    assert nlp["month_to_date"] == Decimal("13524")
    assert float(nlp["burn_pct"]) == pytest.approx(135.24)
    assert float(nlp["forecast_straight_line"]) == pytest.approx(13524 * 30 / 29)
    assert budgets[("project", "vit")]["team"] == "vision"
    teams = {t["team"]: t for t in built.report.by_team()}
    assert teams["nlp"]["budget"] is nlp and teams["speech"]["budget"] is None


def test_files_are_written_with_lifecycle_columns(built: Built) -> None:
    names = {p.name for p in built.directory.iterdir()}
    assert {"report.html", "report.md", "findings.csv", "findings.parquet", "teams"} <= names
    assert sorted(p.name for p in (built.directory / "teams").iterdir()) == [
        "nlp.html",
        "speech.html",
        "untagged.html",
        "vision.html",
    ]
    frame = pl.read_parquet(built.directory / "findings.parquet")
    assert frame.columns[: len(FINDING_COLUMNS)] == list(FINDING_COLUMNS)
    assert {"finding_key", "attention", "counted", "acknowledged", "first_seen", "weeks_open"} <= set(
        frame.columns
    )
    counted = frame.filter(pl.col("counted"))
    assert counted.get_column("estimated_waste").sum() == Decimal("8640")
    with (built.directory / "findings.csv").open(newline="", encoding="utf-8") as f:
        records = list(csv.DictReader(f))
    assert len(records) == frame.height
    gpu = next(r for r in records if r["resource_id"] == "i-h100")
    assert gpu["lifecycle"] == "new" and gpu["weeks_open"] == "1" and gpu["first_seen"] == "2026-11-23"
    assert json.loads(gpu["evidence"])["idle_hours"] == 108


def test_markdown_carries_the_same_totals(built: Built) -> None:
    md = (built.directory / "report.md").read_text(encoding="utf-8")
    assert "**Spend:** USD 21,564.00" in md
    assert "**Waste:** USD 8,640.00 — 40.1 % of spend in 1 finding(s); last week not evaluated" in md
    assert "## Needs attention (not waste)" in md and "`i-untagged`" in md
    assert "| nlp | llm | 13,440.00 | 84.00 | 0.00 | 0.00 | 0.00 | USD 13,524.00 |" in md
    assert "| H100 | 1,344 | 64.3 % | 0.0 % | USD 13,440.00 | 10.00 | 28.00 |" in md
    # last week was never evaluated: no "everything is new" comparison
    assert not built.report.previous_evaluated
    assert "2026-W47 was not evaluated: nothing to compare with." in md
    html = (built.directory / "report.html").read_text(encoding="utf-8")
    assert 'id="no-previous-week"' in html and 'id="count-new"' not in html


def test_team_page_holds_the_team_slice(built: Built) -> None:
    pages = {t.name: t for t in built.report.teams}
    nlp = pages["nlp"]
    assert [f["resource_id"] for f in nlp.counted] == ["i-h100"]
    assert [b["name"] for b in nlp.budgets] == ["nlp"]
    assert nlp.headline[0]["spend"] == Decimal("13524.00")
    html = (built.directory / "teams" / "nlp.html").read_text(encoding="utf-8")
    assert "i-h100" in html and "i-a100" not in html
    assert 'href="../report.html#f-' in html  # evidence links lead back to the whole report
    untagged = pages["(untagged)"]
    assert {f["resource_id"] for f in untagged.attention} >= {"i-untagged", "service:AWS Support (Business)"}


def test_empty_week_writes_a_report_without_figures(tmp_path: Path) -> None:
    config_path = write_config(tmp_path, "{}\n")
    config = load_config(config_path)
    con = connect(config.warehouse_path)
    try:
        build_marts(con)
        report = write_report(con, config, W48)
    finally:
        con.close()
    assert report.headline == [] and report.findings == [] and report.teams == []
    html = (tmp_path / "reports" / "2026-W48" / "report.html").read_text(encoding="utf-8")
    assert "No spend and no findings in this week." in html
    assert pl.read_csv(tmp_path / "reports" / "2026-W48" / "findings.csv").height == 0


def test_report_sql_files_follow_the_house_header(built: Built) -> None:
    from pipelines.warehouse import header, sql_root

    for path in sorted((sql_root() / "reports").glob("rpt_*.sql")):
        meta = header(path.read_text(encoding="utf-8"))
        assert "grain" in meta and "depends_on" in meta, path.name


def test_counted_waste_never_exceeds_spend_per_currency(built: Built) -> None:
    con = connect(built.config.warehouse_path, read_only=True)
    try:
        spend = rows(con, "select sum(effective_cost) as s from cost_hourly where hour >= $a and hour < $b",
                     {"a": W48.start, "b": W48.end})[0]["s"]  # fmt: skip
    finally:
        con.close()
    assert built.report.headline[0]["waste"] <= spend
