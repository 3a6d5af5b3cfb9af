"""The report's data-quality section shows the FOCUS conformance check's figures for the week: per
billing source and broken rule, the lines and the spend they carry (Markdown and HTML)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.report import write_report
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.report import W48

HEADER = (
    "BilledCost,EffectiveCost,ListCost,ContractedCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,"
    "ChargePeriodStart,ChargePeriodEnd,ChargeCategory,PricingCategory,ServiceCategory,ServiceSubcategory,"
    "ServiceName,ProviderName,ResourceId"
)
BP = "2026-11-01T00:00:00Z,2026-12-01T00:00:00Z"
# two lines in 2026-W48, one of them without ListCost/ContractedCost and with a pre-1.2 subcategory; one
# line of the week before, which the week's figures leave out
BILL = "\n".join(
    [
        HEADER,
        f"30,30,30,30,USD,{BP},2026-11-24T10:00:00Z,2026-11-24T11:00:00Z,Usage,Standard,Compute,Virtual Machines,EC2,AWS,i-1",
        f"10,10,,,USD,{BP},2026-11-25T00:00:00Z,2026-11-26T00:00:00Z,Usage,Standard,Storage,Block Storage,EBS,AWS,vol-1",
        f"99,99,,,USD,{BP},2026-11-17T00:00:00Z,2026-11-18T00:00:00Z,Usage,Standard,Storage,Block Storage,EBS,AWS,vol-1",
    ]
)


def test_data_quality_section_shows_focus_conformance_per_source_and_rule(
    tmp_path: Path, empty_marts: Path
) -> None:
    (tmp_path / "landing").mkdir()
    (tmp_path / "landing" / "focus-2026-11.csv").write_text(BILL + "\n", encoding="utf-8")
    write_config(tmp_path, "sources:\n  - {name: acme-focus, kind: focus, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        assert not ingest(con, config).rejected
        report = write_report(con, config, W48)
    finally:
        con.close()
    got = {(c["source"], c["rule"]): (c["lines"], c["spend"], c["source_lines"], c["source_spend"], c["spend_pct"])
           for c in report.focus_conformance}  # fmt: skip
    assert got == {
        ("acme-focus", "list_contracted"): (1, Decimal("10"), 2, Decimal("40"), Decimal("25.0")),
        ("acme-focus", "service_subcategory"): (1, Decimal("10"), 2, Decimal("40"), Decimal("25.0")),
    }
    week = tmp_path / "reports" / "2026-W48"
    md = (week / "report-full.md").read_text(encoding="utf-8")
    assert "FOCUS 1.2 conformance: 2 rule(s) broken by this week's billing lines" in md
    assert (
        "| `acme-focus` | ListCost and ContractedCost are set (list\\_contracted) | 1 of 2 | "
        "USD 10.00 of USD 40.00 (25.0 %) |"
    ) in md
    html = (week / "quality.html").read_text(encoding="utf-8")
    assert '<table id="focus-conformance">' in html
    assert '<tr data-source="acme-focus" data-rule="service_subcategory">' in html
    assert "USD 10.00 <small>of USD 40.00 (25.0 %)</small>" in html


def test_a_week_without_broken_rules_says_so(tmp_path: Path, empty_marts: Path) -> None:
    (tmp_path / "landing").mkdir()
    (tmp_path / "landing" / "focus-2026-11.csv").write_text(
        "\n".join(BILL.split("\n")[:2]) + "\n", encoding="utf-8"
    )
    write_config(tmp_path, "sources:\n  - {name: acme-focus, kind: focus, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        assert not ingest(con, config).rejected
        report = write_report(con, config, W48)
    finally:
        con.close()
    assert report.focus_conformance == []
    md = (tmp_path / "reports" / "2026-W48" / "report-full.md").read_text(encoding="utf-8")
    assert "Every billing line of the week follows the FOCUS 1.2 rules the conformance check applies." in md
