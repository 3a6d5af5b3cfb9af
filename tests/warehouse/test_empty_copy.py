"""The tests' cheap warehouse (tests/helpers/empty_warehouse.py) opens as `connect` opens a new file.

Many tests open a copy of a template `connect` prepared instead of calling `connect` on a new file
(`open_copy`, `new_warehouse`); this proves the two connections see the same tables, rows, macros, temporary
catalogues (every row) and settings, so a test on the copy tests what a real connection gives.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from pipelines.warehouse import SCHEMA_VERSION, connect, rows
from tests.helpers.empty_warehouse import (
    attached_copy,
    new_warehouse,
    open_copy,
    open_prepared,
    shared_connection,
)

SETTINGS = ("TimeZone", "enable_progress_bar")


def _state(con: duckdb.DuckDBPyConnection, version: bool = True) -> dict[str, object]:
    # the database's own name differs between the files: name it by whether it is the temporary one
    tables = sorted(
        (r["database_name"] == "temp", r["schema_name"], r["table_name"])
        for r in rows(con, "select database_name, schema_name, table_name from duckdb_tables()")
    )
    counts = {
        name: rows(con, f'select count(*) as n from {"temp." if temp else ""}"{schema}"."{name}"')[0]["n"]  # noqa: S608 - catalogue names
        for temp, schema, name in tables
    }
    # the temporary catalogues row by row (the tests' open makes them from rows `connect`'s loader read once)
    catalogues = {
        name: rows(con, f'select * from temp."{name}" order by all')  # noqa: S608 - catalogue names
        for temp, _, name in tables
        if temp
    }
    return {
        "tables": tables,
        "rows": counts,
        "catalogues": catalogues,
        "columns": rows(
            con,
            "select table_name, column_name, data_type from duckdb_columns() order by table_name, column_index",
        ),
        "macros": rows(
            con,
            "select function_name, macro_definition from duckdb_functions() "
            "where function_type in ('macro', 'table_macro') and not internal order by all",
        ),
        "views": rows(con, "select view_name, sql from duckdb_views() where not internal order by all"),
        "settings": {s: rows(con, f"select current_setting('{s}') as v")[0]["v"] for s in SETTINGS},
        "version": rows(con, "select max(version) as v from schema_version")[0]["v"] if version else None,
    }


def test_a_copy_of_a_prepared_warehouse_opens_as_connect_opens_a_new_file(tmp_path: Path) -> None:
    fresh = connect(tmp_path / "fresh.duckdb")
    template = tmp_path / "template.duckdb"
    connect(template).close()
    copy = open_copy(template, tmp_path / "copy" / "w.duckdb")
    new = new_warehouse(tmp_path / "new" / "w.duckdb")
    try:
        assert _state(copy) == _state(fresh)
        assert _state(new) == _state(fresh)
        assert _state(copy)["version"] == SCHEMA_VERSION
    finally:
        new.close()
        copy.close()
        fresh.close()
    # and the copy stays a warehouse `connect` accepts as it is
    shutil.copyfile(tmp_path / "copy" / "w.duckdb", tmp_path / "again.duckdb")
    again = open_prepared(tmp_path / "again.duckdb")
    reopened = connect(tmp_path / "copy" / "w.duckdb")
    try:
        assert _state(again) == _state(reopened)
    finally:
        again.close()
        reopened.close()


def test_a_copy_attached_to_the_shared_connection_sees_what_connect_gives_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """The rule cases attach each case's copy to one prepared connection (`attached_copy`)."""
    fresh = connect(tmp_path / "fresh.duckdb")
    template = tmp_path / "template.duckdb"
    connect(template).close()
    shared = shared_connection()
    try:
        before = _state(shared, version=False)  # no warehouse attached: no schema_version
        # the second copy starts from the connection the first left, at the first's path: what the first
        # committed (its log, which a detach without checkpoint leaves beside the file) is not in it
        for _ in range(2):
            with attached_copy(shared, template, tmp_path / "case" / "w.duckdb") as con:
                assert _state(con) == _state(fresh)
                assert con.execute("select current_database()").fetchall() != [("memory",)]
                con.execute("create temp table _probe as select 1 as x")  # as the marts' builds make probes
                con.execute("delete from findings")
                con.execute("delete from schema_version")  # committed: a row the next copy must still hold
                con.execute("begin transaction")  # left open by a failing case: rolled back on the way out
            assert _state(shared, version=False) == before
    finally:
        shared.close()
        fresh.close()
