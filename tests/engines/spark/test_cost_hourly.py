"""`engine: spark`: cost_hourly's bill spread computed on Spark (local mode) from the demo's raw FOCUS files
equals DuckDB's, row for row and to the warehouse's 12 decimals; the warehouse reads it as a view over
Hive-partitioned Parquet, and a switch back to DuckDB makes it a table again."""

from __future__ import annotations

import gzip
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.errors import ConfigError, WarehouseError
from pipelines.transform.build import build_mart
from pipelines.warehouse import connect
from tests.helpers import spark as spark_helper
from tests.helpers.ingest_run import ingest_project
from tests.helpers.paths import FIXTURES, FOCUS_SAMPLE


def test_spark_cost_hourly_equals_duckdb(spark: Any, demo_dir: tuple[Path, str], tmp_path: Path) -> None:
    config = spark_helper.demo_copy(demo_dir[0], tmp_path)
    con = connect(config.warehouse_path)
    try:
        duckdb_config = config.model_copy(update={"engine": "duckdb"})
        n_duckdb = build_mart(con, "cost_hourly", duckdb_config)
        con.execute("create table expected as select * from cost_hourly")
        n_spark = build_mart(con, "cost_hourly", config)

        assert spark_helper.mart_kind(con, "cost_hourly") == "view"
        assert n_spark == n_duckdb
        # the scenario exercises every way a line reaches its hours, tags, and the modelled hosts
        kinds = dict(con.execute("select allocation, count(*) from cost_hourly group by 1").fetchall())
        assert set(kinds) == {"hourly", "resource_hours", "period", "model"}, kinds
        assert con.execute(
            "select count(*) from cost_hourly where team is not null and line_items > 0"
        ).fetchone()[0]
        assert con.execute("select count(*) from cost_hourly where instance_type is not null").fetchone()[0]
        # the bill's rows: row for row, both ways (EXCEPT ALL counts duplicates), money at DECIMAL(38, 12)
        for a, b in (("cost_hourly", "expected"), ("expected", "cost_hourly")):
            differ = con.execute(
                f"from {a} where pricing_basis = 'bill' except all from {b} order by all limit 5"
            ).fetchall()
            assert differ == [], f"bill rows of {a} that are not in {b}: {differ}"
        # the modelled hosts' rows are DuckDB's on both engines, but DuckDB sums the hour's watts (DOUBLE) in
        # no fixed order, so two builds can differ in the last decimals of an owned host's cost
        loose = con.execute(
            "select count(*) from (from expected where pricing_basis <> 'bill') as e "
            "full join (from cost_hourly where pricing_basis <> 'bill') as s using (hour, resource_id) "
            "where e.hour is null or s.hour is null or abs(e.effective_cost - s.effective_cost) > 1e-9 "
            "or e.pricing_inputs::json ->> 'entry' is distinct from s.pricing_inputs::json ->> 'entry'"
        ).fetchone()[0]
        assert loose == 0
        types = con.execute("select column_name, column_type from (describe cost_hourly)").fetchall()
        assert types == con.execute("select column_name, column_type from (describe expected)").fetchall()
        totals = con.execute(
            "select sum(effective_cost), sum(billed_cost) from cost_hourly where pricing_basis = 'bill'"
        ).fetchone()
        billed = con.execute(
            "select sum(effective_cost), sum(billed_cost) from billing_line_items"
        ).fetchone()
        assert totals == billed  # the spread adds up to the bill to the last decimal

        # the Parquet Spark wrote, partitioned by month, is what the view reads
        builds = sorted((tmp_path / "marts" / "cost_hourly").iterdir())
        assert len(builds) == 1
        assert [p.name for p in builds[0].iterdir() if p.is_dir()] == ["month=2026-11"]

        # back on DuckDB the mart is a table again, with the same rows
        build_mart(con, "cost_hourly", duckdb_config)
        assert spark_helper.mart_kind(con, "cost_hourly") == "table"
        again = con.execute(
            "select count(*) from (from cost_hourly where pricing_basis = 'bill' except all from expected)"
        ).fetchone()[0]
        assert again == 0
    finally:
        con.close()


