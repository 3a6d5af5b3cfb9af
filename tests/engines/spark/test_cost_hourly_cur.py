"""`engine: spark` on AWS Cost and Usage Reports: cost_hourly's bill spread computed on Spark (local mode) from
CUR 2.0 (Parquet with MAP columns, CSV.gz with JSON text, a header without the promoted columns) and legacy
CUR files (the CSV flavour with `resource_tags_*` columns, the Athena Parquet flavour with '' for no value)
equals DuckDB's, row for row and to the warehouse's 12 decimals, tags included."""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pipelines.config import load_config
from pipelines.errors import WarehouseError
from pipelines.transform.build import build_mart
from pipelines.warehouse import connect
from tests.helpers import spark as spark_helper
from tests.helpers.billing_exports import CUR2_HEADER, Cur2Export, csv_bytes, hours, line
from tests.helpers.ingest_run import ingest_project
from tests.helpers.paths import FIXTURES
from tests.helpers.provider_exports import athena_cur_parquet, athena_line

ISO = "%Y-%m-%dT%H:%M:%SZ"
T0 = datetime(2026, 11, 2)
LEGACY_SAMPLE = FIXTURES / "billing" / "aws" / "aws_cur_legacy_sample-anonymous-aws-export-dataset.csv"


def _spanning(row: dict[str, str], start: datetime, end: datetime, **fields: str) -> dict[str, str]:
    """`row` over [start, end) instead of its hour, with `fields` replaced."""
    return (
        row
        | {"line_item_usage_start_date": start.strftime(ISO), "line_item_usage_end_date": end.strftime(ISO)}
        | fields
    )


def _cur2_lines(first: int) -> list[dict[str, str]]:
    """A month's mix of CUR 2.0 line item types: hourly instances with tags (quotes, accents, none),
    Savings Plan covered usage and its negation, split cost allocation rows, a volume billed by the day
    and a charge by the day on an instance that ran 30 hours, a monthly fee and tax without a resource, a credit, a cost with
    more decimals than the warehouse keeps and one in exponent form, amounts whose last decimal a DOUBLE's
    rounding decides."""
    t = T0 + timedelta(days=first)
    out = hours(f"i-gpu-{first}", t, 30, "32.77", tags={"user:team": "ml-platform", "user:project": "llm"})
    out += hours(f"i-sp-{first}", t, 12, "12.5", kind="SavingsPlanCoveredUsage", sp_effective="8.125",
                 tags={"user:team": 'vision "core"', "user:owner": "zoë"})  # fmt: skip
    out += [
        line(
            f"i-sp-{first}",
            t + timedelta(hours=i),
            "-12.5",
            kind="SavingsPlanNegation",
            line_id=f"neg-{first}-{i}",
            sp_effective="0",
        )  # fmt: skip
        for i in range(12)
    ]
    out += hours(f"i-gpu-{first}/pod-1", t, 6, "3.1", split_parent=f"i-gpu-{first}")
    out.append(
        _spanning(
            line(f"vol-{first}", t, "4.8", line_id=f"vol-{first}"),
            t,
            t + timedelta(days=1),
            line_item_usage_type="USE1-EBS:VolumeUsage.gp3",
            product_instance_type="",
        )  # fmt: skip
    )
    # a charge by the day on the instance itself: spread over the hours the instance ran (resource_hours)
    out.append(
        _spanning(
            line(f"i-gpu-{first}", t, "9.6", line_id=f"ebs-opt-{first}"),
            t,
            t + timedelta(days=1),
            line_item_usage_type="USE1-EBSOptimized:p4d.24xlarge",
        )
    )
    month = T0.replace(day=1)
    out.append(
        _spanning(
            line("", month, "100", kind="Fee", line_id=f"fee-{first}"),
            month,
            month + timedelta(days=30),
            line_item_product_code="AWSSupportBusiness",
            product_instance_type="",
        )  # fmt: skip
    )
    out.append(_spanning(line("", month, "7.2", kind="Tax", line_id=f"tax-{first}", tags={}), month,
                         month + timedelta(days=30), product_instance_type="", line_item_usage_type=""))  # fmt: skip
    out.append(line(f"i-gpu-{first}", t, "-5", kind="Credit", line_id=f"credit-{first}"))
    odd = line(f"i-odd-{first}", t, "0.12345678901234567", line_id=f"odd-{first}")
    out.append(odd | {"pricing_public_on_demand_cost": "1.5E-7", "line_item_currency_code": ""})
    # amounts whose DOUBLE, times 10^12, lies next to a half: DuckDB's cast and Spark's own round them apart
    for i, (cost, listed) in enumerate(
        (("8.1244676460895", "97.03138012352849"), ("916.8162261800614", "1.5"))
    ):
        near = line(f"i-near-{first}", t + timedelta(hours=i), cost, line_id=f"near-{first}-{i}")
        out.append(near | {"pricing_public_on_demand_cost": listed})
    return out


