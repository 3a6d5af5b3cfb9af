"""One ingestion run: every enabled source, read in the mode its reader's base class names."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from pipelines import progress
from pipelines.config import Config, Source
from pipelines.errors import S3Error, SourceFailed
from pipelines.failpoints import failpoint
from pipelines.ingest import ledger
from pipelines.ingest.files import SourceFile, clean_cache, fetch, list_files, list_local, source_cache
from pipelines.ingest.ledger import FileOutcome
from pipelines.ingest.modes.batched import ingest_in_batches
from pipelines.ingest.modes.deliveries import ingest_deliveries
from pipelines.ingest.modes.per_file import ingest_file
from pipelines.ingest.modes.whole_source import ingest_source
from pipelines.ingest.readers import get_reader
from pipelines.ingest.readers.base import BatchReader, DeliveryReader, FileReader, SourceReader
from pipelines.net import s3 as s3mod
from pipelines.sources.registry import source_kind


@dataclass
class IngestReport:
    outcomes: list[FileOutcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # sources skipped, empty folders, repairs, ...
    # files in a source folder that no reader claims: (source, uri, why); not read, and not a failure
    skipped: list[tuple[str, str, str]] = field(default_factory=list)
    # sources that could not be read at all (a missing folder, an unreachable bucket): one line each
    failures: list[str] = field(default_factory=list)

    def of(self, status: str) -> list[FileOutcome]:
        return [o for o in self.outcomes if o.status == status]

    @property
    def rejected(self) -> list[FileOutcome]:
        return self.of("rejected")

    def rows_into(self, table: str) -> int:
        return sum(o.rows for o in self.outcomes if o.status == "loaded" and o.target == table)

    @property
    def exit_code(self) -> int:
        return 1 if self.rejected or self.failures else 0

    def summary(self) -> str:
        loaded, unchanged, rejected = self.of("loaded"), self.of("unchanged"), self.rejected
        rows_ = sum(o.rows for o in loaded)
        text = f"{len(loaded)} file(s) loaded ({rows_:,} rows), {len(unchanged)} unchanged, {len(rejected)} rejected"
        others = [
            f"{len(self.of(s))} {s}" for s in ("superseded", "removed", "renamed", "duplicate") if self.of(s)
        ]
        if others:
            text += " (" + ", ".join(others) + ")"
        lines = [text, *(f"  failed: {f}" for f in self.failures), *(f"  note: {n}" for n in self.notes)]
        lines += [f"  skipped: {uri}: {why}" for _, uri, why in self.skipped]
        lines += [f"  repaired: {o.uri}: {r}" for o in self.outcomes for r in o.repairs]
        lines += [f"  duplicate: {o.error}" for o in self.of("duplicate")]
        lines += [f"  rejected: {o.error}" for o in rejected]
        return "\n".join(lines)


def ingest(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    targets: tuple[str, ...] | None = None,
    log: Callable[[str], None] | None = None,
) -> IngestReport:
    """Load every new or changed file of every enabled source whose kind writes one of `targets`.

    `log` gets a line per file; a person watching (pipelines/progress.py) gets a line per source as it
    finishes and a counter while a source with many files loads."""
    report = IngestReport()
    for source in config.sources:
        target = source_kind(source.kind).target
        if not source.enabled or (targets is not None and target not in targets):
            continue
        reader = get_reader(source.kind)
        started = time.monotonic()
        failures = len(report.failures)
        with progress.ticking(f"  {source.name} ({source.kind}): loading"):
            if isinstance(reader, SourceReader):
                ledger.follow_moves(con, config, source, [])
                try:
                    outcomes = [ingest_source(con, config, source, reader, target)]
                except SourceFailed as exc:  # an API that cannot be reached: a failure, its rows kept
                    report.failures.append(f"source {source.name!r}: {exc}")
                    outcomes = []
            else:
                assert isinstance(reader, FileReader)
                outcomes = _ingest_files(con, config, source, reader, target, report)
        report.outcomes.extend(outcomes)
        progress.done(_source_line(source, outcomes, report.failures[failures:], started))
        if log:
            for o in outcomes:
                log(f"{o.status:9} {o.uri}" + (f" ({o.rows:,} rows)" if o.rows else ""))
    return report


def _source_line(source: Source, outcomes: list[FileOutcome], failures: list[str], started: float) -> str:
    """One source's progress line: `  slurm (slurm_sacct): 4 file(s) loaded, 1,234 rows, 2 unchanged in 0.4 s`."""
    if failures:
        return f"  {source.name} ({source.kind}): could not be read, in {progress.seconds(started)}"
    counts = {s: sum(o.status == s for o in outcomes) for s in ("loaded", "unchanged", "rejected")}
    rows = sum(o.rows for o in outcomes if o.status == "loaded")
    parts = [f"{counts['loaded']} file(s) loaded, {rows:,} rows"]
    parts += [f"{n} {s}" for s, n in counts.items() if s != "loaded" and n]
    return f"  {source.name} ({source.kind}): {', '.join(parts)} in {progress.seconds(started)}"


