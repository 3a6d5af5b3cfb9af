"""Fingerprints of what a mart reads, so a mart rebuilt in full is built again only when they changed.

A nightly run that brings new telemetry but no new bill or inventory would otherwise rebuild the hourly cost
from every bill line and the storage marts from every object, and get the same tables. A mart's inputs
fingerprint combines the digest of its SQL with one fingerprint per relation it reads, found by walking the
`-- depends_on:` headers through the intermediate views:

- another mart built in full: the fingerprint it was last built from (`int_mart_inputs`);
- a day-incremental table (the roll-up, the GPU-hour marts): each day and what it was built from
  (`int_incremental_days`);
- a landed table with file lineage (`x_file_id`): each file's row count and the ledger's uri, checksum and
  load time for it;
- any other table (config, catalogue): its values, without the time they were written;
- a view of the raw layer (`billing_line_items`): the relations its header names.

Every table's columns are part of its fingerprint. A relation none of these covers (one that is missing, or
the ledger itself read directly) makes the mart unfingerprintable: it is rebuilt every time.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import duckdb

from pipelines.warehouse import header, one, rows, sql_text, utcnow

# `sql/intermediate/incremental/`: the table of fingerprints (`STATE`) and the queries that fingerprint
# each day's inputs, one row per day (day, fingerprint). A fingerprint is bit_xor over the day's rows of a
# hash of each row's values as one string: DuckDB's multi-argument hash() combines its arguments
# linearly, so identical values in an even number of rows would cancel out of the xor (a bill restated
# from 20 to 30 an hour for 24 hours would go unseen).
SQL = "intermediate/incremental"
# the fingerprints of what each day (or month) of a table kept up to date by day was built from
STATE = "int_incremental_days"
# the fingerprint of what each mart built in full was last built from
MART_INPUTS = "int_mart_inputs"
# the time a row was written by the config or the catalogue, not something the row says
STAMP_COLUMNS = ["updated_at"]
# the ingestion ledger: rewritten by every run (checked_at), read by views only for the lineage of the
# files their rows name, which each table's file fingerprint already holds
LEDGER = "ingest_files"
MASK = (1 << 64) - 1


@dataclass(frozen=True)
class Layers:
    """Which relation names are marts built in full, day-incremental tables, and intermediate views."""

    marts: frozenset[str]
    day_tables: frozenset[str]
    views: frozenset[str]


@dataclass
class Memo:
    """The raw layer's relations as one run that builds several marts sees them: their columns (read in one
    query) and their fingerprints, each worked out once. No mart's build writes the raw layer (the run writes
    the pricing before its first mart), so they hold for the whole run."""

    shapes: dict[str, list[dict[str, Any]]] | None = None
    tables: dict[str, int | None] = field(default_factory=dict)


def combine(*parts: int | None) -> int:
    """One fingerprint from several (order matters); stable across runs and processes."""
    acc = 1469598103934665603
    for p in parts:
        acc = ((acc ^ (p if p is not None else 0x9E3779B97F4A7C15)) * 1099511628211) % (1 << 64)
    return acc


def text_hash(text: str) -> int:
    """A stable 64-bit fingerprint of a text (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def depends_on(layer: str, name: str) -> list[str]:
    """The names in a SQL file's `-- depends_on:` header, without their parenthesised notes."""
    text = re.sub(r"\([^)]*\)", " ", header(sql_text(layer, name)).get("depends_on", ""))
    return [n for n in re.split(r"[,\s]+", text) if n]


def _value(row: tuple | None) -> int:
    return int(row[0]) & MASK if row and row[0] is not None else 0


def stored_days(con: duckdb.DuckDBPyConnection, name: str) -> dict[date, int]:
    """The fingerprint each stored day (or month) of table `name` was built from."""
    sql = f"select day, fingerprint from {STATE} where object = $o"  # noqa: S608 - our constant
    return {r["day"]: r["fingerprint"] for r in rows(con, sql, {"o": name})}


def stored_inputs(con: duckdb.DuckDBPyConnection, name: str) -> int | None:
    """The fingerprint mart `name` was last built in full from, None if none is stored."""
    row = one(con, f"select fingerprint from {MART_INPUTS} where mart = $m", {"m": name})  # noqa: S608
    return int(row[0]) if row else None


def store_inputs(con: duckdb.DuckDBPyConnection, name: str, fingerprint: int | None) -> None:
    """Record what mart `name` was built from; an unfingerprintable build (None) leaves no record, so the
    mart is built again next time."""
    con.execute(f"delete from {MART_INPUTS} where mart = $m", {"m": name})  # noqa: S608 - our constant
    if fingerprint is not None:
        con.execute(
            f"insert into {MART_INPUTS} values ($m, $fp, $now)",  # noqa: S608 - our constant
            {"m": name, "fp": fingerprint, "now": utcnow()},
        )


def store_parts(
    con: duckdb.DuckDBPyConnection, table: str, name: str, fingerprints: dict[date, int] | dict[str, int]
) -> None:
    """Record what each part (day, month or file) of table `name` was built from, in `table` (STATE, or
    int_incremental_files): rows of (object, part, fingerprint, built_at)."""
    if fingerprints:
        con.execute(
            f"insert into {table} select $o, unnest($parts), unnest($fps), $now",  # noqa: S608 - our constants
            {"o": name, "parts": list(fingerprints), "fps": list(fingerprints.values()), "now": utcnow()},
        )


def shape_hash(columns: list[tuple[str, str]]) -> int:
    """The fingerprint of a relation's columns: (name, type) pairs in order."""
    return text_hash("|".join(f"{name} {kind}" for name, kind in columns))


def _shape(con: duckdb.DuckDBPyConnection, name: str, memo: Memo | None) -> list[dict[str, Any]]:
    """A relation's columns in order (column_name, data_type, is_view); none if it does not exist."""
    if memo is None:
        return rows(con, sql_text(SQL, "table_shape"), {"table": name})
    if memo.shapes is None:
        memo.shapes = {}
        for r in rows(con, sql_text(SQL, "relation_shapes")):
            memo.shapes.setdefault(r.pop("table_name"), []).append(r)
    return memo.shapes.get(name, [])


def table_fingerprint(
    con: duckdb.DuckDBPyConnection, name: str, seen: frozenset[str] = frozenset(), memo: Memo | None = None
) -> int | None:
    """The fingerprint of a relation of the raw layer (a landed, config or catalogue table, or a raw view);
    with `memo`, worked out once for the run."""
    if memo is not None and name in memo.tables and not seen:
        return memo.tables[name]
    fingerprint = _table_fingerprint(con, name, seen, memo)
    if memo is not None and not seen:
        memo.tables[name] = fingerprint
    return fingerprint


def _table_fingerprint(
    con: duckdb.DuckDBPyConnection, name: str, seen: frozenset[str], memo: Memo | None
) -> int | None:
    if name == LEDGER or name in seen:
        return None
    shape = _shape(con, name, memo)
    if not shape:
        return None
    columns = shape_hash([(r["column_name"], r["data_type"]) for r in shape])
    if shape[0]["is_view"]:
        parts: list[int | None] = [columns]
        for dep in depends_on("raw", name):
            if dep == LEDGER:
                continue
            fp = table_fingerprint(con, dep, seen | {name}, memo)
            if fp is None:
                return None
            parts += [text_hash(dep), fp]
        return combine(*parts)
    if any(r["column_name"] == "x_file_id" for r in shape):
        return combine(columns, _value(one(con, sql_text(SQL, "table_files"), {"table": name})))
    content = one(con, sql_text(SQL, "table_content"), {"table": name, "skip": STAMP_COLUMNS})
    return combine(columns, _value(content))


def inputs_fingerprint(
    con: duckdb.DuckDBPyConnection,
    name: str,
    layers: Layers,
    digest: str,
    layer: str = "marts",
    memo: Memo | None = None,
) -> int | None:
    """The fingerprint of the inputs of mart `name` (or of a view of another `layer`), `digest` being that
    of its SQL; None if it has none. With `memo`, the raw layer's fingerprints are those of the run."""
    todo, seen = depends_on(layer, name), {name}
    leaves: dict[str, int | None] = {}
    while todo:
        dep = todo.pop()
        if dep in seen:
            continue
        seen.add(dep)
        if dep in layers.day_tables:
            leaves[dep] = _value(one(con, sql_text(SQL, "day_state"), {"object": dep}))
        elif dep in layers.marts:
            leaves[dep] = stored_inputs(con, dep)
        elif dep in layers.views:
            todo.extend(depends_on("intermediate", dep))
        else:
            leaves[dep] = table_fingerprint(con, dep, memo=memo)
        if dep in leaves and leaves[dep] is None:
            return None
    parts: list[int | None] = [text_hash(digest)]
    for dep in sorted(leaves):
        parts += [text_hash(dep), leaves[dep]]
    return combine(*parts)
