"""A file's lines into `billing_lines`: the `Spec` that maps a file onto its format's staging SQL (with
the `Check`s that explain a failed insert), and `insert_lines`, which stores only the columns a file
fills (the rest of billing_columns' FOCUS columns are added when a file first fills them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb

from pipelines.ingest.readers.base import quote_ident
from pipelines.warehouse import rows, stored_in


@dataclass
class Check:
    """A value the staging SQL casts strictly; used only to explain a failed insert."""

    column: str  # the `_src` column
    shown: str  # the file's column name, for the message
    kind: str  # money | price | number | timestamp | date | json | required
    expected: str | None = None  # what the message says was expected, when the kind's own words are too vague


@dataclass
class Spec:
    """How one file maps into its format's staging SQL."""

    columns: dict[str, str]  # `_src` column -> SQL over the file's columns (identifiers only)
    checks: list[Check]
    file_billed: str  # SQL over `_src`: each line's billed cost as the file states it
    file_effective: str  # SQL over `_src`: each line's effective cost as the file states it
    bind: dict[str, Any] = field(default_factory=dict)
    line_item_key: str | None = None  # SQL over landed columns that must be unique (duplicates rejected)
    # staging output columns that are NULL on every line of this file (the file lacks their source
    # column): not inserted, so billing_lines does not store them for a source that never fills them
    absent: list[str] = field(default_factory=list)
    # `_src` columns (-> type) that an observed insert casts before its observer (reconcile.observed_cte), so
    # a value the observer sums and the staging SQL stores is cast once: only columns that the staging SQL
    # and file_billed/file_effective cast to exactly that type
    observed_types: dict[str, str] = field(default_factory=dict)


LINES = stored_in("billing_line_items")  # the table billing lines are written to (the view reads it)


# columns of billing_line_items that the view takes from the ledger and billing_lines (never stored)
DERIVED = ("x_source_name", "x_source_format", "x_source_file", "x_loaded_at", "x_line_key")


def columns_of(con: duckdb.DuckDBPyConnection, *tables: str) -> dict[str, dict[str, str]]:
    """Each of the warehouse's `tables`: its columns and their types, in table order."""
    found = rows(
        con,
        "select table_name, column_name, data_type from duckdb_columns() "
        "where database_name = current_database() and schema_name = 'main' and list_contains($t, table_name) "
        "order by table_name, column_index",
        {"t": list(tables)},
    )
    out: dict[str, dict[str, str]] = {t: {} for t in tables}
    for r in found:
        out[r["table_name"]][r["column_name"]] = r["data_type"]
    return out


def store_columns(con: duckdb.DuckDBPyConnection, columns: list[str]) -> list[str]:
    """Add to `billing_lines` the columns of `billing_columns` among `columns` that it does not store yet.

    A warehouse stores only the FOCUS columns its sources fill (sql/raw/billing_lines.sql says why);
    `insert_lines` calls this with the columns it is about to insert. Runs in the caller's transaction,
    so a rejected load takes its new columns back with it. Returns the columns added.
    """
    catalogue = columns_of(con, "billing_columns", LINES)
    types, stored = catalogue["billing_columns"], catalogue[LINES]
    wrong = [c for c in columns if c not in types or c in DERIVED]
    if wrong:
        raise ValueError(
            f"cannot store {', '.join(wrong)} in {LINES}: not a column of billing_columns, or one the "
            "billing_line_items view derives (lineage comes from the ledger)"
        )
    added = [c for c in columns if c not in stored]
    for c in added:
        con.execute(f"alter table {LINES} add column {quote_ident(c)} {types[c]}")  # noqa: S608 - identifiers and types from the catalogue
    return added


# insert_lines: the columns a query's text yields. Binding it reads the file's metadata or sniffs the CSV,
# single-threaded, and the files of one delivery share their query text (the path is a bound value)
_DESCRIBED: dict[str, list[str]] = {}


def insert_lines(
    con: duckdb.DuckDBPyConnection,
    query: str,
    params: dict[str, Any] | None = None,
    skip: list[str] | None = None,
    profile: bool = False,
) -> str | None:
    """Insert the rows of `query` (its columns named like billing_columns') into `billing_lines`, first
    adding the columns it fills that the table does not store yet; `skip` names columns known to be NULL
    on every row (left out, never stored for them). Runs in the caller's transaction. With `profile`,
    returns DuckDB's profile of the insert (JSON: the rows each operator produced)."""
    described = _DESCRIBED.get(query)
    if described is None:  # the text alone decides the column names: bind once per text, not per file
        empty = f"select * from ({query}) limit 0"  # noqa: S608 - the caller's SQL; values are bound
        described = [d[0] for d in con.execute(empty, params or {}).description or []]
        if len(_DESCRIBED) >= 64:
            _DESCRIBED.clear()
        _DESCRIBED[query] = described
    left_out = [c for c in skip or [] if c in described]
    if left_out:
        query = f"select * exclude ({', '.join(quote_ident(c) for c in left_out)}) from (\n{query}\n)"  # noqa: S608 - identifiers only
    store_columns(con, [c for c in described if c not in left_out])
    if not profile:
        con.execute(f"insert into {LINES} by name\n{query}", params or {})  # noqa: S608 - the caller's SQL; values are bound
        return None
    # a failed insert aborts the transaction, and with it any statement before the rollback: the caller
    # resets profiling after it (LoadFailed.explain)
    con.execute("set enable_profiling = 'no_output'")
    con.execute(f"insert into {LINES} by name\n{query}", params or {})  # noqa: S608 - the caller's SQL; values are bound
    profile = con.get_profiling_information(format="json")
    con.execute("reset enable_profiling")
    return profile
