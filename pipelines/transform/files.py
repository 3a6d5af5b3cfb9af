"""The bill's line marts kept up to date by file: a delivery rebuilds the rows of its own files only.

commitment_lines, transfer_lines and log_storage_lines hold one row per bill line of a kind (a commitment's,
a data transfer's, a log store's): each row is a function of its line, the line's tag set and ledger row,
and the built-in catalogues, never of other lines. Providers deliver the month to date again every night,
so building them from the whole bill grew with the history (about 1 s a week of it each at 1,000 GPUs).
Instead each file's lines are fingerprinted (sql/intermediate/incremental/bill_files.sql) with what every
file shares (the mart's SQL, the macros and the catalogues: the caller's digest; the bill's columns); the
rows of a file whose fingerprint changed are built again, those of a file gone from the bill deleted.

The files' fingerprints live in int_incremental_files; the marts that read these see one fingerprint of all
of them (int_mart_inputs). A missing one (deleted to force a rebuild) or a table of other columns (one an
earlier wastewatch built without x_file_id) builds every file again in one statement.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from pipelines.marts.registry import FILE_MARTS
from pipelines.transform.fingerprints import (
    MASK,
    SQL,
    Memo,
    combine,
    shape_hash,
    store_inputs,
    store_parts,
    stored_inputs,
    table_fingerprint,
    text_hash,
)
from pipelines.warehouse import columns, drop_view, rows, sql_text, table_exists

# the fingerprint each file's rows of a table kept up to date by file were built from
FILES = "int_incremental_files"


@dataclass
class FileStats:
    """What one refresh did: the files whose rows were built again, the files whose rows were dropped."""

    files_rebuilt: list[str] = field(default_factory=list)
    files_removed: list[str] = field(default_factory=list)
    full: bool = False

    @property
    def kept(self) -> bool:
        return not (self.full or self.files_rebuilt or self.files_removed)


def refresh(
    con: duckdb.DuckDBPyConnection, name: str, digest: str, full: bool = False, memo: Memo | None = None
) -> FileStats:
    """Build again the rows of mart `name` of the files whose lines changed, drop those of files gone
    (inside the caller's transaction). `digest` is that of the mart's SQL and what it reads besides the bill;
    `memo` the run's fingerprints."""
    if name not in FILE_MARTS:
        raise KeyError(f"{name!r} is not kept up to date by file")
    full = _ensure_table(con, name) or full or stored_inputs(con, name) is None
    base = combine(
        text_hash(digest),
        text_hash(sql_text(SQL, "bill_files")),
        shape_hash(columns(con, "billing_lines")),
        table_fingerprint(con, "billing_columns", memo=memo),
    )
    current = {
        r["file_id"]: combine(base, int(r["fingerprint"]) & MASK)
        for r in rows(con, sql_text(SQL, "bill_files"))
    }
    stored = {} if full else stored_files(con, name)
    stats = FileStats(
        files_rebuilt=sorted(f for f, fp in current.items() if stored.get(f) != fp),
        files_removed=sorted(f for f in stored if f not in current),
        full=full,
    )
    sql = sql_text("marts", name)
    if full:
        con.execute(f"create or replace table {name} as\n{sql}", {"files": sorted(current)})
        con.execute(f"delete from {FILES} where object = $o", {"o": name})  # noqa: S608 - our constant
    else:
        redo = stats.files_rebuilt + stats.files_removed
        if redo:
            # identifiers from our own constants; the files are bound
            con.execute(
                f"delete from {name} where x_file_id in (select unnest($files::varchar[]))",  # noqa: S608
                {"files": redo},
            )
            con.execute(
                f"delete from {FILES} where object = $o and list_contains($files, file_id)",  # noqa: S608
                {"o": name, "files": redo},
            )
        if stats.files_rebuilt:
            con.execute(f"insert into {name} by name\n{sql}", {"files": stats.files_rebuilt})
    store_parts(con, FILES, name, {f: current[f] for f in stats.files_rebuilt})
    if not stats.kept or stored_inputs(con, name) is None:
        store_inputs(con, name, text_hash("\n".join(f"{f} {fp}" for f, fp in sorted(current.items()))))
    return stats


def stored_files(con: duckdb.DuckDBPyConnection, name: str) -> dict[str, int]:
    """The fingerprint each file's stored rows of table `name` were built from."""
    sql = f"select file_id, fingerprint from {FILES} where object = $o"  # noqa: S608 - our constant
    return {r["file_id"]: int(r["fingerprint"]) for r in rows(con, sql, {"o": name})}


def _ensure_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Make the mart again (empty) when it is a table of other columns than the query's; whether it must be
    built in full (it was missing or made again).

    A view of that name (a mart Spark built) is dropped first.
    """
    drop_view(con, name)
    if not table_exists(con, name):
        return True  # built in full from the query next: no need to probe its columns
    con.execute(
        f"create or replace temp table _file_probe as\n{sql_text('marts', name)}\nlimit 0", {"files": []}
    )
    created = not (table_exists(con, name) and columns(con, name) == columns(con, "_file_probe"))
    if created:
        con.execute(f"drop table if exists {name}")
        con.execute(f"create table {name} as from _file_probe")
    con.execute("drop table _file_probe")
    return created
