"""The ledger `ingest_files`: one row per source file, the one place that decides what is new.

A file is identified by its source and its key (`file_id`): a local file's path relative to the source's
root, an S3 object's s3:// uri, a whole source's `source:` key (see `key_of`), so moving the project or
remounting a volume changes no id; its content (size, modification time, ETag, checksum) is its version.
`follow_moves()` points the ledger's `uri` at where each file is now, and gives the rows an earlier
wastewatch keyed by absolute path their relative id. Its row holds what the file was when it last
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
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import Config, Source
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadResult
from pipelines.sources.registry import kinds_of
from pipelines.warehouse import one, rows, sql_text, transaction

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


def file_id(source: str, file: SourceFile | str) -> str:
    """A file's ledger id (also `x_file_id` in the rows it landed): its source and its key, hashed. A
    SourceFile's key is `key_of(file)`; a str is the key itself (a whole source's, an S3 uri)."""
    key = key_of(file) if isinstance(file, SourceFile) else file
    return hashlib.sha1(f"{source}|{key}".encode()).hexdigest()[:20]


def key_of(f: SourceFile) -> str:
    """What names a file within its source whatever the folder it is mounted in: a local file's path
    relative to the source's root (its folder, a glob's fixed part, a lone file's folder); an S3 object's
    s3:// uri (bucket and prefix are the root: a bucket is not moved, and its keys never change under it).

    The local path is that of the file the listing resolves to (`uri`) under the resolved root, so a link
    in the folder to one of its files (`latest.csv`) is that file, as it was when ids were absolute paths;
    a link to a file outside the root is named by its own place in the folder."""
    if f.is_remote:
        return f.uri
    # string operations, not pathlib: this runs for every listed file of every run
    listed, rel = str(f.local_path), f.relative
    if listed.endswith("/" + rel):
        root = _resolved(listed[: -len(rel) - 1] or "/")
        if f.uri.startswith(root.rstrip("/") + "/"):
            return f.uri[len(root.rstrip("/")) + 1 :]
    return rel


@lru_cache(maxsize=64)
def _resolved(folder: str) -> str:
    """A source root with its links resolved (asked once per root and run, not once per file)."""
    return str(Path(folder).resolve())


def source_key(config: Config, source: Source) -> str:
    """The key of a source read whole (one ledger row for the source): `source:` and its location for an
    HTTP API or an S3 prefix, as before; `source:` alone for a local folder or a cloud API named by region
    (`ec2://`, `logs://`, whose location the config resolves like a path), so a moved project keeps its row."""
    location = config.source_location(source)
    return f"source:{location}" if source.is_s3 or source.is_http else "source:"


def key_in(location: str, uri: str) -> str:
    """The key of a file a whole-source reader finds under a local `location` (an inventory report): its
    path relative to the location; an S3 uri (or a path outside it) is its own key."""
    if uri.startswith("s3://"):
        return uri
    try:
        return str(Path(uri).resolve().relative_to(Path(location).resolve()))
    except ValueError:
        return uri


def previous(con: duckdb.DuckDBPyConnection, fid: str) -> dict[str, Any] | None:
    """The ledger's row of one file, or None when it has never been seen."""
    found = rows(
        con,
        f"select {_COLUMNS} from ingest_files where file_id = $id",  # noqa: S608 - our constant
        {"id": fid},
    )
    return found[0] if found else None


def previous_many(con: duckdb.DuckDBPyConnection, fids: list[str]) -> dict[str, dict[str, Any]]:
    """The ledger's rows of these files, by file id, in one query (files never seen have none)."""
    found = rows(
        con,
        f"select {_COLUMNS} from ingest_files where file_id in (select unnest($ids))",  # noqa: S608 - our constant
        {"ids": fids},
    )
    return {r["file_id"]: r for r in found}


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
    fid = file_id(source.name, f)
    if held(con, fid):
        con.execute(
            "update ingest_files set error = $e, checked_at = $now where file_id = $id",
            {"e": f"{NEW_VERSION_REJECTED}{why}", "now": now, "id": fid},
        )
    else:
        record(con, fid, source, f, checksum, "rejected", why, None, now)
    return outcome(f, "rejected", error=why)


