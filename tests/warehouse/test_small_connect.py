"""A writable `connect` of a warehouse already at today's schema skips the schema check, the comments and the
catalogue reload (`prepare`), unless connect_digest says something they depend on changed: an older file, an
edited catalogue or raw SQL file, a column a load added. Read-only connections never check or write."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipelines import sql_files, warehouse
from pipelines.ingest.billing.lines import store_columns
from pipelines.warehouse import (
    CATALOG_DIR,
    RAW_TABLES,
    SCHEMA_VERSION,
    WarehouseError,
    connect,
    sql_notes,
    sql_root,
    sql_text,
)
from tests.helpers.paths import FIXTURES


def _recorded_at(con: duckdb.DuckDBPyConnection) -> datetime:
    """When connect_digest was last written: only a connect that ran the schema check writes it."""
    rows = con.execute("select recorded_at from connect_digest").fetchall()
    assert len(rows) == 1
    return rows[0][0]


def _comment(con: duckdb.DuckDBPyConnection, table: str, column: str) -> str | None:
    rows = con.execute(
        "select comment from duckdb_columns() where table_name = $t and column_name = $c",
        {"t": table, "c": column},
    ).fetchall()
    return rows[0][0]


def _instance_types(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute("select * from gpu_instance_types order by instance_type").fetchall()


@pytest.fixture
def current(tmp_path: Path) -> tuple[Path, datetime]:
    """A warehouse `connect` made, closed, and when its digest was recorded."""
    path = tmp_path / "wastewatch.duckdb"
    con = connect(path)
    try:
        return path, _recorded_at(con)
    finally:
        con.close()


@pytest.fixture
def clear_sql_caches() -> Iterator[None]:
    """SQL text read again from `sql_root()` in this test (a test points it at a copy), and once more after."""
    sql_text.cache_clear()
    sql_notes.cache_clear()
    yield
    sql_text.cache_clear()
    sql_notes.cache_clear()


def test_reopening_a_current_warehouse_skips_the_check_and_keeps_everything(
    current: tuple[Path, datetime],
) -> None:
    path, recorded = current
    con = connect(path)
    try:
        comments = con.execute(
            "select table_name, column_name, comment from duckdb_columns() where comment is not null order by 1, 2"
        ).fetchall()
        catalogue = _instance_types(con)
    finally:
        con.close()
    con = connect(path)
    try:
        assert _recorded_at(con) == recorded  # the digest matched: nothing was checked or rewritten
        assert con.execute("select max(version) from schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert _instance_types(con) == catalogue and len(catalogue) > 0
        assert (
            con.execute(
                "select table_name, column_name, comment from duckdb_columns() where comment is not null "
                "order by 1, 2"
            ).fetchall()
            == comments
        )
        # what every connection has: settings, macros, temporary catalogues
        assert con.execute("select current_setting('TimeZone')").fetchall() == [("UTC",)]
        assert con.execute("select count(*) from source_formats").fetchall()[0][0] > 0
    finally:
        con.close()


def _previous_main(path: Path, skip: tuple[str, ...] = ()) -> None:
    """A file as the previous main (schema version 20, no connect_digest) could leave it: its tables (but
    `skip`, added to sql/raw/ after the file was made), no comments, empty catalogues, a ledger row and a
    billing line whose optional `list_cost` was stored narrower than billing_columns now declares it."""
    snap = json.loads((FIXTURES / "schema" / "v20.json").read_text())
    old = duckdb.connect(str(path))
    try:
        for table, cols in snap["tables"].items():
            if table not in skip:
                old.execute(f"create table {table} ({', '.join(cols)})")
        old.execute("insert into schema_version values (20, 'v20', now()::timestamp)")
        old.execute(
            "insert into ingest_files (file_id, source, kind, uri, status, first_seen_at, checked_at) "
            "values ('f1', 's', 'focus', '/x.csv', 'loaded', now()::timestamp, now()::timestamp)"
        )
        old.execute("alter table billing_lines add column list_cost decimal(18, 6)")
        old.execute(
            "insert into billing_lines (billed_cost, effective_cost, list_cost, billing_currency, "
            "charge_period_start, charge_period_end, x_file_id) "
            "values (12.5, 10, 1.25, 'USD', '2026-11-01', '2026-11-01 01:00', 'f1')"
        )
    finally:
        old.close()


def test_the_previous_mains_warehouse_upgrades_and_is_repaired(
    tmp_path: Path, current: tuple[Path, datetime]
) -> None:
    path = tmp_path / "old.duckdb"
    _previous_main(path, skip=("spare_pools", "alerts_sent"))
    con = connect(path)
    try:
        assert con.execute("select version, description from schema_version order by 1").fetchall() == [
            (20, "v20"),
            (SCHEMA_VERSION, "0021_connect_digest"),
        ]
        recorded = _recorded_at(con)
        # nothing lost
        assert con.execute("select file_id from ingest_files").fetchall() == [("f1",)]
        assert con.execute("select billed_cost, list_cost from billing_lines").fetchall() == [
            (Decimal("12.5"), Decimal("1.25"))
        ]
        # repaired: the missing tables made, the stored column aligned, the comments written, the catalogues loaded
        tables = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
        assert set(RAW_TABLES) <= tables
        types = dict(con.execute("select name, type from pragma_table_info('billing_lines')").fetchall())
        assert types["list_cost"] == "DECIMAL(38,12)"
        assert _comment(con, "jobs", "state") == sql_notes("raw", "jobs").columns["state"]
        assert (
            _comment(con, "billing_lines", "list_cost")
            == sql_notes("raw", "billing_columns").columns["list_cost"]
        )
        fresh = connect(current[0])
        try:
            assert _instance_types(con) == _instance_types(fresh)
        finally:
            fresh.close()
    finally:
        con.close()
    con = connect(path)
    try:
        assert _recorded_at(con) == recorded  # upgraded once; then current
    finally:
        con.close()


@pytest.fixture
def catalog_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pipelines/catalog/ copied to a folder this test may edit, which `connect` reads instead."""
    folder = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    monkeypatch.setattr(warehouse, "CATALOG_DIR", folder)
    return folder


