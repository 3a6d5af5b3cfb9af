"""Build only the marts a test reads, and the marts those read (issue 41: a mart tested at its level).

`build_marts` builds every mart; a test of the GPU marts needs five of them. The marts a mart reads come
from the `-- depends_on:` headers of its SQL and of the intermediate views it reads
(tests/transform/test_mart_inputs.py proves every header names all it reads), so the marts built here are
the ones `build_marts` would have built before them, in the same order, from the same inputs.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from pipelines.config import Config
from pipelines.marts.registry import MARTS
from pipelines.transform.build import build_marts
from pipelines.warehouse import header, sql_root, sql_text


def _reads(layer: str, name: str) -> list[str]:
    return [n for n in re.split(r"[,\s]+", header(sql_text(layer, name)).get("depends_on", "")) if n]


def _intermediate(name: str) -> bool:
    return Path(sql_root() / "intermediate" / f"{name}.sql").exists()


def marts_needed(*names: str) -> list[str]:
    """`names` and every mart they read, directly or through intermediate views, in `MARTS` order."""
    unknown = set(names) - set(MARTS)
    if unknown:
        raise KeyError(f"not marts: {sorted(unknown)}")
    found: set[str] = set()
    todo = [("marts", n) for n in names]
    seen: set[tuple[str, str]] = set()
    while todo:
        layer, name = todo.pop()
        if (layer, name) in seen:
            continue
        seen.add((layer, name))
        if layer == "marts":
            found.add(name)
        for dep in _reads(layer, name):
            if dep in MARTS:
                todo.append(("marts", dep))
            elif _intermediate(dep):
                todo.append(("intermediate", dep))
    return [m for m in MARTS if m in found]


def build_only(con: duckdb.DuckDBPyConnection, *names: str, config: Config | None = None) -> dict[str, int]:
    """Build `names` and the marts they read, in one run as `build_marts` builds them all; rows per mart."""
    return build_marts(con, config, marts_needed(*names))