def test_spark_cost_hourly_equals_duckdb_on_cur2(spark: Any, tmp_path: Path) -> None:
    """CUR 2.0 as Data Exports writes it: a Parquet export (typed times and costs, MAP product and tags)
    and a CSV.gz export (the maps as JSON text), beside a CSV whose header lacks the promoted
    product_instance_type and product_region_code (read from the product map)."""
    Cur2Export(tmp_path / "parquet", parquet=True).deliver("2026-11", [_cur2_lines(0), _cur2_lines(1)], "e1")
    Cur2Export(tmp_path / "csv").deliver("2026-11", [_cur2_lines(2)], "e2")
    bare = [c for c in CUR2_HEADER if c != "product_instance_type"]
    rows = []
    for r in _cur2_lines(3):
        product = json.loads(r["product"]) | {"instance_type": r["product_instance_type"] or None}
        rows.append(
            {k: v for k, v in r.items() if k != "product_instance_type"} | {"product": json.dumps(product)}
        )
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "bill.csv").write_bytes(csv_bytes(rows, header=bare, gz=False))
    sources = (
        "  - {name: cur-parquet, kind: aws_cur2, uri: parquet/}\n"
        "  - {name: cur-csv, kind: aws_cur2, uri: csv/}\n"
        "  - {name: cur-plain, kind: aws_cur2, uri: plain/, options: {manifest: ignore}}\n"
        "tags: {team: [user:team], project: [user:project], owner: [user:owner]}\n"
    )
    report, landed = ingest_project(tmp_path, sources, {}, "select count(*) as n from billing_lines")
    assert landed == [{"n": 4 * len(_cur2_lines(0))}], report
    con = connect(load_config(tmp_path / "wastewatch.yaml").warehouse_path)
    try:
        spark_helper.cost_hourly_on_both_engines(con, tmp_path)
        # the mix reaches every allocation and the figures a plain spread would get wrong
        got = dict(con.execute("select allocation, count(*) from cost_hourly group by 1").fetchall())
        assert {"hourly", "resource_hours", "period"} <= set(got), got
        teams = {r[0] for r in con.execute("select distinct team from cost_hourly").fetchall()}
        assert {"ml-platform", 'vision "core"'} <= teams, teams
        owners = {r[0] for r in con.execute("select distinct owner from cost_hourly").fetchall()}
        assert "zoë" in owners, owners
        types = {r[0] for r in con.execute("select distinct instance_type from cost_hourly").fetchall()}
        assert "p4d.24xlarge" in types, types
        # split rows carry no cost; SP covered usage its effective cost; the negation nothing effective
        assert con.execute(
            "select sum(billed_cost), sum(effective_cost) from cost_hourly where resource_id like 'i-sp-%'"
        ).fetchone() == (0, Decimal(4 * 12) * Decimal("8.125"))
    finally:
        con.close()


