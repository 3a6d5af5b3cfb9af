"""Marts rebuilt in full are kept when nothing they read changed (pipelines/transform/fingerprints.py), and built again
when anything did: a new bill file, the config's prices, an upstream mart; the headers they are walked by
name every relation their SQL reads."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipelines.config import Config, load_config
from pipelines.ingest import ingest
from pipelines.marts.registry import INTERMEDIATE, MARTS, ROLLUPS
from pipelines.transform.build import build_mart, build_marts
from pipelines.transform.fingerprints import depends_on
from pipelines.warehouse import rows, sql_text
from tests.helpers.billing_exports import csv_bytes, hours
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

NOV = datetime(2026, 11, 2, 0, 0)
PRICED = """
pricing:
  - match: {host: "gpu-own-*"}
    contract: {currency: USD, per_gpu_hour: 2.00, gpus: 8}
"""


def _project(tmp_path: Path, extra: str = "") -> Config:
    (tmp_path / "landing").mkdir(exist_ok=True)
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n" + extra)
    return load_config(tmp_path / "wastewatch.yaml")


def _deliver(tmp_path: Path, name: str, resource: str, n: int, cost: str) -> None:
    (tmp_path / "landing" / name).write_bytes(csv_bytes(hours(resource, NOV, n, cost)))


def _built_at(con: duckdb.DuckDBPyConnection) -> dict[str, datetime]:
    return {r["mart"]: r["built_at"] for r in rows(con, "select mart, built_at from int_mart_inputs")}


def _total(con: duckdb.DuckDBPyConnection, table: str) -> Decimal:
    return con.execute(f"select coalesce(sum(effective_cost), 0) from {table}").fetchall()[0][0]  # noqa: S608


def test_a_mart_whose_inputs_did_not_change_is_kept_and_one_whose_bill_did_is_built_again(
    tmp_path: Path,
) -> None:
    config = _project(tmp_path)
    _deliver(tmp_path, "a.csv.gz", "i-a", 10, "1.00")
    con = new_warehouse(config.warehouse_path)
    assert not ingest(con, config).rejected
    build_marts(con, config)
    first = _built_at(con)
    assert {"cost_hourly", "resources", "gpu_billed_hours", "storage_prices"} <= set(first)
    assert _total(con, "cost_hourly") == Decimal("10.000000")

    # nothing new: every mart built in full is kept (a row planted in one survives, proving it was not rebuilt)
    con.execute("insert into cost_hourly (resource_id, effective_cost) values ('planted', 1000)")
    assert not ingest(con, config).rejected
    build_marts(con, config)
    assert _built_at(con) == first
    assert _total(con, "cost_hourly") == Decimal("1010.000000")

    # a new bill file: cost_hourly and what reads it are built again, from the whole bill
    _deliver(tmp_path, "b.csv.gz", "i-b", 5, "2.00")
    assert not ingest(con, config).rejected
    build_marts(con, config)
    again = _built_at(con)
    assert _total(con, "cost_hourly") == Decimal("20.000000")
    for mart in ("cost_hourly", "resources", "gpu_billed_hours", "commitment_lines", "storage_prices"):
        assert again[mart] > first[mart], mart
    # the storage inventories did not change, but storage_prices reads the bill: only what reads neither is kept
    assert again["storage_dataset_matches"] > first["storage_dataset_matches"]  # reads storage_prices
    assert again["log_groups_current"] == first["log_groups_current"]
    con.close()


def test_a_restated_file_and_a_new_price_rebuild_the_marts_that_read_them(tmp_path: Path) -> None:
    config = _project(tmp_path)
    _deliver(tmp_path, "a.csv.gz", "i-a", 10, "1.00")
    con = new_warehouse(config.warehouse_path)
    ingest(con, config)
    build_marts(con, config)
    first = _built_at(con)

    # the same file delivered again with other amounts (a restatement): it is read again and priced anew
    _deliver(tmp_path, "a.csv.gz", "i-a", 10, "3.00")
    ingest(con, config)
    build_mart(con, "cost_hourly", config)
    assert _total(con, "cost_hourly") == Decimal("30.000000")
    assert _built_at(con)["cost_hourly"] > first["cost_hourly"]

    # a pricing entry added to the config is an input of the marts that model owned hosts' cost
    second = _built_at(con)
    priced = _project(tmp_path, PRICED)
    build_mart(con, "cost_hourly", priced)
    assert _built_at(con)["cost_hourly"] > second["cost_hourly"]
    third = _built_at(con)
    build_mart(con, "cost_hourly", priced)  # the same prices written again: kept
    assert _built_at(con)["cost_hourly"] == third["cost_hourly"]
    con.close()


def test_a_missing_table_or_a_lost_fingerprint_builds_the_mart_again(tmp_path: Path) -> None:
    config = _project(tmp_path)
    _deliver(tmp_path, "a.csv.gz", "i-a", 4, "1.00")
    con = new_warehouse(config.warehouse_path)
    ingest(con, config)
    build_mart(con, "cost_hourly", config)
    con.execute("drop table cost_hourly")
    build_mart(con, "cost_hourly", config)
    assert _total(con, "cost_hourly") == Decimal("4.000000")
    con.execute("insert into cost_hourly (resource_id, effective_cost) values ('planted', 1000)")
    con.execute("delete from int_mart_inputs where mart = 'cost_hourly'")  # how a user forces a rebuild
    build_mart(con, "cost_hourly", config)
    assert _total(con, "cost_hourly") == Decimal("4.000000")
    con.close()


def _relations_read(con: duckdb.DuckDBPyConnection, sql: str) -> set[str]:
    """The base relations a query names (DuckDB's own parser), less the names its CTEs define."""
    tree = json.loads(con.execute("select json_serialize_sql($q)", {"q": sql}).fetchall()[0][0])
    assert not tree.get("error"), tree
    found: set[str] = set()
    ctes: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "BASE_TABLE":
                found.add(str(node["table_name"]))
            for entry in (node.get("cte_map") or {}).get("map") or []:
                ctes.add(str(entry["key"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(tree)
    return found - ctes


@pytest.mark.parametrize(
    ("layer", "name"),
    [("marts", m) for m in MARTS]
    + [("intermediate", n) for n in INTERMEDIATE]
    + [("raw", "billing_line_items")],
)
def test_depends_on_names_every_relation_the_sql_reads(
    empty_marts: Path, layer: str, name: str, tmp_path: Path
) -> None:
    # a relation missing from the header would leave a kept mart stale when only that relation changed
    con = duckdb.connect(str(empty_marts), read_only=True)
    relations = {
        r[0]
        for r in con.execute(
            "select table_name from duckdb_tables() union select view_name from duckdb_views()"
        ).fetchall()
    }
    sql = sql_text(layer, name)
    if layer == "raw":  # a DDL file: the view's query is what follows `as`
        sql = sql[sql.lower().index("\nselect") :]
    read = (_relations_read(con, sql) & relations) - {name}
    con.close()
    missing = read - set(depends_on(layer, name)) - set(ROLLUPS if name in ROLLUPS else ())
    assert not missing, f"{layer}/{name}.sql reads {sorted(missing)} without naming it in `-- depends_on:`"
