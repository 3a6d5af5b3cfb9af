"""A new warehouse with every mart built empty, copied from the session's template (`empty_marts`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from pipelines.warehouse import connect


def open_copy(template: Path, path: Path) -> duckdb.DuckDBPyConnection:
    """Copy `template` to `path` and open it: what `connect` and `build_marts` on an empty file give."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, path)
    return connect(path)