def test_spark_cost_hourly_equals_duckdb_on_legacy_cur(spark: Any, tmp_path: Path) -> None:
    """The legacy CUR: the FinOps Foundation's anonymised CSV sample (`lineItem/*` names), koku's
    snake_case file and its file whose header glues two columns (a missing comma, repaired), tag columns
    padded with blanks and Unicode spaces, the quirks of _legacy_quirks, and CUR for Athena Parquet (typed
    times and costs, string figures and the split-cost parent with '' for no value, an RI-covered line, a
    fee with a blank reservation ARN, a tag column)."""
    lines = [athena_line(i, f"2026-11-03 {i:02d}:00:00", "4.1", team="ml" if i % 2 else "") for i in range(8)]
    lines.append(athena_line(99, "2026-11-03 09:00:00", "3.3", kind="DiscountedUsage", ri="arn:aws:ec2:ri/1",
                             ri_effective="2.25"))  # fmt: skip
    # a fee whose reservation ARN is a blank: no reservation (the ledger's check and the staging agree)
    lines.append(athena_line(98, "2026-11-03 10:00:00", "50", kind="Fee", ri=" "))
    athena_cur_parquet(tmp_path / "athena" / "year=2026" / "month=11" / "cur-00001.snappy.parquet", lines)
    sources = (
        "  - {name: legacy-csv, kind: aws_cur, uri: legacy/, options: {manifest: ignore}}\n"
        "  - {name: legacy-athena, kind: aws_cur, uri: athena/, options: {manifest: ignore}}\n"
        "tags: {team: [user:team, team], project: [user:project]}\n"
    )
    files = {
        "legacy/sample.csv": LEGACY_SAMPLE,
        "legacy/alt-columns.csv": FIXTURES / "billing" / "aws" / "2022-07-01-alt-columns.csv",
        "legacy/tagged.csv": _legacy_tagged(),
        "legacy/koku-glued-header.csv": FIXTURES / "billing" / "aws" / "test_cur.csv",
        **_legacy_quirks(),
    }
    report, landed = ingest_project(tmp_path, sources, files, "select count(*) as n from billing_lines")
    assert landed[0]["n"] > 1000, report
    con = connect(load_config(tmp_path / "wastewatch.yaml").warehouse_path)
    try:
        spark_helper.cost_hourly_on_both_engines(con, tmp_path)
        teams = con.execute(
            "select distinct team from cost_hourly where team is not null order by 1"
        ).fetchall()
        # Athena's resource_tags_user_team, the CSVs' (user:team before user:Team, which Spark reads apart)
        assert teams == [("ml",), ("vision",)], teams
        # the Athena lines are not split rows: their cost is billed (4.1 an hour for 8 hours, 3.3 RI-covered,
        # the fee of 50)
        athena = con.execute(
            "select sum(billed_cost) from cost_hourly where resource_id = 'i-0athena'"
        ).fetchone()
        assert athena == (Decimal("86.1"),), athena
        projects = con.execute(
            "select distinct project from cost_hourly where project is not null"
        ).fetchall()
        assert projects == [("llm",)], projects
    finally:
        con.close()


def _legacy_tagged() -> str:
    """Legacy CUR CSV lines with `resourceTags/*` columns: values padded with blanks, an empty one, none."""
    header = (
        "identity/LineItemId,lineItem/LineItemType,lineItem/UsageStartDate,lineItem/UsageEndDate,"
        "lineItem/UsageAccountId,lineItem/ProductCode,lineItem/UsageType,lineItem/ResourceId,"
        "lineItem/UnblendedCost,lineItem/CurrencyCode,pricing/publicOnDemandCost,product/instanceType,"
        "product/region,resourceTags/user:team,resourceTags/user:project"
    )
    tags = [(" vision ", "llm"), ("vision", ""), ("", ""), ("", " llm"), ("\u00a0vision\u00a0", "\u3000llm")]
    lines = [
        f"t-{i},Usage,2026-11-04T{i:02d}:00:00Z,2026-11-04T{i + 1:02d}:00:00Z,444455556666,AmazonEC2,"
        f"USE1-BoxUsage:g5.xlarge,i-tagged,1.006,USD,1.006,g5.xlarge,us-east-1,{team},{project}"
        for i, (team, project) in enumerate(tags)
    ]
    return "\n".join([header, *lines]) + "\n"