def test_spark_cost_hourly_equals_duckdb_on_the_focus_sample(spark: Any, tmp_path: Path) -> None:
    """The FinOps Foundation's FOCUS 1.0 sample (AWS, Azure and OCI lines, literal NULLs, zoneless
    timestamps, several currencies of charge): the same bill rows on both engines."""
    sources = "  - {name: focus-sample, kind: focus, uri: bill/}\n"
    report, landed = ingest_project(
        tmp_path, sources, {"bill/focus_sample.csv": FOCUS_SAMPLE}, "select count(*) as n from billing_lines"
    )
    assert landed == [{"n": 1000}], report
    con = connect(load_config(tmp_path / "wastewatch.yaml").warehouse_path)
    try:
        spark_helper.cost_hourly_on_both_engines(con, tmp_path)
        providers = {r[0] for r in con.execute("select distinct provider from cost_hourly").fetchall()}
        assert len(providers) >= 2, providers
    finally:
        con.close()


def _focus_in_three_formats(dst: Path) -> None:
    """The FOCUS sample in thirds, each as an export writes it: CSV.gz text; Parquet with DOUBLE costs, local
    TIMESTAMPs and the tags as a MAP (AWS's FOCUS export); Parquet with DECIMAL costs, UTC-adjusted
    TIMESTAMPs, the tags as JSON text and the literal text 'NULL' for empty values."""
    dst.mkdir(parents=True)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute("create table f as select row_number() over () as n, * from read_csv($p, nullstr = 'NULL')",
                {"p": str(FOCUS_SAMPLE)})  # fmt: skip
    money = ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost")
    times = ("ChargePeriodStart", "ChargePeriodEnd", "BillingPeriodStart", "BillingPeriodEnd")
    # the CSV's text padded as a hand-edited export can be: blanks, no-break and ideographic spaces, which the
    # reader trims from the currency, the resource id and the tags
    con.execute(
        "update f set BillingCurrency = ' ' || BillingCurrency || chr(160), ResourceId = chr(12288) || ResourceId, "
        "Tags = chr(160) || Tags || ' ' where n % 7 = 0 and n <= 333 and ResourceId is not null and Tags is not null"
    )
    con.execute("copy (select * exclude (n) from f where n <= 333) to $p (header, compression gzip)",
                {"p": str(dst / "part-a.csv.gz")})  # fmt: skip
    con.execute(
        "copy (select * exclude (n, Tags), cast(Tags::json as map(varchar, varchar)) as Tags from f "
        "where n > 333 and n <= 666) to $p (format parquet)",
        {"p": str(dst / "part-b.parquet")},
    )
    replaced = ", ".join(
        [f'cast("{c}" as decimal(24, 11)) as "{c}"' for c in money]
        + [f'cast("{c}" as timestamptz) as "{c}"' for c in times]
        + ["coalesce(ChargeClass, 'NULL') as ChargeClass"]
    )
    con.execute(
        f"copy (select * exclude (n, {', '.join(money + times)}, ChargeClass), {replaced} from f "
        "where n > 666) to $p (format parquet)",
        {"p": str(dst / "part-c.parquet")},
    )
    con.close()


def test_spark_cost_hourly_equals_duckdb_on_focus_parquet(spark: Any, tmp_path: Path) -> None:
    """FOCUS Parquet files are read where they lie in their own types (a DOUBLE or a DECIMAL cost, a local or
    a UTC-adjusted time, tags as a MAP or as text), beside a CSV.gz of the same bill: the same bill rows on
    both engines, tags and all."""
    _focus_in_three_formats(tmp_path / "bill")
    sources = "  - {name: focus-sample, kind: focus, uri: bill/}\ntags: {team: [business_unit], project: [application]}\n"
    report, landed = ingest_project(tmp_path, sources, {}, "select count(*) as n from billing_lines")
    assert landed == [{"n": 1000}], report
    con = connect(load_config(tmp_path / "wastewatch.yaml").warehouse_path)
    try:
        spark_helper.cost_hourly_on_both_engines(con, tmp_path)
        # every file has lines with a team, so a tag set Spark's JSON text of a MAP did not find (its team
        # NULL) would differ above; and the teams are in the rows
        teamed = con.execute(
            "select count(distinct l.x_file_id) from billing_lines l join billing_tag_sets t using (x_tag_set) "
            "where t.team is not null"
        ).fetchone()
        assert teamed == (3,), teamed
        assert con.execute("select count(distinct team) from cost_hourly").fetchone()[0] > 3
    finally:
        con.close()


