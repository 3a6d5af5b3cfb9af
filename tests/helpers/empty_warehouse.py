"""A new warehouse copied from a template `connect` already prepared (`empty_marts`, `new_warehouse`).

A copy of a file `connect` made holds today's schema, the catalogues and the comments, so opening it needs
only what `connect` does for every connection (settings, macros, the temporary catalogues): a fraction of
`connect`'s cost, which re-checks the schema and reloads the catalogues. tests/warehouse/test_empty_copy.py
proves the two connections alike.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa

from pipelines import warehouse
from pipelines.warehouse import connect


def open_prepared(path: Path | str) -> duckdb.DuckDBPyConnection:
    """Open a copy of a warehouse `connect` prepared at today's schema, as `connect` would leave it: the
    statements `_configure` runs (its settings and the macro files) as one script, and the temporary
    catalogues made from the rows `connect`'s own loader read once per process, not read from their CSV
    files again."""
    con = duckdb.connect(str(path))
    try:
        con.execute(_configure_script())
        for name, table in _temp_catalogs().items():
            con.register("_catalog", table)
            try:
                # name comes from the catalogue tables `connect`'s loader created
                con.execute(f"create temp table {name} as select * from _catalog")
            finally:
                con.unregister("_catalog")
    except BaseException:
        con.close()
        raise
    return con


_SCRIPT: list[str] = []
_CATALOGS: list[dict[str, pa.Table]] = []


def _configure_script() -> str:
    """What `_configure` runs on a connection without `settings`, in its order, as one script (once per process)."""
    if not _SCRIPT:
        statements = warehouse.configure_statements()
        _SCRIPT.append("\n".join(sql.rstrip().rstrip(";") + ";" for sql in statements))
    return _SCRIPT[0]


def _temp_catalogs() -> dict[str, pa.Table]:
    """The temporary catalogue tables `_load_temp_catalogs` creates, with their rows, as Arrow tables."""
    if not _CATALOGS:
        con = duckdb.connect()
        try:
            warehouse._configure(con)
            warehouse._load_temp_catalogs(con)
            names = [
                r[0] for r in con.sql("select table_name from duckdb_tables() where temporary").fetchall()
            ]
            _CATALOGS.append(
                {n: con.sql(f'select * from temp."{n}"').to_arrow_table() for n in sorted(names)}
            )
        finally:
            con.close()
    return _CATALOGS[0]


# the name a copy is attached under (`attached_copy`) and the in-memory database a connection starts in
ATTACHED = "case_db"
IN_MEMORY = "memory"


def shared_connection() -> duckdb.DuckDBPyConnection:
    """An in-memory connection prepared as `open_prepared` prepares a file's (settings, macros, temporary
    catalogues), to which `attached_copy` attaches one warehouse copy after another.

    A copy is thrown away after its use, so detaching it does not checkpoint its log into the file
    (`checkpoint_on_detach`: a setting of this connection's own DuckDB instance, which no warehouse a
    command opens shares)."""
    con = open_prepared(":memory:")
    con.execute("set checkpoint_on_detach = 'DISABLED'")
    return con


@contextmanager
def attached_copy(
    con: duckdb.DuckDBPyConnection, template: Path, path: Path
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Copy `template` to `path`, attach it to `con` (a `shared_connection`) as the current database and yield
    `con`: what `open_copy` gives, without a new DuckDB instance, macros and catalogues per copy (0.13 CPU s an
    open and close under load, 0.01 an attach and detach). On the way out any open transaction is rolled
    back, the copy detached and the temporary tables the copy's user made dropped, so the next copy starts
    from the same connection. tests/warehouse/test_empty_copy.py proves it sees what `connect` gives.

    `path` may be the previous copy's: the log a detach without checkpoint left beside it is removed first,
    or attaching would replay it onto the new copy."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{path}.wal").unlink(missing_ok=True)
    shutil.copyfile(template, path)
    con.execute(f"attach {_literal(str(path))} as {ATTACHED}")
    con.execute(f"use {ATTACHED}")
    try:
        yield con
    finally:
        try:
            con.execute("rollback")
        except duckdb.TransactionException:
            pass  # no transaction was open
        con.execute(f"use {IN_MEMORY}")
        con.execute(f"detach {ATTACHED}")
        catalogues = set(_temp_catalogs())
        for name, kind in con.execute(
            "select table_name, 'table' from duckdb_tables() where temporary "
            "union all select view_name, 'view' from duckdb_views() where temporary and not internal"
        ).fetchall():
            if name not in catalogues:
                con.execute(f'drop {kind} temp."{name}"')


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def open_copy(template: Path, path: Path) -> duckdb.DuckDBPyConnection:
    """Copy `template` to `path` and open it: what `connect` (and `build_marts`, for `empty_marts`) on an
    empty file give."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, path)
    return open_prepared(path)


_TEMPLATE: list[Path] = []  # this process's empty warehouse, made by `connect` at its first use


def _template() -> Path:
    if not _TEMPLATE:
        folder = Path(tempfile.mkdtemp(prefix="wastewatch-empty-"))
        atexit.register(shutil.rmtree, folder, True)
        path = folder / "empty.duckdb"
        connect(path).close()
        _TEMPLATE.append(path)
    return _TEMPLATE[0]


def new_warehouse(path: Path | str) -> duckdb.DuckDBPyConnection:
    """`connect(path)` for a test: a path with no warehouse yet gets a copy of an empty one `connect` made
    once per process (today's schema and catalogues), opened as `connect` leaves it; an existing file is
    opened by `connect` itself."""
    p = Path(path)
    if p.exists() or Path(f"{p}.wal").exists():
        return connect(p)
    return open_copy(_template(), p)


def open_current(path: Path | str) -> duckdb.DuckDBPyConnection:
    """`new_warehouse(path)` for a warehouse this test made at today's schema (by `new_warehouse`, or by a
    command's `connect`) and opens again: an existing file is opened as `connect` leaves it (`open_prepared`),
    without `connect`'s schema check and catalogue reload (0.2 CPU s an open), which find nothing to do
    there. Not for a file of an older schema, or one whose comments or catalogues a test changed."""
    p = Path(path)
    if p.exists() and not Path(f"{p}.wal").exists():
        return open_prepared(p)
    return new_warehouse(p)
