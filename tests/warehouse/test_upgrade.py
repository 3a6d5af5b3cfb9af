"""A warehouse written by the previous release upgrades to today's schema without losing a value."""

from __future__ import annotations

import gzip
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import load_config
from pipelines.transform import build_marts
from pipelines.warehouse import SCHEMA_VERSION, connect, current_version
from tests.helpers.config import write_config
from tests.helpers.paths import FIXTURES

V7 = FIXTURES / "warehouse" / "v7.duckdb.gz"
NUMERIC = ("BIGINT", "INTEGER", "SMALLINT", "HUGEINT", "DOUBLE", "FLOAT")


def _contents(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Per table: row count, and per numeric column its sum (as Decimal, so a widened type compares)."""
    out: dict[str, Any] = {}
    tables = con.execute(
        "select table_name from information_schema.tables where table_schema = 'main' "
        "and table_type = 'BASE TABLE' order by 1"
    ).fetchall()
    for (table,) in tables:
        cols = con.execute(
            "select column_name, data_type from information_schema.columns "
            "where table_schema = 'main' and table_name = $t order by ordinal_position",
            {"t": table},
        ).fetchall()
        numeric = [c for c, t in cols if t in NUMERIC or t.startswith("DECIMAL(")]
        sums = "".join(f', sum("{c}")' for c in numeric)
        row = con.execute(f'select count(*){sums} from "{table}"').fetchone()  # noqa: S608 - our identifiers
        assert row is not None
        values = [None if v is None else round(Decimal(str(v)), 6) for v in row[1:]]
        out[table] = (row[0], dict(zip(numeric, values, strict=True)))
    return out


def test_the_previous_releases_warehouse_upgrades_keeping_every_row_and_value(tmp_path: Path) -> None:
    path = tmp_path / "warehouse" / "wastewatch.duckdb"
    path.parent.mkdir()
    with gzip.open(V7, "rb") as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    with duckdb.connect(str(path), read_only=True) as old:
        assert old.execute("select max(version) from schema_version").fetchone() == (7,)
        before = _contents(old)
        ledger_before = old.execute(
            "select file_id, status, rows, checksum from ingest_files order by 1"
        ).fetchall()
    assert (
        before["billing_lines"][0] > 0 and before["gpu_samples"][0] > 0
    )  # a real warehouse, not an empty one

    con = connect(path)  # a writer's connection migrates
    try:
        assert current_version(con) == SCHEMA_VERSION
        after = _contents(con)
        for table, (count, sums) in before.items():
            if table == "schema_version":
                continue
            assert table in after, f"{table} was dropped"
            assert after[table][0] == count, table
            for column, value in sums.items():
                assert after[table][1].get(column) == value, (table, column)
        ledger_after = con.execute(
            "select file_id, status, rows, checksum from ingest_files order by 1"
        ).fetchall()
        assert ledger_after == ledger_before
        write_config(tmp_path, "sources: []\n")
        marts = build_marts(con)  # the upgraded warehouse builds today's marts
        assert marts["cost_hourly"] > 0
    finally:
        con.close()
    assert load_config(tmp_path / "wastewatch.yaml").warehouse_path == path