def test_spark_refuses_a_bill_changed_since_it_was_ingested(
    spark: Any, demo_dir: tuple[Path, str], tmp_path: Path
) -> None:
    """Spark reads the bill where it lies: a file rewritten there after the ingest (one line fewer) fails the
    mart naming it, and the warehouse keeps the mart it had."""
    config = spark_helper.demo_copy(demo_dir[0], tmp_path)
    con = connect(config.warehouse_path)
    try:
        (uri,) = con.execute(
            "select uri from ingest_files where kind = 'focus' and status = 'loaded'"
        ).fetchone()
        changed = tmp_path / "landing" / Path(uri).name
        changed.parent.mkdir()
        lines = gzip.decompress(Path(uri).read_bytes()).decode().splitlines(keepends=True)
        changed.write_bytes(gzip.compress("".join(lines[:-1]).encode()))
        con.execute("update ingest_files set uri = $u where uri = $old", {"u": str(changed), "old": uri})
        landed = len(lines) - 1  # the header
        with pytest.raises(WarehouseError) as failed:
            build_mart(con, "cost_hourly", config)
        message = str(failed.value)
        assert message.startswith(f"{changed}: Spark read {landed - 1:,} lines"), message
        assert f"landed {landed:,} (billed" in message and "run `wastewatch ingest`" in message
        assert spark_helper.mart_kind(con, "cost_hourly") == "table"
    finally:
        con.close()


def test_spark_is_handed_the_lines_of_a_source_with_its_own_date_format(
    spark: Any, demo_dir: tuple[Path, str], tmp_path: Path
) -> None:
    """A source whose dates take `options.date_format` (strftime's forms, which Spark's casts do not read):
    Spark is handed its lines as the warehouse holds them, without opening the file (moved away here), and
    the bill's rows equal DuckDB's."""
    config = spark_helper.demo_copy(demo_dir[0], tmp_path)
    sources = [
        s.model_copy(update={"options": {**s.options, "date_format": "%Y-%m-%dT%H:%M:%SZ"}})
        if s.name == "focus-acme"
        else s
        for s in config.sources
    ]
    con = connect(config.warehouse_path)
    try:
        build_mart(con, "cost_hourly", config.model_copy(update={"engine": "duckdb"}))
        con.execute("create table expected as select * from cost_hourly where pricing_basis = 'bill'")
        for (uri,) in con.execute("select uri from ingest_files where source = 'focus-acme'").fetchall():
            Path(uri).rename(tmp_path / Path(uri).name)
        build_mart(con, "cost_hourly", config.model_copy(update={"sources": sources}))
        assert spark_helper.mart_kind(con, "cost_hourly") == "view"
        for a, b in (("(from cost_hourly where pricing_basis = 'bill')", "expected"),
                     ("expected", "(from cost_hourly where pricing_basis = 'bill')")):  # fmt: skip
            differ = con.execute(f"from {a} except all from {b} order by all limit 5").fetchall()
            assert differ == [], f"rows of {a} that are not in {b}: {differ}"
        assert con.execute("select count(distinct allocation) from expected").fetchone()[0] == 3
    finally:
        con.close()


def test_spark_is_handed_a_gzip_bill_named_in_upper_case(spark: Any, tmp_path: Path) -> None:
    """FOCUS as gzip named `.CSV.GZ` (the ingest reads it; Hadoop would read the bytes as text, as it picks
    the codec by `.gz` in lower case) beside the same export in lower case: the first is handed over, the
    second read where it lies, and the bill's rows equal DuckDB's."""
    lines = FOCUS_SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    half = len(lines) // 2
    bill = tmp_path / "bill"
    bill.mkdir()
    (bill / "FIRST.CSV.GZ").write_bytes(gzip.compress("".join(lines[:half]).encode()))
    (bill / "second.csv.gz").write_bytes(gzip.compress("".join(lines[:1] + lines[half:]).encode()))
    report, landed = ingest_project(
        tmp_path,
        "  - {name: focus, kind: focus, uri: bill/}\n",
        {},
        "select count(*) as n from billing_lines",
    )
    assert landed == [{"n": len(lines) - 1}], report
    con = connect(load_config(tmp_path / "wastewatch.yaml").warehouse_path)
    try:
        spark_helper.cost_hourly_on_both_engines(con, tmp_path)
    finally:
        con.close()


