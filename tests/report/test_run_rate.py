"""The waste-by-rule table's monthly run-rate: the week's waste x 30.44 / 7, in report.html and report.md.

Storage waste is priced per week as bytes x price per GB-month x 7 / 30.44 (GB = 2^30 bytes), so the
run-rate of a storage rule is the flagged bytes' monthly cost: what deleting them saves a month. The
findings below are written as the storage rules write them (6-decimal weekly amounts, the monthly cost in
the evidence), for bytes whose monthly cost is a round number:

- STO001: 10 TiB and 3 TiB of orphaned checkpoints at USD 0.023 per GB-month: 235.52 + 70.656 = 306.176
  a month, 306.18 shown; per week 54.160315 + 16.248095 = 70.41;
- STO002: one 2 TiB duplicate copy at 0.023: 47.104 a month, 47.10 shown; per week 10.832063;
- STO003: 4 TiB to tier, STANDARD 0.023 - GLACIER_IR 0.004 = 0.019: 77.824 a month, 77.82 shown;
- GPU001: an idle instance, 8,640.00 this week: 37,571.66 a month at this rate (8,640 x 30.44 / 7 =
  37,571.657...), and an acknowledged 700.00 that is in neither figure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from pipelines.config import load_config
from pipelines.report import WeeklyReport, write_report
from pipelines.report.acks import record, resolve
from pipelines.units import DAYS_PER_MONTH
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.report import MON, W48, Marts, put_findings

TIB = 1024  # GiB
CENT = Decimal("0.01")


def _storage_finding(resource_id: str, gib: int, price: str) -> dict[str, object]:
    monthly = Decimal(gib) * Decimal(price)
    weekly = (monthly * 7 / DAYS_PER_MONTH).quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)
    return {
        "resource_id": resource_id,
        "resource_type": "S3 prefix",
        "estimated_waste": weekly,
        "evidence": {"bytes": gib * 1024**3, "monthly_cost": float(monthly)},
    }


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, empty_marts: Path
) -> Iterator[tuple[WeeklyReport, str, str]]:
    directory = tmp_path_factory.mktemp("run_rate")
    config = load_config(write_config(directory, "{}\n"))
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        m = Marts(con)
        m.resource("i-spend", team="nlp", project="llm")
        m.bill("i-spend", MON, W48.end, 100.0)  # 16,800 of spend: every waste below fits in it
        m.flush()
        put_findings(
            con, W48, "STO001",
            [_storage_finding("s3://ckpt/llm/run-1/", 10 * TIB, "0.023"),
             _storage_finding("s3://ckpt/llm/run-2/", 3 * TIB, "0.023")],
        )  # fmt: skip
        put_findings(con, W48, "STO002", [_storage_finding("s3://scratch/laion-copy/", 2 * TIB, "0.023")])
        put_findings(con, W48, "STO003", [_storage_finding("s3://ckpt/llm/run-0/", 4 * TIB, "0.019")])
        put_findings(
            con, W48, "GPU001",
            [{"resource_id": "i-idle", "estimated_waste": 8640},
             {"resource_id": "i-warm-pool", "estimated_waste": 700}],
        )  # fmt: skip
        record(con, resolve(con, "GPU001:i-warm-pool"), date(2026, 12, 31), "warm pool", "test")
        result = write_report(con, config, W48)
    finally:
        con.close()
    week = config.reports_path / "2026-W48"
    yield (
        result,
        (week / "rules.html").read_text(encoding="utf-8"),
        (week / "report-full.md").read_text(encoding="utf-8"),
    )


MONTHLY = {
    "STO001": Decimal("306.18"),  # 13 TiB x 0.023 = 306.176
    "STO002": Decimal("47.10"),  # 2 TiB x 0.023 = 47.104
    "STO003": Decimal("77.82"),  # 4 TiB x 0.019 = 77.824
    "GPU001": Decimal("37571.66"),  # 8,640 x 30.44 / 7 (the acknowledged 700 left out)
}
WEEKLY = {
    "STO001": Decimal("70.41"),
    "STO002": Decimal("10.83"),
    "STO003": Decimal("17.90"),
    "GPU001": Decimal("8640.00"),
}


def test_by_rule_carries_the_monthly_run_rate(report: tuple[WeeklyReport, str, str]) -> None:
    r, _, _ = report
    by_rule = {x["rule_id"]: x for x in r.by_rule}
    assert {k: (v["waste"], v["monthly_run_rate"]) for k, v in by_rule.items()} == {
        k: (WEEKLY[k], MONTHLY[k]) for k in MONTHLY
    }
    # for storage the run-rate is the bytes' monthly cost (what the evidence states per finding)
    for rule_id in ("STO001", "STO002", "STO003"):
        monthly_cost = sum(
            Decimal(str(f["evidence"]["monthly_cost"])) for f in r.findings if f["rule_id"] == rule_id
        )
        assert by_rule[rule_id]["monthly_run_rate"] == monthly_cost.quantize(CENT, rounding=ROUND_HALF_UP)
    # the acknowledged finding is in neither the week's waste nor its run-rate
    assert by_rule["GPU001"]["acknowledged_waste"] == Decimal("700.00")


def test_html_shows_the_run_rate_next_to_the_weeks_waste(report: tuple[WeeklyReport, str, str]) -> None:
    _, html, _ = report
    [table] = re.findall(r'<table id="waste-by-rule">.*?</table>', html, flags=re.S)
    assert "Monthly run-rate <small>(× 30.44 ÷ 7)</small>" in table
    cells = {
        rule: (waste, monthly)
        for rule, waste, monthly in re.findall(
            r'<tr data-rule="(\w+)">.*?<td class="num waste">([^<]+)</td><td class="num monthly">([^<]+)</td>',
            table,
            flags=re.S,
        )
    }
    assert cells == {k: (f"USD {WEEKLY[k]:,.2f}", f"USD {MONTHLY[k]:,.2f}") for k in MONTHLY}
    assert 'id="run-rate-note"' in html and "what deleting the flagged bytes" in html


def test_markdown_shows_the_run_rate(report: tuple[WeeklyReport, str, str]) -> None:
    _, _, md = report
    assert "| Rule | Name | Category | Waste this week | Monthly run-rate (× 30.44 ÷ 7) |" in md
    assert "| STO001 | orphaned-checkpoint | orphaned | 70.41 | 306.18 | 2 / 0 / 0 | USD |" in md
    assert "| GPU001 | idle-gpu-instance | idle | 8,640.00 | 37,571.66 | 1 / 0 / 0 | USD |" in md
    assert "Monthly run-rate = the week's waste × 30.44 ÷ 7" in md
