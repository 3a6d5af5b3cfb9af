"""Incremental, idempotent ingestion: the ledger decides what is new; one transaction per file.

A file whose size, modification time or checksum is unchanged is not read again. A changed file
replaces the rows it loaded before, in the same transaction. A file that cannot be read is recorded
`rejected` with a message naming the file, line/column and problem; earlier rows from it (if any) stay,
and every other file still loads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from pipelines.config import Config, Source
from pipelines.ingest.errors import RejectedFile
from pipelines.ingest.files import SourceFile, list_local
from pipelines.ingest.readers import get_reader
from pipelines.ingest.readers.base import LoadContext, LoadResult, Reader, duckdb_problem
from pipelines.warehouse import one, transaction, utcnow


@dataclass
class FileOutcome:
    source: str
    uri: str
    status: str  # loaded | unchanged | rejected
    rows: int = 0
    error: str | None = None
    target: str | None = None


@dataclass
class IngestReport:
    outcomes: list[FileOutcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # sources skipped, missing folders, ...

    def of(self, status: str) -> list[FileOutcome]:
        return [o for o in self.outcomes if o.status == status]

    @property
    def rejected(self) -> list[FileOutcome]:
        return self.of("rejected")

    def rows_into(self, table: str) -> int:
        return sum(o.rows for o in self.outcomes if o.status == "loaded" and o.target == table)

    @property
    def exit_code(self) -> int:
        return 1 if self.rejected else 0

    def summary(self) -> str:
        loaded, unchanged, rejected = self.of("loaded"), self.of("unchanged"), self.rejected
        rows = sum(o.rows for o in loaded)
        text = f"{len(loaded)} file(s) loaded ({rows:,} rows), {len(unchanged)} unchanged, {len(rejected)} rejected"
        lines = [text, *(f"  note: {n}" for n in self.notes)]
        lines += [f"  rejected: {o.error}" for o in rejected]
        return "\n".join(lines)


def file_id(source: str, uri: str) -> str:
    return hashlib.sha1(f"{source}|{uri}".encode()).hexdigest()[:20]


def ingest(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    targets: tuple[str, ...] | None = None,
    progress: Callable[[str], None] | None = None,
) -> IngestReport:
    """Load every new or changed file of every enabled source whose reader writes one of `targets`."""
    report = IngestReport()
    for source in config.sources:
        if not source.enabled:
            continue
        reader = get_reader(source.kind)
        if reader is None:
            report.notes.append(f"source {source.name!r}: no reader for kind {source.kind!r} yet; skipped")
            continue
        if targets is not None and reader.target_table not in targets:
            continue
        if hasattr(reader, "load_source"):
            outcome = _ingest_whole_source(con, config, source, reader)
            report.outcomes.append(outcome)
            if progress:
                progress(
                    f"{outcome.status:9} {outcome.uri}"
                    + (f" ({outcome.rows:,} rows)" if outcome.rows else "")
                )
            continue
        if source.is_s3:
            report.notes.append(f"source {source.name!r}: s3:// sources are not supported yet; skipped")
            continue
        files = list_local(config, source)
        if not files:
            report.notes.append(f"source {source.name!r}: no files at {config.source_location(source)}")
        for f in files:
            outcome = _ingest_file(con, config, source, reader, f)
            report.outcomes.append(outcome)
            if progress:
                progress(
                    f"{outcome.status:9} {f.uri}" + (f" ({outcome.rows:,} rows)" if outcome.rows else "")
                )
    return report


def _ingest_file(
    con: duckdb.DuckDBPyConnection, config: Config, source: Source, reader: Reader, f: SourceFile
) -> FileOutcome:
    fid = file_id(source.name, f.uri)
    prev = one(
        con,
        "select status, size_bytes, modified_at, checksum from ingest_files where file_id = $id",
        {"id": fid},
    )
    target = reader.target_table
    if prev and prev[0] == "loaded" and prev[1] == f.size and prev[2] == f.modified_at:
        return FileOutcome(source.name, f.uri, "unchanged", target=target)
    checksum = f.checksum()
    if prev and prev[0] == "loaded" and prev[1] == f.size and prev[3] == checksum:
        con.execute(
            "update ingest_files set modified_at = $m where file_id = $id", {"m": f.modified_at, "id": fid}
        )
        return FileOutcome(source.name, f.uri, "unchanged", target=target)
    now = utcnow()
    ctx = LoadContext(source=source, config=config, file_id=fid, loaded_at=now)
    try:
        with transaction(con):
            con.execute(f"delete from {target} where x_file_id = $id", {"id": fid})  # noqa: S608 - identifiers only, values are bound
            result = reader.load(con, f, ctx)
            _record(con, fid, source, f, checksum, "loaded", None, result, now)
        return FileOutcome(source.name, f.uri, "loaded", rows=result.rows, target=target)
    except RejectedFile as exc:
        error = str(exc)
    except (duckdb.Error, OSError, EOFError) as exc:
        error = f"{f.uri}: cannot load: {duckdb_problem(exc)}"
    with transaction(con):
        _record(con, fid, source, f, checksum, "rejected", error, None, now)
    return FileOutcome(source.name, f.uri, "rejected", error=error, target=target)


def _ingest_whole_source(
    con: duckdb.DuckDBPyConnection, config: Config, source: Source, reader: Reader
) -> FileOutcome:
    """A reader that reads a whole source at once (an API listing, a file-system walk) rather than files.

    It defines `load_source(con, source, ctx) -> LoadResult`; each run replaces the source's previous rows
    in one transaction, and the ledger holds one row for the source (uri = its location).
    """
    location = config.source_location(source)
    fid = file_id(source.name, f"source:{location}")
    now = utcnow()
    pseudo = SourceFile(uri=location, local_path=Path(location), relative="", size=0, modified_at=now)
    ctx = LoadContext(source=source, config=config, file_id=fid, loaded_at=now)
    target = reader.target_table
    try:
        with transaction(con):
            con.execute(f"delete from {target} where x_file_id = $id", {"id": fid})  # noqa: S608 - our constant
            result = reader.load_source(con, source, ctx)  # type: ignore[attr-defined]
            _record(con, fid, source, pseudo, None, "loaded", None, result, now)
        return FileOutcome(source.name, location, "loaded", rows=result.rows, target=target)
    except RejectedFile as exc:
        error = str(exc)
    except duckdb.Error as exc:
        error = f"{location}: cannot load: {duckdb_problem(exc)}"
    with transaction(con):
        _record(con, fid, source, pseudo, None, "rejected", error, None, now)
    return FileOutcome(source.name, location, "rejected", error=error, target=target)


def _record(
    con: duckdb.DuckDBPyConnection,
    fid: str,
    source: Source,
    f: SourceFile,
    checksum: str | None,
    status: str,
    error: str | None,
    result: LoadResult | None,
    now: object,
) -> None:
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
    }
    con.execute(
        """
        insert into ingest_files values (
            $id, $source, $kind, $uri, $size, $mtime, $etag, $checksum, $period, $rows, $billed, $effective,
            $status, $error, $now, $now, case when $status = 'loaded' then $now end
        )
        on conflict (file_id) do update set
            size_bytes = excluded.size_bytes, modified_at = excluded.modified_at, etag = excluded.etag,
            checksum = excluded.checksum, status = excluded.status, error = excluded.error,
            checked_at = excluded.checked_at,
            billing_period = coalesce(excluded.billing_period, ingest_files.billing_period),
            rows = coalesce(excluded.rows, ingest_files.rows),
            billed_cost_sum = coalesce(excluded.billed_cost_sum, ingest_files.billed_cost_sum),
            effective_cost_sum = coalesce(excluded.effective_cost_sum, ingest_files.effective_cost_sum),
            loaded_at = coalesce(excluded.loaded_at, ingest_files.loaded_at)
        """,
        params,
    )