def test_spark_cost_hourly_equals_duckdb_on_azure_and_gcp_exports(spark: Any, tmp_path: Path) -> None:
    """Azure (EA and MCA exports) and Google Cloud exports, which Spark is handed from the warehouse, beside a
    FOCUS bill it reads where it lies: the same rows on both engines, tags' teams included."""
    az, gcp = FIXTURES / "billing" / "azure", FIXTURES / "billing" / "gcp"
    sources = (
        "  - {name: az, kind: azure, uri: az/}\n"
        "  - {name: gcp, kind: gcp, uri: gcp/}\n"
        "  - {name: focus-sample, kind: focus, uri: focus/}\n"
    )
    files: dict[str, str | Path] = {
        f"az/{f.name}": f for f in (az / "EA_AmortizedCost_Small.csv", az / "azure_camelCased.csv")
    }
    files |= {f"gcp/{f.name}": f for f in gcp.glob("*.csv")}
    files["focus/focus_sample.csv"] = FOCUS_SAMPLE
    report, landed = ingest_project(
        tmp_path,
        sources,
        files,
        "select x_source_name as source, count(*) as n from billing_line_items group by 1",
    )
    by_source = {r["source"]: r["n"] for r in landed}
    assert set(by_source) == {"az", "gcp", "focus-sample"} and min(by_source.values()) > 0, report
    con = connect(load_config(tmp_path / "wastewatch.yaml").warehouse_path)
    try:
        spark_helper.cost_hourly_on_both_engines(con, tmp_path)
        providers = {r[0] for r in con.execute("select distinct provider from cost_hourly").fetchall()}
        assert {"Microsoft", "Google Cloud"} <= providers, providers
        # the Azure and Google lines went to Spark as Parquet under the marts folder, removed after the build
        assert (tmp_path / "marts" / "_handover").is_dir()
        assert list((tmp_path / "marts" / "_handover").iterdir()) == []
        # the spread adds up to the bill, Azure's and Google's lines included
        totals = "select sum(effective_cost), sum(billed_cost) from {} where {}"
        assert (
            con.execute(totals.format("cost_hourly", "pricing_basis = 'bill'")).fetchall()
            == con.execute(totals.format("billing_line_items", "true")).fetchall()
        )
    finally:
        con.close()


def test_engine_spark_needs_its_settings(tmp_path: Path) -> None:
    (tmp_path / "wastewatch.yaml").write_text("engine: spark\n")
    with pytest.raises(ConfigError, match=r"engine: spark needs a `spark:` section"):
        load_config(tmp_path / "wastewatch.yaml")


def test_marts_spark_does_not_build_yet_are_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "wastewatch.yaml").write_text(
        'engine: spark\nspark: {url: "local[2]", marts: [cost_hourly, gpu_hours]}\n'
    )
    with pytest.raises(
        ConfigError,
        match=r"gpu_hours does not run on Spark yet \(only cost_hourly, storage_objects_current, "
        r"storage_dataset_matches, int_gpu_slices\): remove it from spark.marts and DuckDB builds it from "
        r"int_gpu_slices, the roll-up Spark builds",
    ):
        load_config(tmp_path / "wastewatch.yaml")
    (tmp_path / "wastewatch.yaml").write_text('engine: spark\nspark: {url: "local[2]"}\n')
    config = load_config(tmp_path / "wastewatch.yaml")
    assert config.spark is not None and config.spark.marts == [
        "cost_hourly",
        "storage_objects_current",
        "storage_dataset_matches",
        "int_gpu_slices",
    ]
    assert config.spark_marts_dir == str(tmp_path / "marts")


CHARGE_PERIODS = FIXTURES / "billing" / "charge_periods"


