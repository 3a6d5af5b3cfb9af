"""FOCUS 1.2 conformance of what the billing readers land, on the real samples, and the conformance check.

The readers fill ContractedCost (AWS, GCP), ServiceSubcategory (every provider; FOCUS 1.0 files derive it),
FOCUS unit format units, one category per Azure ServiceName, no pricing quantity on tax lines and one
invoice issuer per provider (docs/billing.md, "FOCUS conformance"). Expected figures are computed here
from the files with Python's csv module and Decimal, independently of the staging SQL. The check's
figures are asserted on a crafted file that breaks each rule once.
"""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.ingest.billing.checks import focus_conformance, focus_conformance_rows
from pipelines.warehouse import CATALOG_DIR
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FIXTURES

BILLING = FIXTURES / "billing"
D6 = Decimal("0.000001")


def _load(tmp_path: Path, kind: str, files: list[Path]) -> duckdb.DuckDBPyConnection:
    landing = tmp_path / "landing"
    landing.mkdir()
    for f in files:
        (landing / f.name).write_bytes(f.read_bytes())
    write_config(tmp_path, f"currency: USD\nsources:\n  - {{name: s, kind: {kind}, uri: landing/}}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    return con


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_bytes().decode("utf-8-sig"), newline="")))


def _squash(row: dict[str, str]) -> dict[str, str]:
    return {re.sub(r"[^a-z0-9]", "", (k or "").lower()): v for k, v in row.items() if k}


def _d(v: str | None) -> Decimal:
    return Decimal(v) if v not in (None, "") else Decimal(0)


def _one(con: duckdb.DuckDBPyConnection, sql: str) -> object:
    return con.execute(sql).fetchall()[0][0]


def _set(con: duckdb.DuckDBPyConnection, sql: str) -> set[object]:
    return {r[0] for r in con.execute(sql).fetchall()}


