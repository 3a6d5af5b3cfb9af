"""A warehouse written by the previous release upgrades to today's schema without losing a value."""

from __future__ import annotations

import gzip
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.transform.build import build_marts
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


def test_the_previous_releases_warehouse_takes_the_relative_file_ids_loading_nothing_again(
    tmp_path: Path,
) -> None:
    """The v7 warehouse was written for the crash test's first landing zone at /tmp/v7/project, with file ids
    keyed by absolute path; here that landing zone lies elsewhere (the project moved while it was
    upgraded): the next ingest gives every ledger row and landed row its relative id and loads nothing."""
    from tests.crash.test_crash import CONFIG, _version_1

    _version_1(tmp_path / "project")
    write_config(tmp_path / "project", CONFIG)
    config = load_config(tmp_path / "project" / "wastewatch.yaml")
    path = config.warehouse_path
    path.parent.mkdir(parents=True)
    with gzip.open(V7, "rb") as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    con = connect(path)
    try:
        before = _contents(con)
        old_ids = {r[0] for r in con.execute("select file_id from ingest_files").fetchall()}
        report = ingest(con, config)
        assert {o.status for o in report.outcomes} == {"unchanged"}, report.summary()
        assert _contents(con) == before  # every table: the same rows and sums
        ledger = con.execute("select file_id, uri from ingest_files order by uri").fetchall()
        assert len(ledger) == 9 and not {fid for fid, _ in ledger} & old_ids
        assert all(uri.startswith(str(tmp_path / "project")) for _, uri in ledger)
        # no landed row keeps an id the ledger no longer has
        for table in ("billing_lines", "gpu_samples", "jobs", "inventory_hosts", "storage_objects"):
            orphans = con.execute(
                f"select count(*) from {table} where x_file_id not in (select file_id from ingest_files)"  # noqa: S608
            ).fetchone()
            assert orphans == (0,), table
    finally:
        con.close()