def _five_year_fees(dst: Path) -> None:
    """The charge kinds fixture (billing period 2026-03: a 5-year commitment and its tax, annual fees billed
    in arrears, a credit, an adjustment and a correction for past months) as CSV; a 5-year fee billed in
    April as Parquet (typed timestamps); one charged from June 15 in a CSV without billing period columns
    (its billing period is the month its charge starts, as the staging derives x_billing_period)."""
    dst.mkdir(parents=True)
    text = (CHARGE_PERIODS / "focus_charge_kinds.csv").read_text()
    (dst / "charges.csv").write_text(text)
    header, *lines = text.splitlines()
    fee = next(line for line in lines if "5-year commitment" in line)
    april = fee.replace("commit-5y", "commit-5y-b").replace("2026-03-01", "2026-04-01")
    april = april.replace("2026-04-01T00:00:00Z,2026-04-01", "2026-04-01T00:00:00Z,2026-05-01")
    april = april.replace("2026-03-15", "2026-04-10").replace("2031-03-15", "2031-04-10")
    (dst / "april.csv").write_text(f"{header}\n{april}\n")
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    times = ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd")
    typed = ", ".join(f'cast("{c}" as timestamptz)::timestamp as "{c}"' for c in times)
    con.execute(
        f"copy (select * exclude ({', '.join(times)}), {typed} from read_csv($p, all_varchar = true)) "
        "to $out (format parquet)",
        {"p": str(dst / "april.csv"), "out": str(dst / "april.parquet")},
    )
    con.close()
    (dst / "april.csv").unlink()
    keep = [i for i, c in enumerate(header.split(",")) if not c.startswith("BillingPeriod")]
    june = fee.replace("commit-5y", "commit-5y-c").replace("2026-03-15", "2026-06-15")
    june = june.replace("2031-03-15", "2031-06-15")
    (dst / "no-period.csv").write_text(
        "\n".join(",".join(r.split(",")[i] for i in keep) for r in (header, june)) + "\n"
    )


def test_spark_spreads_a_five_year_fee_over_its_billing_period_as_duckdb_does(
    spark: Any, tmp_path: Path
) -> None:
    """A line longer than 31 days (a 5-year commitment and its tax, annual fees billed in arrears, the FOCUS
    specification's SaaS-shaped contract fees and token purchases) lands in the month it was billed on
    Spark as on DuckDB: its billing period's hours, hour by hour to the warehouse's 12 decimals, whether
    Spark reads the file (CSV, Parquet, a CSV without billing period columns) or is handed its lines (a
    source with its own options.date_format)."""
    _five_year_fees(tmp_path / "focus")
    saas = {f"saas/{f.name}": f for f in (CHARGE_PERIODS / "saas").glob("*.csv")}
    sources = (
        "  - {name: focus, kind: focus, uri: focus/}\n"
        "  - {name: saas, kind: focus, uri: saas/, options: {date_format: '%m/%d/%y'}}\n"
    )
    report, landed = ingest_project(
        tmp_path,
        sources,
        saas,
        "select x_source_name as s, count(*) as n from billing_line_items group by 1 order by 1",
    )
    assert landed == [{"s": "focus", "n": 12}, {"s": "saas", "n": 16}], report.summary()
    con = connect(load_config(tmp_path / "wastewatch.yaml").warehouse_path)
    try:
        spark_helper.cost_hourly_on_both_engines(con, tmp_path)
        # each term lands in its billing period's hours (March 2026 has 744, April and June 720), whole
        landed_terms = con.execute(
            "select resource_id, min(hour), max(hour), count(*), sum(billed_cost) from cost_hourly "
            "where resource_id in ('commit-5y', 'commit-5y-b', 'commit-5y-c', 'TOK-P1', 'LIC-300', 'TOK-P2') "
            "group by 1 order by 1"
        ).fetchall()
        assert landed_terms == [
            ("LIC-300", datetime(2026, 3, 1), datetime(2026, 3, 31, 23), 744, Decimal("36000")),
            ("TOK-P1", datetime(2025, 4, 1), datetime(2025, 4, 30, 23), 720, Decimal("120000")),
            ("TOK-P2", datetime(2025, 10, 1), datetime(2025, 10, 31, 23), 744, Decimal("96000")),
            ("commit-5y", datetime(2026, 3, 1), datetime(2026, 3, 31, 23), 744, Decimal("60000")),
            ("commit-5y-b", datetime(2026, 4, 1), datetime(2026, 4, 30, 23), 720, Decimal("60000")),
            ("commit-5y-c", datetime(2026, 6, 1), datetime(2026, 6, 30, 23), 720, Decimal("60000")),
        ]
        # no hour of a term beyond the month it was billed: the latest is June 2026, not 2031
        assert con.execute("select max(hour) from cost_hourly").fetchone() == (datetime(2026, 6, 30, 23),)
        totals = "select sum(billed_cost), sum(effective_cost) from {}"
        assert (
            con.execute(totals.format("cost_hourly")).fetchall()
            == con.execute(totals.format("billing_line_items")).fetchall()
        )
    finally:
        con.close()