def _rules(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return {r["rule"]: r["lines"] for r in focus_conformance_rows(con)}


# -- the catalogues --------------------------------------------------------------------------------------


def test_every_catalogued_subcategory_is_one_its_focus_category_allows() -> None:
    with (CATALOG_DIR / "focus_service_subcategories.csv").open(encoding="utf-8") as f:
        allowed = {(r["service_category"], r["service_subcategory"]) for r in csv.DictReader(f)}
    assert len(allowed) == 64 and ("Compute", "Virtual Machines") in allowed
    with (CATALOG_DIR / "service_categories.csv").open(encoding="utf-8") as f:
        services = list(csv.DictReader(f))
    wrong = [r for r in services if (r["service_category"], r["service_subcategory"]) not in allowed]
    assert wrong == []
    keys = [(r["provider"], r["service"]) for r in services]
    assert len(keys) == len(set(keys))  # one category per service name
    with (CATALOG_DIR / "pricing_units.csv").open(encoding="utf-8") as f:
        units = list(csv.DictReader(f))
    assert all(u["focus_unit"].strip() == u["focus_unit"] != "" for u in units)
    assert len({(u["provider"], u["unit"]) for u in units}) == len(units)


# -- AWS -------------------------------------------------------------------------------------------------

AWS_SAMPLE = BILLING / "aws" / "aws_cur_legacy_sample-anonymous-aws-export-dataset.csv"


def test_aws_legacy_cur_lines_carry_contracted_cost_focus_units_and_tax_without_quantity(
    tmp_path: Path,
) -> None:
    con = _load(tmp_path, "aws_cur", [AWS_SAMPLE])
    # ContractedCost = UnblendedRate x UsageAmount (no rate: the billed cost), computed from the file
    expected, tax_lines = Decimal(0), 0
    for raw in _rows(AWS_SAMPLE):
        r = _squash(raw)
        billed = _d(r.get("lineitemnetunblendedcost") or r.get("lineitemunblendedcost"))
        rate, usage = r.get("lineitemunblendedrate"), r.get("lineitemusageamount")
        if r["lineitemlineitemtype"] == "Tax":
            tax_lines += 1
            expected += billed
        elif rate and usage and Decimal(rate) >= 0:
            expected += Decimal(rate) * Decimal(usage)
        else:
            expected += billed
    got = _one(con, "select sum(contracted_cost) from billing_line_items")
    assert abs(got - expected) < Decimal("0.000001") * 1281
    assert (
        _one(
            con, "select count(*) from billing_line_items where contracted_cost is null or list_cost is null"
        )
        == 0
    )
    assert (
        _one(
            con,
            "select count(*) from billing_line_items where contracted_unit_price is not null "
            "and abs(contracted_cost - contracted_unit_price * pricing_quantity) > 0.000001",
        )
        == 0
    )
    # tax: no PricingQuantity, PricingUnit or unit prices (FOCUS 1.2), its contracted cost as billed
    tax = con.execute(
        "select count(*), count(pricing_quantity), count(pricing_unit), count(contracted_unit_price), "
        "count(list_unit_price), count(*) filter (where contracted_cost <> billed_cost) "
        "from billing_line_items where charge_category = 'Tax'"
    ).fetchall()
    assert tax == [(tax_lines, 0, 0, 0, 0, 0)] and tax_lines == 12
    # units in FOCUS unit format: Request / API Request / API Requests -> Requests, GB-Mo -> GB-Months
    assert _set(con, "select distinct pricing_unit from billing_line_items") == {
        "Requests", "GB", "GB-Months", "Object-Months", "Dashboards", "Events", "Keys", "Operations", None,
    }  # fmt: skip
    assert _set(con, "select distinct invoice_issuer_name from billing_line_items") == {
        "Amazon Web Services Canada, Inc."
    }
    assert _set(
        con,
        "select distinct (service_category, service_subcategory) from billing_line_items "
        "where service_name = 'Amazon Simple Storage Service'",
    ) == {("Storage", "Object Storage")}
    assert _rules(con) == {}
    con.close()


def test_legacy_cur_without_invoicing_entity_names_aws_as_invoice_issuer(tmp_path: Path) -> None:
    con = _load(tmp_path, "aws_cur", [BILLING / "aws" / "test_cur.csv"])
    assert con.execute(
        "select distinct provider_name, invoice_issuer_name, publisher_name, service_subcategory, pricing_unit "
        "from billing_line_items"
    ).fetchall() == [
        ("AWS", "Amazon Web Services, Inc.", "Amazon Web Services, Inc.", "Virtual Machines", "GB")
    ]
    assert _rules(con) == {}
    con.close()


@pytest.mark.parametrize("kind", ["aws_cur", "aws_cur2"])
def test_cur_covered_usage_without_a_commitment_arn_has_no_commitment_status(
    kind: str, tmp_path: Path
) -> None:
    """2023-06-01.csv's Savings Plan covered usage names no Savings Plan ARN: FOCUS allows no status then."""
    con = _load(tmp_path, kind, [BILLING / "aws" / "2023-06-01.csv"] if kind == "aws_cur" else [
        BILLING / "aws" / "2022-07-01-alt-columns.csv"
    ])  # fmt: skip
    assert (
        _one(con, "select count(*) from billing_line_items where commitment_discount_status is not null") == 0
    )
    assert _set(con, "select distinct pricing_unit from billing_line_items") == {"Hours"}  # Hrs
    assert _one(con, "select count(*) from billing_line_items where contracted_cost is null") == 0
    assert _rules(con) == {}
    con.close()


# -- Azure -----------------------------------------------------------------------------------------------


def test_azure_service_name_has_one_category_and_units_count_blocks(tmp_path: Path) -> None:
    path = BILLING / "azure" / "EA_AmortizedCost_Small.csv"
    con = _load(tmp_path, "azure", [path])
    # Bandwidth was in three categories (by ConsumedService); one ServiceName -> one category now
    assert (
        con.execute(
            "select service_name from billing_line_items group by 1 having count(distinct service_category) > 1"
        ).fetchall()
        == []
    )
    assert _set(
        con,
        "select distinct (service_category, service_subcategory) from billing_line_items "
        "where service_name = 'Bandwidth'",
    ) == {("Networking", "Data Transfer")}
    assert _set(
        con,
        "select distinct (service_category, service_subcategory) from billing_line_items "
        "where service_name = 'Virtual Machines'",
    ) == {("Compute", "Virtual Machines")}
    # UnitOfMeasure -> FOCUS unit (Microsoft's PricingUnits table): 10K -> 10000 Units, 1 Hour -> Hours
    by_unit: dict[str, str] = {}
    for r in _rows(path):
        by_unit[r["UnitOfMeasure"]] = r["UnitOfMeasure"]
    assert set(by_unit) == {"1 Hour", "10K", "1/Month", "1 GB/Month", "1 GB", "1/Day"}
    assert _set(con, "select distinct pricing_unit from billing_line_items") == {
        "Hours", "10000 Units", "Units/Month", "GB/Month", "GB", "Units/Day",
    }  # fmt: skip
    # the 10K blocks are what UnitPrice prices: ContractedCost = UnitPrice x Quantity
    expected = sum((_d(r["UnitPrice"]) * _d(r["Quantity"]) for r in _rows(path)), Decimal(0))
    got = _one(con, "select sum(contracted_cost) from billing_line_items")
    assert abs(got - expected) < Decimal("0.000001") * 28
    assert _rules(con) == {}
    con.close()


# -- GCP -------------------------------------------------------------------------------------------------


def test_gcp_contracted_cost_is_cost_before_credits_and_google_cloud_issues_the_invoice(
    tmp_path: Path,
) -> None:
    path = BILLING / "gcp" / "2022-08-01_5.csv"
    con = _load(tmp_path, "gcp", [path])
    expected = sum((_d(r["cost"]) for r in _rows(path)), Decimal(0))
    assert _one(con, "select sum(contracted_cost) from billing_line_items") == expected
    assert _one(con, "select count(*) from billing_line_items where contracted_cost is null") == 0
    assert con.execute(
        "select distinct provider_name, invoice_issuer_name, publisher_name, service_category, "
        "service_subcategory, pricing_unit, consumed_unit from billing_line_items"
    ).fetchall() == [
        ("Google Cloud", "Google Cloud", "Google Cloud", "Compute", "Virtual Machines", "GiB", "B")
    ]
    # left as the source has it: 8 lines of usage before 07:00 UTC on Aug 1 (July in Pacific time) are
    # invoiced in 2022-08, so their charge period starts before their billing period
    assert _rules(con) == {"charge_period": 8}
    con.close()


# -- FOCUS -----------------------------------------------------------------------------------------------


def test_focus_1_0_file_gets_the_other_subcategory_of_its_category(tmp_path: Path) -> None:
    con = _load(tmp_path, "focus", [BILLING / "focus_sample_1.0.csv"])
    assert con.execute(
        "select count(*), count(*) filter (where service_subcategory = 'Other (' || service_category || ')') "
        "from billing_line_items"
    ).fetchall() == [(1000, 1000)]
    assert _one(con, "select count(distinct service_subcategory) from billing_line_items") == 10
    # what the sample itself breaks stays visible (its own values are not changed)
    assert _rules(con) == {"list_contracted": 7, "pricing_category": 5, "charge_period": 1}
    con.close()


HEADER = (
    "BilledCost,EffectiveCost,ListCost,ContractedCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,"
    "ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ChargeClass,PricingCategory,ServiceCategory,"
    "ServiceSubcategory,ServiceName,CommitmentDiscountId,CommitmentDiscountCategory,CommitmentDiscountType,"
    "CommitmentDiscountStatus,ProviderName,ResourceId"
)
BP = "2026-11-01T00:00:00Z,2026-12-01T00:00:00Z"
H1 = "2026-11-24T10:00:00Z,2026-11-24T11:00:00Z"
# one conformant line, then one line per broken rule (the spend is each line's absolute effective cost)
CRAFTED = "\n".join(
    [
        HEADER,
        f"10,10,10,10,USD,{BP},{H1},Usage,,Standard,Compute,Virtual Machines,EC2,,,,,AWS,i-ok",
        f"4,4,4,4,USD,{BP},{H1},Usage,,Standard,Storage,Block Storage,EBS,,,,,AWS,vol-1",
        f"3,3,,,USD,{BP},{H1},Usage,,Standard,Compute,Virtual Machines,EC2,,,,,AWS,i-nolist",
        f"2,2,2,2,USD,{BP},2026-11-24T10:00:00Z,2026-11-24T10:00:00Z,Usage,,Standard,Compute,Virtual Machines,EC2,,,,,AWS,i-instant",
        f"0,5,5,5,USD,{BP},{H1},Usage,,Committed,Compute,Virtual Machines,EC2,,,,Used,AWS,i-noid",
        f"1,1,1,1,USD,{BP},{H1},Tax,,Standard,Compute,Virtual Machines,EC2,,,,,AWS,",
        f"-6,-6,6,-6,USD,{BP},{H1},Credit,,,Compute,Virtual Machines,EC2,,,,,AWS,",
        f"7,7,7,7,USD,{BP},{H1},Discount,Refund,Standard,Compute,Virtual Machines,EC2,,,,,AWS,i-discount",
        f"8,8,8,8,USD,{BP},{H1},Usage,,Standard,Cloud,Other (Other),EC2,,,,,AWS,i-cloud",
        f"9,9,9,9,USD,{BP},{H1},Purchase,,,Compute,Virtual Machines,SP,sp-1,Spend,Savings Plan,Used,AWS,sp-1",
    ]
)


def test_conformance_check_counts_the_lines_and_spend_of_each_broken_rule(tmp_path: Path) -> None:
    (tmp_path / "crafted").mkdir()
    crafted = tmp_path / "crafted" / "focus-2026-11.csv"
    crafted.write_text(CRAFTED + "\n", encoding="utf-8")
    con = _load(tmp_path, "focus", [crafted])
    found = focus_conformance_rows(con)
    assert {r["source"] for r in found} == {"s"} and {r["currency"] for r in found} == {"USD"}
    assert {r["source_lines"] for r in found} == {10}
    # absolute effective costs: 10 + 4 + 3 + 2 + 5 + 1 + |-6| + 7 + 8 + 9
    assert {r["source_spend"] for r in found} == {Decimal("55")}
    got = {r["rule"]: (r["lines"], r["spend"]) for r in found}
    assert got == {
        "service_subcategory": (2, Decimal("12")),  # Block Storage; Other (Other) under the unknown Cloud
        "list_contracted": (1, Decimal("3")),
        "charge_period": (1, Decimal("2")),
        "commitment_discount": (2, Decimal("14")),  # a status without an id; a status on a purchase
        "pricing_category": (2, Decimal("10")),  # Standard on tax; none on a purchase
        "cost_sign": (1, Decimal("6")),  # ListCost 6 on a credit of -6
        "charge_category": (1, Decimal("7")),
        "charge_class": (1, Decimal("7")),
        "service_category": (1, Decimal("8")),
    }
    outcome = focus_conformance(con)
    assert not outcome.passed and outcome.metadata["rules_broken"] == 9
    assert "list_contracted: 1 of 10 lines, 3.00 of 55.00 spend (5.5%)" in str(outcome.metadata["s (USD)"])
    con.close()


def test_cur2_contracted_price_is_the_net_rate_when_there_is_one(tmp_path: Path) -> None:
    """A CUR 2.0 export (its Data Exports CSV.gz) with an EDP-discounted line, a Savings Plan covered line
    and a tax line: ContractedUnitPrice x PricingQuantity = ContractedCost, the tax line has neither."""
    from datetime import datetime

    from tests.helpers.billing_exports import CUR2_HEADER, csv_bytes, line

    hour = datetime(2026, 11, 24, 10)
    header = [*CUR2_HEADER, "line_item_net_unblended_rate", "line_item_net_unblended_cost"]
    plain = line("i-1", hour, "2.0")
    edp = {
        **line("i-2", hour, "2.0"),
        "line_item_net_unblended_rate": "1.8",
        "line_item_net_unblended_cost": "1.8",
    }
    covered = {**line("i-3", hour, "3.0", kind="SavingsPlanCoveredUsage", sp_effective="2.0")}
    tax = {
        **line("", hour, "0.5", kind="Tax"),
        "line_item_unblended_rate": "",
        "pricing_unit": "",
        "pricing_public_on_demand_cost": "",
        "line_item_product_code": "AmazonEC2",
    }
    folder = tmp_path / "export" / "data" / "BILLING_PERIOD=2026-11"
    folder.mkdir(parents=True)
    (folder / "export-00001.csv.gz").write_bytes(csv_bytes([plain, edp, covered, tax], header=header))
    con = _load(tmp_path, "aws_cur2", list(folder.glob("*.gz")))
    got = con.execute(
        "select resource_id, charge_category, contracted_unit_price, pricing_quantity, pricing_unit, "
        "contracted_cost, list_cost, billed_cost, commitment_discount_status "
        "from billing_line_items order by resource_id nulls first"
    ).fetchall()
    D = Decimal
    assert got == [
        (None, "Tax", None, None, None, D("0.5"), D("0.5"), D("0.5"), None),
        ("i-1", "Usage", D("2.0"), 1.0, "Hours", D("2.0"), D("2.0"), D("2.0"), None),
        ("i-2", "Usage", D("1.8"), 1.0, "Hours", D("1.8"), D("2.0"), D("1.8"), None),
        ("i-3", "Usage", D("3.0"), 1.0, "Hours", D("3.0"), D("3.0"), D("3.0"), "Used"),
    ]
    assert _rules(con) == {}
    con.close()
