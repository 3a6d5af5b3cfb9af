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
from pathlib import Path

import duckdb

from pipelines import warehouse
from pipelines.warehouse import connect


def open_prepared(path: Path) -> duckdb.DuckDBPyConnection:
    """Open a copy of a warehouse `connect` prepared at today's schema, as `connect` would leave it."""
    con = duckdb.connect(str(path))
    try:
        warehouse._configure(con)
        warehouse._load_temp_catalogs(con)
    except BaseException:
        con.close()
        raise
    return con


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