def test_an_edited_catalogue_csv_is_loaded_at_the_next_connect(tmp_path: Path, catalog_copy: Path) -> None:
    path = tmp_path / "wastewatch.duckdb"
    connect(path).close()
    csv = catalog_copy / "gpu_instance_types.csv"
    csv.write_text(csv.read_text(encoding="utf-8") + "x9.test,AWS,H100,8,80\n", encoding="utf-8")
    con = connect(path)
    try:
        assert ("x9.test", "AWS", "H100", 8, 80.0) in _instance_types(con)
        recorded = _recorded_at(con)
    finally:
        con.close()
    con = connect(path)
    try:
        assert _recorded_at(con) == recorded
        assert ("x9.test", "AWS", "H100", 8, 80.0) in _instance_types(con)
    finally:
        con.close()


def test_a_catalogue_that_fails_to_load_records_nothing_and_is_loaded_once_fixed(
    tmp_path: Path, catalog_copy: Path
) -> None:
    path = tmp_path / "wastewatch.duckdb"
    connect(path).close()
    csv = catalog_copy / "gpu_peak_flops.csv"
    good = csv.read_text(encoding="utf-8")
    csv.write_text(good + "X1,x1,acme,not a number,bf16,80,datasheet,https://example.com\n", encoding="utf-8")
    with pytest.raises(duckdb.Error):
        connect(path)
    csv.write_text(good + "X1,x1,acme,123.5,bf16,80,datasheet,https://example.com\n", encoding="utf-8")
    con = connect(path)
    try:
        assert con.execute(
            "select peak_dense_tflops from gpu_peak_flops where gpu_model = 'X1'"
        ).fetchall() == [(123.5,)]
    finally:
        con.close()


def test_an_edited_raw_sql_file_takes_effect_at_the_next_connect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clear_sql_caches: None
) -> None:
    sql = tmp_path / "sql"
    shutil.copytree(sql_root(), sql)
    monkeypatch.setattr(sql_files, "sql_root", lambda: sql)
    path = tmp_path / "wastewatch.duckdb"
    connect(path).close()
    jobs = sql / "raw" / "jobs.sql"
    jobs.write_text(
        jobs.read_text(encoding="utf-8").replace(
            "    user varchar,", "    user varchar,  -- who submitted it"
        ),
        encoding="utf-8",
    )
    sql_text.cache_clear()  # what a new process reads
    sql_notes.cache_clear()
    con = connect(path)
    try:
        assert _comment(con, "jobs", "user") == "who submitted it"
    finally:
        con.close()


