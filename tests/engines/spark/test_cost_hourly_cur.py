"""`engine: spark` on AWS Cost and Usage Reports: cost_hourly's bill spread computed on Spark (local mode) from
CUR 2.0 (Parquet with MAP columns, CSV.gz with JSON text, a header without the promoted columns) and legacy
CUR files (the CSV flavour with `resource_tags_*` columns, the Athena Parquet flavour with '' for no value)
equals DuckDB's, row for row and to the warehouse's 12 decimals, tags included."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.errors import WarehouseError
from pipelines.transform import build_mart
from pipelines.warehouse import connect
from tests.engines.spark.test_cost_hourly import _kind
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
    more decimals than the warehouse keeps and one in exponent form."""
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
    return out


def _equal_on_both_engines(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> int:
    """Build cost_hourly of the project in `tmp_path` on DuckDB, then on Spark: a view with the same rows."""
    config = load_config(tmp_path / "wastewatch.yaml")
    n = build_mart(con, "cost_hourly", config)
    con.execute("create table expected as select * from cost_hourly")
    on_spark = config.model_copy(
        update={"engine": "spark", "spark": spark_helper.settings(tmp_path / "marts")}
    )
    assert build_mart(con, "cost_hourly", on_spark) == n > 0
    assert _kind(con, "cost_hourly") == "view"
    for a, b in (("cost_hourly", "expected"), ("expected", "cost_hourly")):
        differ = con.execute(f"from {a} except all from {b} order by all limit 5").fetchall()
        assert differ == [], f"rows of {a} that are not in {b}: {differ}"
    return n


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
        _equal_on_both_engines(con, tmp_path)
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
    """The legacy CUR: the FinOps Foundation's anonymised CSV sample (`lineItem/*` names, resource_tags_*
    columns) and CUR for Athena Parquet (typed times and costs, string figures with '' for no value, an
    RI-covered line, a tag column)."""
    lines = [athena_line(i, f"2026-11-03 {i:02d}:00:00", "4.1", team="ml" if i % 2 else "") for i in range(8)]
    lines.append(athena_line(99, "2026-11-03 09:00:00", "3.3", kind="DiscountedUsage", ri="arn:aws:ec2:ri/1",
                             ri_effective="2.25"))  # fmt: skip
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
    }
    report, landed = ingest_project(tmp_path, sources, files, "select count(*) as n from billing_lines")
    assert landed[0]["n"] > 1000, report
    con = connect(load_config(tmp_path / "wastewatch.yaml").warehouse_path)
    try:
        _equal_on_both_engines(con, tmp_path)
        teams = con.execute(
            "select distinct team from cost_hourly where team is not null order by 1"
        ).fetchall()
        assert teams == [("ml",), ("vision",)], teams  # the Athena file's resource_tags_user_team, the CSV's
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
    tags = [(" vision ", "llm"), ("vision", ""), ("", ""), ("", " llm")]
    lines = [
        f"t-{i},Usage,2026-11-04T{i:02d}:00:00Z,2026-11-04T{i + 1:02d}:00:00Z,444455556666,AmazonEC2,"
        f"USE1-BoxUsage:g5.xlarge,i-tagged,1.006,USD,1.006,g5.xlarge,us-east-1,{team},{project}"
        for i, (team, project) in enumerate(tags)
    ]
    return "\n".join([header, *lines]) + "\n"


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
