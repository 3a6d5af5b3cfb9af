"""What an ingest would load, found without loading or writing anything: the first new, changed or removed
file of each source, judged as the ingestion modes judge it (pipelines/ingest/ledger.py), or None.

A nightly run uses it to stop before Dagster when nothing is new (pipelines/transform/nothing_new.py). It errs towards
a run: a file whose modification time moved is pending even if its bytes did not change (the run hashes it
and records the new time), and so is any file the ledger holds as rejected or removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb

from pipelines.config import Config, Source
from pipelines.errors import RejectedFile, S3Error
from pipelines.ingest import ledger
from pipelines.ingest.files import SourceFile, list_files, list_local
from pipelines.ingest.readers import get_reader
from pipelines.ingest.readers.base import DeliveryReader, SourceReader
from pipelines.ingest.run import missing_location
from pipelines.net import s3 as s3mod
from pipelines.sources.options import BillingOptions
from pipelines.sources.registry import source_kind

# ledger statuses of a listed file that a run leaves as they are when its bytes did not change
SETTLED = ("loaded", "superseded", "duplicate")


@dataclass(frozen=True)
class SourceCheck:
    source: str
    target: str
    unchanged: int = 0  # files (or reports) the ledger holds as they are listed now
    pending: str | None = None  # why a run would read the source: its first new, changed or removed file
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (uri, why) of files no reader claims


def check_sources(con: duckdb.DuckDBPyConnection, config: Config) -> list[SourceCheck]:
    """One check per enabled source, stopping at the first source with something pending."""
    out: list[SourceCheck] = []
    for source in config.sources:
        if not source.enabled:
            continue
        check = _check(con, config, source)
        out.append(check)
        if check.pending:
            break
    return out


def _check(con: duckdb.DuckDBPyConnection, config: Config, source: Source) -> SourceCheck:
    target = source_kind(source.kind).target
    reader = get_reader(source.kind)
    try:
        if isinstance(reader, SourceReader):
            return SourceCheck(source.name, target, 1, reader.pending(con, config, source))
        skipped: list[tuple[str, str]] = []
        files = _listed(config, source, skipped)
    except (RejectedFile, S3Error, ValueError, OSError) as exc:
        return SourceCheck(source.name, target, pending=f"source {source.name!r} cannot be read: {exc}")
    if isinstance(files, str):
        return SourceCheck(source.name, target, pending=files)
    known = ledger.of_source(con, source)
    by_id = {r["file_id"]: r for r in known.values()}  # a moved file is known by its id, not its uri
    for f in files:
        why = _changed(by_id.get(ledger.file_id(source.name, f)), f)
        if why:
            return SourceCheck(source.name, target, pending=f"{f.uri}: {why}", skipped=skipped)
    # a billing file gone from a listing that is not empty has its rows deleted by the run; other readers
    # keep the rows of a file that is gone, and so does `on_removed: keep`
    listed = {ledger.file_id(source.name, f) for f in files}
    if (
        isinstance(reader, DeliveryReader)
        and files
        and source.options_as(BillingOptions).on_removed != "keep"
    ):
        for uri, row in known.items():
            if row["status"] == "loaded" and row["file_id"] not in listed:
                return SourceCheck(
                    source.name, target, pending=f"{uri}: gone from the source", skipped=skipped
                )
    return SourceCheck(source.name, target, len(files), skipped=skipped)


def _listed(config: Config, source: Source, skipped: list[tuple[str, str]]) -> list[SourceFile] | str:
    """The source's files as a run lists them, or why the location cannot be read."""
    if source.is_s3:
        return list_files(config, source, s3mod.client(source), skipped)
    missing = missing_location(config, source)
    if missing:
        return f"source {source.name!r}: {missing}"
    return list_local(config, source, skipped)


def _changed(prev: dict[str, Any] | None, f: SourceFile) -> str | None:
    """Why a run would read (or record) this file again: ledger.same_bytes() without hashing."""
    if prev is None:
        return "new"
    if prev["status"] not in SETTLED:
        return f"{prev['status']} before"
    if prev["size_bytes"] != f.size:
        return "changed (size)"
    if f.etag and prev["etag"]:
        return None if prev["etag"] == f.etag else "changed (ETag)"
    return None if prev["modified_at"] == f.modified_at else "changed (modification time)"
