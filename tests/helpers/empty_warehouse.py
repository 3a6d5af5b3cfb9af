"""A new warehouse copied from a template `connect` already prepared (`empty_marts`, `empty_schema`).

A copy of a file `connect` made holds today's schema, the catalogues and the comments, so opening it needs
only what `connect` does for every connection (settings, macros, the temporary catalogues): a fraction of
`connect`'s cost, which re-checks the schema and reloads the catalogues. tests/warehouse/test_empty_copy.py
proves the two connections alike.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from pipelines import warehouse


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
