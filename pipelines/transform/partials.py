"""What the bill says per file, kept up to date by file, for the objects that aggregate the whole bill.

`int_billed_resources` (what `resources`, the host mapping and the job marts read: each resource's latest
attributes, first and last seen) and `storage_prices` (each bucket's storage lines) aggregate every line of
the bill; built from the lines they read the whole history every night. Instead each bill file's share is
kept as a partial aggregate (sql/intermediate/partials/): a file's rows are built again when its lines
fingerprint differently (a month delivered again, a file retagged or loaded again), dropped when the file is
gone from the bill (a newer delivery replaced it, a retention removed it), and the objects merge the partials.
A partial's merge is associative (min, max, sums, and the latest value as the largest {time, value}
struct), so the merged rows equal those of the partials built from every file in one statement.

The files' fingerprints live in int_incremental_files beside the line marts' (pipelines/transform/files.py);
a missing table or one of other columns builds every file again in one statement.
"""

from __future__ import annotations

import hashlib
from functools import cache

import duckdb

from pipelines import progress
from pipelines.transform.files import FILES, FileStats, stored_files
from pipelines.transform.fingerprints import (
    MASK,
    SQL,
    combine,
    shape_hash,
    store_parts,
    table_fingerprint,
    text_hash,
)
from pipelines.warehouse import columns, rows, sql_root, sql_text, table_exists

# sql/intermediate/partials/<table>.sql: one query per partial table, over the files $files names
LAYER = "intermediate/partials"
PARTIALS = ("int_resource_files", "int_storage_line_files")


def refresh(con: duckdb.DuckDBPyConnection, full: bool = False) -> dict[str, FileStats]:
    """Build again each partial table's rows of the bill files whose lines changed and drop those of files
    gone (inside the caller's transaction); `full` builds every file again. What each table did, by name."""
    shared = combine(
        text_hash(_macros_digest()),
        text_hash(sql_text(SQL, "bill_files")),
        shape_hash(columns(con, "billing_lines")),
        table_fingerprint(con, "billing_columns"),
    )
    files = {r["file_id"]: int(r["fingerprint"]) & MASK for r in rows(con, sql_text(SQL, "bill_files"))}
    return {name: _refresh_one(con, name, shared, files, full) for name in PARTIALS}


def _refresh_one(
    con: duckdb.DuckDBPyConnection, name: str, shared: int, files: dict[str, int], full: bool
) -> FileStats:
    sql = sql_text(LAYER, name)
    full = _ensure_table(con, name, sql) or full
    base = combine(text_hash(sql), shared)
    current = {f: combine(base, fp) for f, fp in files.items()}
    stored = {} if full else stored_files(con, name)
    stats = FileStats(
        files_rebuilt=sorted(f for f, fp in current.items() if stored.get(f) != fp),
        files_removed=sorted(f for f in stored if f not in current),
        full=full,
    )
    if stats.kept:
        return stats
    # identifiers from our own constants; the files are bound
    if full:
        con.execute(f"delete from {name}")  # noqa: S608
        con.execute(f"delete from {FILES} where object = $o", {"o": name})  # noqa: S608
    else:
        redo = stats.files_rebuilt + stats.files_removed
        con.execute(f"delete from {name} where list_contains($files, file_id)", {"files": redo})  # noqa: S608
        con.execute(
            f"delete from {FILES} where object = $o and list_contains($files, file_id)",  # noqa: S608
            {"o": name, "files": redo},
        )
    if stats.files_rebuilt:
        con.execute(f"insert into {name} by name\n{sql}", {"files": stats.files_rebuilt})
    store_parts(con, FILES, name, {f: current[f] for f in stats.files_rebuilt})
    how = (
        "every file"
        if full
        else f"{len(stats.files_rebuilt)} file(s) built, {len(stats.files_removed)} dropped"
    )
    progress.done(f"  partial {name}: {how}")
    return stats


def _ensure_table(con: duckdb.DuckDBPyConnection, name: str, sql: str) -> bool:
    """Create the partial table (empty) when it is missing or has other columns than its query; whether it
    was (then every file is built)."""
    con.execute(f"create or replace temp table _partial_probe as\n{sql}\nlimit 0", {"files": []})
    created = not (table_exists(con, name) and columns(con, name) == columns(con, "_partial_probe"))
    if created:
        con.execute(f"create or replace table {name} as from _partial_probe")
    con.execute("drop table _partial_probe")
    return created


@cache
def _macros_digest() -> str:
    """sha256 of the SQL macros the partials' queries call."""
    h = hashlib.sha256()
    for path in sorted((sql_root() / "macros").glob("*.sql")):
        h.update(f"{path.name}\n{path.read_text(encoding='utf-8')}\n".encode())
    return h.hexdigest()