def test_a_column_a_load_adds_to_billing_lines_takes_its_comment_at_the_next_connect(
    current: tuple[Path, datetime],
) -> None:
    path, recorded = current
    con = connect(path)
    try:
        assert "list_cost" not in dict(
            con.execute("select name, type from pragma_table_info('billing_lines')").fetchall()
        )
        assert store_columns(con, ["list_cost"]) == ["list_cost"]
        assert _comment(con, "billing_lines", "list_cost") is None
    finally:
        con.close()
    con = connect(path)
    try:
        assert _recorded_at(con) > recorded
        assert (
            _comment(con, "billing_lines", "list_cost")
            == sql_notes("raw", "billing_columns").columns["list_cost"]
        )
    finally:
        con.close()


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_read_only_connect_checks_and_writes_nothing(
    tmp_path: Path, current: tuple[Path, datetime]
) -> None:
    # a current file whose digest is stale (as an edit of the repo leaves it): a writer would check it
    path, _ = current
    con = duckdb.connect(str(path))
    con.execute("update connect_digest set digest = 'stale'")
    con.close()
    old = tmp_path / "old.duckdb"
    _previous_main(old)
    for p in (path, old):
        before = _file_hash(p)
        con = connect(p, read_only=True)
        try:
            assert con.execute("select count(*) from source_formats").fetchall()[0][0] > 0
        finally:
            con.close()
        assert _file_hash(p) == before
    con = duckdb.connect(str(old), read_only=True)
    try:
        assert con.execute("select max(version) from schema_version").fetchall() == [(20,)]
    finally:
        con.close()


def test_the_schema_version_is_checked_with_the_digest(current: tuple[Path, datetime]) -> None:
    """A digest recorded at today's schema does not stand for a file stamped newer (refused) or older (upgraded)."""
    path, _ = current
    con = duckdb.connect(str(path))
    con.execute(
        "insert into schema_version values ($v, 'a newer wastewatch', now()::timestamp)",
        {"v": SCHEMA_VERSION + 1},
    )
    con.close()
    with pytest.raises(WarehouseError, match="newer than this wastewatch"):
        connect(path)
    # a newer wastewatch may lay connect_digest out otherwise: still refused as newer, not a query error
    con = duckdb.connect(str(path))
    con.execute("alter table connect_digest rename column digest to digest_v2")
    con.close()
    with pytest.raises(WarehouseError, match="newer than this wastewatch"):
        connect(path)
    con = duckdb.connect(str(path))
    con.execute("alter table connect_digest rename column digest_v2 to digest")
    con.execute("delete from schema_version")
    con.execute("insert into schema_version values (20, 'v20', now()::timestamp)")
    con.close()
    con = connect(path)
    try:
        assert con.execute("select max(version) from schema_version").fetchall() == [(SCHEMA_VERSION,)]
    finally:
        con.close()


@pytest.mark.parametrize(
    "name", sorted(p.stem for p in (sql_root() / "intermediate" / "catalog").glob("*.sql"))
)
def test_a_temporary_catalogue_read_unsniffed_is_what_the_sniffer_reads(name: str) -> None:
    """Every connection reads the temporary catalogues with auto_detect = false: their CSVs must give the same
    rows and types as DuckDB's sniffer would (a catalogue edited into another dialect fails here)."""
    sql = sql_text("intermediate/catalog", name)
    assert "auto_detect = false" in sql
    got = []
    for text in (sql, sql.replace("auto_detect = false", "auto_detect = true")):
        con = duckdb.connect()
        try:
            con.execute(text, {"p": str(CATALOG_DIR / f"{name}.csv")})
            got.append(
                (con.execute(f"describe {name}").fetchall(), con.execute(f"select * from {name}").fetchall())
            )
        finally:
            con.close()
    assert got[0] == got[1] and got[0][1]