def _legacy_quirks() -> dict[str, str]:
    """Legacy CUR CSVs the billing reader reads as they are: tag columns whose names differ only in case
    (two tags to AWS), separated by semicolons (a re-saved file), with rows shorter than the header (the
    trailing tag columns left off), and starting with a byte order mark."""
    header = (
        "identity/LineItemId;lineItem/LineItemType;lineItem/UsageStartDate;lineItem/UsageEndDate;"
        "lineItem/ResourceId;lineItem/UnblendedCost;lineItem/CurrencyCode;resourceTags/user:Team;"
        "resourceTags/user:team;resourceTags/user:project"
    )
    rows = [
        "q-0;Usage;2026-11-05T00:00:00Z;2026-11-05T01:00:00Z;i-quirk;2.5;USD;Vision;vision;llm",
        "q-1;Usage;2026-11-05T01:00:00Z;2026-11-05T02:00:00Z;i-quirk;2.5;USD;;vision;",
        "q-2;Usage;2026-11-05T02:00:00Z;2026-11-05T03:00:00Z;i-quirk;2.5;USD;Vision",
        "q-3;Usage;2026-11-05T03:00:00Z;2026-11-05T04:00:00Z;i-quirk;2.5;USD",
    ]
    return {"legacy/quirks.csv": "\ufeff" + "\n".join([header, *rows]) + "\n"}


def test_spark_refuses_tags_it_writes_otherwise(spark: Any, tmp_path: Path) -> None:
    """Lines whose tags' text, as Spark writes it, no tag set of the warehouse holds fail the mart naming
    the file, instead of losing their team silently."""
    Cur2Export(tmp_path / "csv").deliver("2026-11", [_cur2_lines(0)], "e1")
    sources = "  - {name: cur-csv, kind: aws_cur2, uri: csv/}\ntags: {team: [user:team]}\n"
    ingest_project(tmp_path, sources, {}, "select 1")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = connect(config.warehouse_path)
    try:
        con.execute(
            "update billing_tag_sets set x_tags_raw = x_tags_raw || ' ' where x_tags_raw like '%ml-platform%'"
        )
        on_spark = config.model_copy(
            update={"engine": "spark", "spark": spark_helper.settings(tmp_path / "marts")}
        )
        with pytest.raises(
            WarehouseError, match=r"cur2-00001\.csv\.gz: 30 lines whose tags, as Spark wrote them"
        ):
            build_mart(con, "cost_hourly", on_spark)
    finally:
        con.close()


CHARGE_PERIODS = FIXTURES / "billing" / "charge_periods" / "native"


def _legacy_without_billing_period() -> str:
    """A legacy CUR CSV without `bill/BillingPeriod*` columns: an hour of usage and a one-year fee charged
    from September 10 (its billing period is the month its charge starts, as the staging derives it)."""
    header = (
        "identity/LineItemId,lineItem/LineItemType,lineItem/UsageStartDate,lineItem/UsageEndDate,"
        "lineItem/UsageAccountId,lineItem/ProductCode,lineItem/UsageType,lineItem/ResourceId,"
        "lineItem/UnblendedCost,lineItem/CurrencyCode"
    )
    rows = [
        "b-0,Usage,2026-09-10T00:00:00Z,2026-09-10T01:00:00Z,444455556666,AmazonEC2,USE1-BoxUsage:g5.xlarge,"
        "i-bare,1.006,USD",
        "b-1,Fee,2026-09-10T00:00:00Z,2027-09-10T00:00:00Z,444455556666,AmazonEC2,USE1-HeavyUsage:g5.xlarge,"
        "fee-1y,1200,USD",
    ]
    return "\n".join([header, *rows]) + "\n"


