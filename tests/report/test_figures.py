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
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from pipelines.config import load_config
from pipelines.report import write_report
from pipelines.report.model import PAGES, slugify
from pipelines.warehouse import connect, rows
from rules import FINDING_COLUMNS
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.report import (
    W48,
    Built,
)


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
    assert {
        "report.html",
        "report.md",
        "report-full.md",
        "findings.csv",
        "findings.parquet",
        "teams",
    } <= names
    # the main page's linked pages are written beside it
    assert {f"{stem}.html" for stem, _ in PAGES} <= names
    # team pages carry a stable hash of the name; the untagged bucket's page is plain untagged.html
    assert sorted(p.name for p in (built.directory / "teams").iterdir()) == sorted(
        [f"{slugify(t, set())}.html" for t in ("nlp", "speech", "vision")] + ["untagged.html"]
    )
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
    md = (built.directory / "report-full.md").read_text(encoding="utf-8")
    assert "**Spend:** USD 21,564.00" in md
    assert "**Waste:** USD 8,640.00; last week not evaluated" in md
    assert "**Waste share:** 40.1 % of spend\n- **Waste findings:** 1 finding\n" in md
    assert "## Needs attention (not waste)" in md and "`i-untagged`" in md
    assert "| nlp | llm | 13,440.00 | 84.00 | 0.00 | 0.00 | 0.00 | USD 13,524.00 |" in md
    assert "| H100 | bill | 1,344 | 64.3 % | 0.0 % | USD 13,440.00 | 10.00 | 28.00 |" in md
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
    html = (built.directory / "teams" / f"{slugify('nlp', set())}.html").read_text(encoding="utf-8")
    assert "i-h100" in html and "i-a100" not in html
    assert 'href="../findings.html#f-' in html  # evidence links lead to the page of every finding
    assert 'href="../report.html"' in html  # and the page back to the summary
    untagged = pages["(untagged)"]
    assert {f["resource_id"] for f in untagged.attention} >= {"i-untagged", "service:AWS Support (Business)"}


def test_empty_week_writes_a_report_without_figures(tmp_path: Path, empty_marts: Path) -> None:
    config_path = write_config(tmp_path, "{}\n")
    config = load_config(config_path)
    con = open_copy(empty_marts, config.warehouse_path)
    try:
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