@dataclass(frozen=True)
class Outcome:
    """One file's ledger row to write (record_many): its outcome, the checksum and what it landed."""

    fid: str
    file: SourceFile
    checksum: str | None
    status: str
    error: str | None = None
    result: LoadResult | None = None
    delivery: str | None = None
    duplicate_of: str | None = None


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
    record_many(con, source, now, [Outcome(fid, f, checksum, status, error, result, delivery, duplicate_of)])


def _text(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def record_many(con: duckdb.DuckDBPyConnection, source: Source, now: object, outcomes: list[Outcome]) -> None:
    """Insert or update the ledger rows of a source's files in one statement (inside the caller's
    transaction): a batch of telemetry files is thousands of files, and a statement each cost ~8 ms of CPU."""
    if not outcomes:
        return
    results = [o.result for o in outcomes]
    con.execute(
        sql_text("raw/ledger", "record"),
        {
            "source": source.name,
            "kind": source.kind,
            "now": now,
            "id": [o.fid for o in outcomes],
            "uri": [o.file.uri for o in outcomes],
            "size": [o.file.size for o in outcomes],
            "mtime": [o.file.modified_at for o in outcomes],
            "etag": [o.file.etag for o in outcomes],
            "checksum": [o.checksum for o in outcomes],
            "period": [r.billing_period if r else None for r in results],
            "rows": [r.rows if r else None for r in results],
            "billed": [_text(r.billed_cost_sum) if r else None for r in results],
            "effective": [_text(r.effective_cost_sum) if r else None for r in results],
            "status": [o.status for o in outcomes],
            "error": [o.error for o in outcomes],
            "delivery": [o.delivery for o in outcomes],
            "file_rows": [r.file_rows if r else None for r in results],
            "file_billed": [_text(r.file_billed_cost_sum) if r else None for r in results],
            "file_effective": [_text(r.file_effective_cost_sum) if r else None for r in results],
            "currencies": [r.currencies if r else None for r in results],
            "duplicate_of": [o.duplicate_of for o in outcomes],
        },
    )


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


def follow_moves(
    con: duckdb.DuckDBPyConnection, config: Config, source: Source, files: list[SourceFile]
) -> int:
    """Point the ledger at where the source's `files` (as listed now) are, in one transaction, before
    anything is judged new; the number of ledger rows whose id or uri changed. Nothing is read again.

    - A listed file whose ledger row names another uri has moved (the project, a remounted volume, a renamed
      parent folder): the row's uri, the `duplicate_of` of copies naming it and its rows' `x_source_file`
      become where it is now.
    - A listed file new to the ledger at a uri a row of the source holds (the config named a folder above
      or below the source's root): that row takes the file's id.
    - A row an earlier wastewatch keyed by absolute location (schema version 18 and before:
      sha1(source | uri)) is given its key's id, in the ledger and in every table that stores file ids,
      the first time this runs: a file at the uri listed now takes that file's key; else a path under the
      source's root takes its path relative to it; else (the project moved while it was upgraded) the one
      listed file whose relative path ends its uri. A row none of these explains (a file gone from the
      source) keeps its old id and its rows.
    """
    if source.is_s3 or source.is_http:
        return 0  # their keys are their uris, as before
    _resolved.cache_clear()  # a root's links are resolved again for each run
    by_uri = {f.uri: f for f in files}
    by_key = {key_of(f): f for f in files}
    known = {
        r["file_id"]: r["uri"]
        for r in rows(con, sql_text("raw/ledger", "of_source"), {"source": source.name})
    }
    moves: dict[str, tuple[str, str, str]] = {}  # old id -> (new id, old uri, new uri)
    location = config.source_location(source)
    root = config.source_root(source).resolve()
    sid = file_id(source.name, source_key(config, source))
    found = rows(con, sql_text("raw/ledger", "keyed_by_path"), {"source": source.name})
    whole = [r for r in found if r["whole"]]
    for r in whole:  # the source's own row: its only one, or the one of its location now
        if len(whole) == 1 or r["uri"] == location:
            moves[r["file_id"]] = (sid, r["uri"], location)
    # a source read whole (its files found by its reader, not listed here) was last read at the uri of its
    # own row: what it found under that folder is under its root now
    was = known.get(sid) or next((m[1] for m in moves.values() if m[0] == sid), None)
    old_root = Path(was).resolve() if not files and was and was != location else None
    for r in found:
        old, uri = r["file_id"], r["uri"]
        if r["whole"]:
            continue
        if uri in by_uri:
            f = by_uri[uri]
            moves[old] = (file_id(source.name, f), uri, f.uri)
        elif Path(uri).is_relative_to(root):
            key = str(Path(uri).relative_to(root))
            f = by_key.get(key)
            moves[old] = (file_id(source.name, key), uri, f.uri if f else uri)
        elif old_root is not None and Path(uri).is_relative_to(old_root):
            key = str(Path(uri).relative_to(old_root))
            moves[old] = (file_id(source.name, key), uri, str(root / key))
        else:
            f = _ending(uri, by_key)
            if f is not None:
                moves[old] = (file_id(source.name, f), uri, f.uri)
    claimed: dict[str, list[str]] = {}  # new id -> the old rows given it
    for old, m in moves.items():
        claimed.setdefault(m[0], []).append(old)
    # an id some row already has, or that two old rows would take (which one it was is unknown), is left be
    taken = set(known) - set(moves)
    moves = {old: m for old, m in moves.items() if m[0] not in taken and len(claimed[m[0]]) == 1}
    at = {uri: fid for fid, uri in known.items() if fid not in moves}
    for f in files:
        fid = file_id(source.name, f)
        if fid in known and fid not in moves and known[fid] != f.uri:  # a file that moved
            moves[fid] = (fid, known[fid], f.uri)
        elif (
            fid not in known and f.uri in at and at[f.uri] not in moves
        ):  # the config moved the source's root
            moves[at[f.uri]] = (fid, f.uri, f.uri)
    for fid, uri in known.items():  # the same for a source read whole: its own row and what it found
        if fid == sid and uri != location:
            moves[fid] = (fid, uri, location)
        elif old_root is not None and fid not in moves and Path(uri).is_relative_to(old_root):
            moves[fid] = (fid, uri, str(root / Path(uri).relative_to(old_root)))
    if moves:
        with transaction(con):
            _rewrite(con, [(old, *m) for old, m in moves.items()])
    return len(moves)


def _ending(uri: str, by_key: dict[str, SourceFile]) -> SourceFile | None:
    """The listed file whose relative path is the longest tail of `uri`'s path, if any."""
    parts = Path(uri).parts
    for i in range(1, len(parts)):
        f = by_key.get(str(Path(*parts[i:])))
        if f is not None:
            return f
    return None


def _rewrite(con: duckdb.DuckDBPyConnection, moves: list[tuple[str, str, str, str]]) -> None:
    """Apply (old id, new id, old uri, new uri) to the ledger and to every table holding file ids: each
    base table's x_file_id (and x_source_file beside it), and the file marts' state (inside the caller's
    transaction)."""
    olds, news, old_uris, new_uris = (list(c) for c in zip(*moves, strict=True))
    con.execute(
        "create or replace temp table _file_moves as select unnest($o) as old_id, unnest($n) as new_id, "
        "unnest($ou) as old_uri, unnest($nu) as new_uri",
        {"o": olds, "n": news, "ou": old_uris, "nu": new_uris},
    )
    for r in rows(con, sql_text("raw/ledger", "file_id_tables")):
        table = '"' + r["table_name"].replace('"', '""') + '"'  # a name from the catalogue
        column = r["column_name"]
        sets = [f"{column} = m.new_id"] + (["x_source_file = m.new_uri"] if r["has_source_file"] else [])
        con.execute(
            f"update {table} set {', '.join(sets)} from _file_moves as m "  # noqa: S608 - catalogue names
            f"where {table}.{column} = m.old_id"
        )
    con.execute(sql_text("raw/ledger", "move_files"))
    con.execute(sql_text("raw/ledger", "move_copies"))
    con.execute("drop table _file_moves")
