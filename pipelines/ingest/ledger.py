"""The ledger `ingest_files`: one row per source file, the one place that decides what is new.

A file is identified by its source and uri (`file_id`). Its row holds what the file was when it last
loaded (size, modification time, ETag, checksum), its outcome and the sums reconciliation compares.
Every ingestion mode asks `unchanged()` whether a listed file still has the bytes it loaded, and writes
its outcome through `record()` / `reject()`. Billing content is loaded once across the whole warehouse:
`live_copy()` finds the loaded billing file (any source, name or period) with the same sha256.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from pipelines.config import Source
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadResult
from pipelines.sources.registry import kinds_of
from pipelines.warehouse import one, rows, sql_text

# error prefix of a ledger row that still holds its loaded lines while a new version was rejected
NEW_VERSION_REJECTED = "new version rejected: "


@dataclass
class FileOutcome:
    source: str
    uri: str
    status: str  # loaded | unchanged | rejected | superseded | removed | renamed | duplicate
    rows: int = 0
    error: str | None = None
    target: str | None = None
    repairs: list[str] = field(default_factory=list)  # documented repairs applied while loading


# the ledger columns `previous` and `of_source` return
_COLUMNS = (
    "file_id, uri, status, size_bytes, modified_at, etag, checksum, billing_period, delivery_id, duplicate_of"
)


def file_id(source: str, uri: str) -> str:
    return hashlib.sha1(f"{source}|{uri}".encode()).hexdigest()[:20]


def previous(con: duckdb.DuckDBPyConnection, fid: str) -> dict[str, Any] | None:
    """The ledger's row of one file, or None when it has never been seen."""
    found = rows(
        con,
        f"select {_COLUMNS} from ingest_files where file_id = $id",  # noqa: S608 - our constant
        {"id": fid},
    )
    return found[0] if found else None


def of_source(con: duckdb.DuckDBPyConnection, source: Source) -> dict[str, dict[str, Any]]:
    """Every ledger row of a source, by uri."""
    found = rows(
        con,
        f"select {_COLUMNS} from ingest_files where source = $s",  # noqa: S608 - our constant
        {"s": source.name},
    )
    return {r["uri"]: r for r in found}


def unchanged(con: duckdb.DuckDBPyConnection, prev: dict[str, Any] | None, f: SourceFile) -> bool:
    """The ledger's loaded version of `f` has the same bytes.

    Same size and, where both sides have one, the same ETag (S3); else the same modification time; else,
    for a local file, the same sha256 (a touched but identical file), in which case the new modification
    time is recorded so the next run need not hash it again.
    """
    if not prev or prev["status"] != "loaded":
        return False
    return same_bytes(con, prev, f)


def same_bytes(con: duckdb.DuckDBPyConnection, prev: dict[str, Any], f: SourceFile) -> bool:
    """The ledger row `prev` was recorded for the bytes `f` has now (whatever its status); see unchanged()."""
    if prev["size_bytes"] != f.size:
        return False
    if f.etag and prev["etag"]:
        return bool(prev["etag"] == f.etag)
    if prev["modified_at"] == f.modified_at:
        return True
    if f.is_remote or not prev["checksum"]:
        return False
    if f.checksum() == prev["checksum"]:
        con.execute(
            "update ingest_files set modified_at = $m where file_id = $id",
            {"m": f.modified_at, "id": prev["file_id"]},
        )
        return True
    return False


def live_copy(
    con: duckdb.DuckDBPyConnection, checksum: str, size: int, replaced: list[str]
) -> dict[str, Any] | None:
    """The billing file loaded with these bytes (sha256 and size) in any source, under any name and in any
    billing period, whose lines are in the warehouse now, leaving out the files in `replaced` (what the
    caller's load deletes: its own earlier version, the period a restatement replaces). None if there is
    none: the bytes are new to the warehouse."""
    found = rows(
        con,
        sql_text("raw/ledger", "live_copy"),
        {"checksum": checksum, "size": size, "replaced": replaced, "kinds": list(kinds_of("billing"))},
    )
    return found[0] if found else None


def still_duplicate(con: duckdb.DuckDBPyConnection, prev: dict[str, Any] | None, f: SourceFile) -> bool:
    """`f` was recorded `duplicate`, has the same bytes now, and the file it copies still holds its lines
    (if that one was restated or removed, the copy is new content again and must be read)."""
    if not prev or prev["status"] != "duplicate" or not prev["checksum"] or not same_bytes(con, prev, f):
        return False
    twin = live_copy(con, prev["checksum"], f.size, [prev["file_id"]])
    return twin is not None and twin["uri"] == prev["duplicate_of"]


def held(con: duckdb.DuckDBPyConnection, fid: str) -> bool:
    """The ledger holds this file as loaded: its rows are in the table."""
    status = one(con, "select status from ingest_files where file_id = $id", {"id": fid})
    return status is not None and status[0] == "loaded"


def reject(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    f: SourceFile,
    why: str,
    checksum: str | None,
    now: Any,
    outcome: Callable[..., FileOutcome],
) -> FileOutcome:
    """Record a file rejected. A file whose earlier version (same name) the ledger holds as loaded keeps that
    status, size and ETag, because its lines are still in the table: the error is noted as `new version
    rejected: ...` (the CLI reports it), and the next run sees the new version again and retries."""
    fid = file_id(source.name, f.uri)
    if held(con, fid):
        con.execute(
            "update ingest_files set error = $e, checked_at = $now where file_id = $id",
            {"e": f"{NEW_VERSION_REJECTED}{why}", "now": now, "id": fid},
        )
    else:
        record(con, fid, source, f, checksum, "rejected", why, None, now)
    return outcome(f, "rejected", error=why)


def record(
    con: duckdb.DuckDBPyConnection,
    fid: str,
    source: Source,
    f: SourceFile,
    checksum: str | None,
    status: str,
    error: str | None,
    result: LoadResult | None,
    now: object,
    delivery: str | None = None,
    duplicate_of: str | None = None,
) -> None:
    """Insert or update the file's ledger row with its outcome (inside the caller's transaction)."""
    params = {
        "id": fid,
        "source": source.name,
        "kind": source.kind,
        "uri": f.uri,
        "size": f.size,
        "mtime": f.modified_at,
        "etag": f.etag,
        "checksum": checksum,
        "period": result.billing_period if result else None,
        "rows": result.rows if result else None,
        "billed": result.billed_cost_sum if result else None,
        "effective": result.effective_cost_sum if result else None,
        "status": status,
        "error": error,
        "now": now,
        "delivery": delivery,
        "file_rows": result.file_rows if result else None,
        "file_billed": result.file_billed_cost_sum if result else None,
        "file_effective": result.file_effective_cost_sum if result else None,
        "currencies": result.currencies if result else None,
        "duplicate_of": duplicate_of,
    }
    con.execute(sql_text("raw/ledger", "record"), params)


def record_snapshot(
    con: duckdb.DuckDBPyConnection,
    *,
    file_id: str,
    source: Source,
    uri: str,
    size: int | None,
    modified_at: datetime | None,
    etag: str | None,
    checksum: str | None,
    rows: int,
    now: datetime,
) -> None:
    """A ledger row (`ingest_files`) for one snapshot a whole-source reader loaded (an inventory manifest)."""
    con.execute(
        sql_text("raw/ledger", "record_snapshot"),
        {
            "id": file_id,
            "source": source.name,
            "kind": source.kind,
            "uri": uri,
            "size": size,
            "mtime": modified_at,
            "etag": etag,
            "checksum": checksum,
            "rows": rows,
            "now": now,
        },
    )
