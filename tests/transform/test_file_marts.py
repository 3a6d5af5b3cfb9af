"""The bill's line marts kept up to date by file (pipelines/transform/files.py): a delivery builds the rows of its
own files and no other, a file gone takes its rows along, and after every refresh each table equals its SQL
run over the whole bill in one statement."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from pipelines.config import Config, load_config
from pipelines.ingest import ingest
from pipelines.transform.build import build_mart_with_rollup
from pipelines.transform.days import DayStats
from pipelines.transform.files import FILE_MARTS
from pipelines.warehouse import sql_text
from tests.helpers.billing_exports import csv_bytes, hours, line
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

GROUP = "arn:aws:logs:us-east-1:111122223333:log-group:/aws/sagemaker/TrainingJobs"


def _kind(resource: str, hour: datetime, usage_type: str, product: str, cost: str, tags: dict | None = None):
    row = line(resource, hour, cost, instance_type="", tags=tags)
    row["line_item_usage_type"] = usage_type
    row["line_item_product_code"] = product
    row["product"] = json.dumps({"product_name": product, "region_code": "us-east-1"})
    row["identity_line_item_id"] = f"{resource}-{usage_type}-{hour:%Y%m%d%H}"
    return row


def _month(first: datetime, cost: str = "1.00", squad: str = "vision") -> list[dict[str, str]]:
    """A month's lines of every kind the three marts keep, and lines none of them keeps."""
    tags = {"user_squad": squad}
    return [
        _kind("acme-data", first, "USE1-USW2-AWS-Out-Bytes", "AmazonS3", cost, tags),
        _kind("acme-data", first.replace(hour=1), "EUC1-USE1-AWS-Out-Bytes", "AmazonS3", "2.00"),
        _kind(GROUP + ":*", first, "USE1-TimedStorage-ByteHrs", "AmazonCloudWatch", cost, tags),
        # a Savings Plan: covered usage and its recurring fee (CUR's unused share)
        line("i-sp", first, cost, kind="SavingsPlanCoveredUsage", sp_effective="0.60", tags=tags),
        line("sp-1", first, "5.00", kind="SavingsPlanRecurringFee", sp_effective="1.25", instance_type=""),
        *hours("i-gpu", first, 3, "98.32"),
    ]


def _project(tmp_path: Path, tags: str = "") -> Config:
    (tmp_path / "landing").mkdir(exist_ok=True)
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n" + tags)
    return load_config(tmp_path / "wastewatch.yaml")


def _deliver(tmp_path: Path, name: str, rows: list[dict[str, str]]) -> None:
    (tmp_path / "landing" / name).write_bytes(csv_bytes(rows))


def _build(con: duckdb.DuckDBPyConnection, config: Config, ingested: bool = False) -> dict[str, DayStats]:
    if not ingested:
        report = ingest(con, config)
        assert not report.rejected, report.summary()
    out = {}
    for name in FILE_MARTS:
        _, stats = build_mart_with_rollup(con, name, config)
        (out[name],) = stats
        assert out[name].unit == "file"
    return out


def _files(con: duckdb.DuckDBPyConnection, *names: str) -> list[str]:
    sql = "select file_id from ingest_files where list_contains($n, parse_filename(uri)) order by file_id"
    return [r[0] for r in con.execute(sql, {"n": list(names)}).fetchall()]


def _assert_whole_bill(con: duckdb.DuckDBPyConnection) -> None:
    """Each mart equals its SQL over every file of the bill in one statement: what a full build holds."""
    every = [r[0] for r in con.execute("select distinct x_file_id from billing_lines").fetchall()]
    for name in FILE_MARTS:
        sql = f"select * from (\n{sql_text('marts', name)}\n) order by all"
        whole = con.execute(sql, {"files": every}).fetchall()
        kept = con.execute(f"select * from {name} order by all").fetchall()  # noqa: S608 - our constant
        assert kept == whole, name
        assert kept, name


def _count(con: duckdb.DuckDBPyConnection, name: str) -> int:
    return con.execute(f"select count(*) from {name}").fetchall()[0][0]  # noqa: S608 - our constant