def test_spark_spreads_a_one_year_fee_over_its_billing_period_as_duckdb_does(
    spark: Any, tmp_path: Path
) -> None:
    """CUR lines longer than 31 days (a 3-year RI bought upfront, a 1-year Savings Plan upfront fee, a
    one-year RIFee in a Parquet export, a one-year fee in a legacy CSV without billing period columns) land
    in the month they were billed on Spark as on DuckDB, hour by hour to the warehouse's 12 decimals, in CUR
    2.0 CSV.gz and Parquet and in the legacy CSV."""
    month = datetime(2026, 11, 1)
    ri = _spanning(
        line("ri-1y", month, "8760", kind="RIFee", line_id="ri-1y"),
        datetime(2026, 11, 5),
        datetime(2027, 11, 5),
        product_instance_type="",
    )
    Cur2Export(tmp_path / "parquet", parquet=True).deliver(
        "2026-11", [hours("i-p", month, 3, "2.5") + [ri]], "e1"
    )
    sources = (
        "  - {name: cur2, kind: aws_cur2, uri: cur2/}\n"
        "  - {name: cur-parquet, kind: aws_cur2, uri: parquet/}\n"
        "  - {name: legacy, kind: aws_cur, uri: legacy/, options: {manifest: ignore}}\n"
        "  - {name: legacy-bare, kind: aws_cur, uri: bare/, options: {manifest: ignore}}\n"
    )
    (tmp_path / "cur2").mkdir()
    (tmp_path / "cur2" / "cur2-00001.csv.gz").write_bytes(
        gzip.compress((CHARGE_PERIODS / "aws_cur2.csv").read_bytes())
    )
    files = {
        "legacy/cur.csv": CHARGE_PERIODS / "aws_cur_legacy.csv",
        "bare/cur.csv": _legacy_without_billing_period(),
    }
    report, landed = ingest_project(tmp_path, sources, files, "select count(*) as n from billing_lines")
    assert landed == [{"n": 2 * 9 + 4 + 2}], report.summary()
    con = connect(load_config(tmp_path / "wastewatch.yaml").warehouse_path)
    try:
        spark_helper.cost_hourly_on_both_engines(con, tmp_path)
        # each term's fee in its billing period's hours: the 3-year RI and the 1-year Savings Plan of both
        # fixtures in March 2026, the RIFee in November, the fee without a billing period in September
        purchases = con.execute(
            "select date_trunc('month', hour), count(distinct hour), sum(billed_cost) from cost_hourly "
            "where charge_category = 'Purchase' group by 1 order by 1"
        ).fetchall()
        assert purchases == [
            (datetime(2026, 3, 1), 744, 2 * Decimal("599610")),
            (datetime(2026, 9, 1), 720, Decimal("1200")),
            (datetime(2026, 11, 1), 720, Decimal("8760")),
        ], purchases
        assert con.execute(
            "select min(hour), max(hour), count(*) from cost_hourly where resource_id in ('ri-1y', 'fee-1y') "
            "group by resource_id order by 1"
        ).fetchall() == [
            (datetime(2026, 9, 1), datetime(2026, 9, 30, 23), 720),
            (datetime(2026, 11, 1), datetime(2026, 11, 30, 23), 720),
        ]
        # no hour of a term after the month it was billed (the 3-year RI would otherwise reach 2029)
        assert con.execute("select max(hour) from cost_hourly").fetchone() == (datetime(2026, 11, 30, 23),)
        totals = "select sum(billed_cost), sum(effective_cost) from {}"
        assert (
            con.execute(totals.format("cost_hourly")).fetchall()
            == con.execute(totals.format("billing_line_items")).fetchall()
        )
    finally:
        con.close()