def _ingest_files(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    source: Source,
    reader: FileReader,
    target: str,
    report: IngestReport,
) -> list[FileOutcome]:
    """List the source's files, then load them in the reader's mode."""
    s3 = None
    skipped: list[tuple[str, str]] = []
    if source.is_s3:
        try:
            s3 = s3mod.client(source)
            files = list_files(config, source, s3, skipped)
        except (S3Error, ValueError) as exc:
            report.failures.append(f"source {source.name!r}: {exc}")
            return [FileOutcome(source.name, source.uri, "rejected", error=str(exc), target=target)]
    else:
        missing = missing_location(config, source)
        if missing:
            report.failures.append(f"source {source.name!r}: {missing}")
            return []
        files = list_local(config, source, skipped)
    report.skipped.extend((source.name, uri, why) for uri, why in skipped)
    ledger.follow_moves(con, config, source, files)
    failpoint("ingest.listed")
    if not files:
        report.notes.append(f"source {source.name!r}: no files at {config.source_location(source)}")
    try:
        if isinstance(reader, DeliveryReader):
            return ingest_deliveries(con, config, source, reader, target, files, s3, report.notes)
        if s3 is not None:
            failed = _fetch_changed(con, source, files, s3)
            report.failures.extend(f"source {source.name!r}: {error}" for error in failed.values())
            files = [f for f in files if f.uri not in failed]  # tried again by the next run
        if isinstance(reader, BatchReader):
            return ingest_in_batches(con, config, source, reader, target, files)
        out: list[FileOutcome] = []
        started = time.monotonic()
        for f in files:
            out.append(ingest_file(con, config, source, reader, target, f))
            progress.count_files(source.name, len(out), len(files), sum(o.rows for o in out), started)
        return out
    finally:
        if s3 is not None or isinstance(reader, DeliveryReader):
            clean_cache(source_cache(config, source))


def missing_location(config: Config, source: Source) -> str | None:
    """Why a local source's location cannot be read (it does not exist), or None when it can.

    A folder that exists but holds no files is not a failure; a glob is checked by the folder it starts in.
    """
    location = config.source_location(source)
    if any(ch in location for ch in "*?["):
        root = Path(location.split("*")[0].split("?")[0].split("[")[0].rsplit("/", 1)[0] or "/")
        return None if root.is_dir() else f"folder {root} does not exist (pattern {location})"
    path = Path(location)
    if path.exists():
        return None
    return f"{location} does not exist"


def _fetch_changed(
    con: duckdb.DuckDBPyConnection, source: Source, files: list[SourceFile], s3: Any
) -> dict[str, str]:
    """Download the S3 objects the ledger does not have unchanged (same size and ETag); the ones that could
    not be downloaded (a dropped connection, a peer below the throughput floor), with why. One failed
    download is that file's failure: the source's other files and the other sources still load."""
    known = ledger.of_source(con, source)
    failed: dict[str, str] = {}
    for f in files:
        if not ledger.unchanged(con, known.get(f.uri), f):
            try:
                fetch(f, s3)
            except S3Error as exc:
                failed[f.uri] = str(exc)
    return failed