def test_a_delivery_builds_its_own_files_and_a_file_gone_takes_its_rows(tmp_path: Path) -> None:
    config = _project(tmp_path)
    _deliver(tmp_path, "sep.csv.gz", _month(datetime(2026, 9, 1)))
    _deliver(tmp_path, "oct.csv.gz", _month(datetime(2026, 10, 1)))
    con = new_warehouse(config.warehouse_path)
    first = _build(con, config)
    both = _files(con, "sep.csv.gz", "oct.csv.gz")
    for st in first.values():
        assert st.full and sorted(st.days_rebuilt) == both
    _assert_whole_bill(con)
    assert (
        _count(con, "transfer_lines"),
        _count(con, "log_storage_lines"),
        _count(con, "commitment_lines"),
    ) == (
        4,
        2,
        4,
    )
    inputs = dict(con.execute("select mart, fingerprint from int_mart_inputs").fetchall())

    # nothing new: every file kept, and what reads the marts sees the same fingerprint
    for st in _build(con, config).values():
        assert not st.full and st.days_rebuilt == [] and st.days_removed == []
    assert dict(con.execute("select mart, fingerprint from int_mart_inputs").fetchall()) == inputs

    # October delivered again (the month to date, restated) and November new: those two files only
    _deliver(tmp_path, "oct.csv.gz", _month(datetime(2026, 10, 1), cost="3.00"))
    _deliver(tmp_path, "nov.csv.gz", _month(datetime(2026, 11, 1)))
    again = _build(con, config)
    for st in again.values():
        assert not st.full and sorted(st.days_rebuilt) == _files(con, "oct.csv.gz", "nov.csv.gz")
        assert st.days_removed == []
    _assert_whole_bill(con)
    assert con.execute(
        "select sum(effective_cost) from transfer_lines where charge_period_start >= '2026-10-01'"
    ).fetchall()[0][0] == (3 + 2) + (1 + 2)  # October restated, November new
    changed = dict(con.execute("select mart, fingerprint from int_mart_inputs").fetchall())
    assert all(changed[m] != inputs[m] for m in FILE_MARTS)

    # September's file removed: its rows go, the others stay
    (tmp_path / "landing" / "sep.csv.gz").unlink()
    (sep,) = [f for f in both if f not in _files(con, "oct.csv.gz")]
    gone = _build(con, config)
    for st in gone.values():
        assert st.days_rebuilt == [] and st.days_removed == [sep]
    _assert_whole_bill(con)
    assert con.execute("select min(charge_period_start) from transfer_lines").fetchall()[0][0] == datetime(
        2026, 10, 1
    )
    con.close()


def test_the_tags_config_rebuilds_the_files_whose_canonical_tags_change(tmp_path: Path) -> None:
    config = _project(tmp_path)
    _deliver(tmp_path, "sep.csv.gz", _month(datetime(2026, 9, 1), squad="vision"))
    _deliver(tmp_path, "oct.csv.gz", [dict(r, resource_tags="{}") for r in _month(datetime(2026, 10, 1))])
    con = new_warehouse(config.warehouse_path)
    _build(con, config)
    assert con.execute("select count(*) from transfer_lines where team is not null").fetchall()[0][0] == 0
    con.close()

    # `user_squad` becomes the team: September's tagged lines change, October's untagged ones do not
    config = _project(tmp_path, "tags:\n  team: [squad]\n")
    con = new_warehouse(config.warehouse_path)
    again = _build(con, config)
    for st in again.values():
        assert not st.full and st.days_rebuilt == _files(con, "sep.csv.gz")
    _assert_whole_bill(con)
    assert con.execute("select count(*) from transfer_lines where team = 'vision'").fetchall()[0][0] == 1
    con.close()


@pytest.mark.parametrize("how", ["forced", "old shape"])
def test_a_forced_or_earlier_build_builds_every_file_again(tmp_path: Path, how: str) -> None:
    config = _project(tmp_path)
    _deliver(tmp_path, "sep.csv.gz", _month(datetime(2026, 9, 1)))
    _deliver(tmp_path, "oct.csv.gz", _month(datetime(2026, 10, 1)))
    con = new_warehouse(config.warehouse_path)
    _build(con, config)
    for name in FILE_MARTS:
        if how == "forced":
            con.execute("delete from int_mart_inputs where mart = $m", {"m": name})
        else:  # a table an earlier wastewatch built from the whole bill: no x_file_id
            con.execute(f"create or replace table {name} as select * exclude (x_file_id) from {name}")
    again = _build(con, config, ingested=True)
    for st in again.values():
        assert st.full and sorted(st.days_rebuilt) == _files(con, "sep.csv.gz", "oct.csv.gz")
    _assert_whole_bill(con)
    con.close()
