"""Incremental, idempotent ingestion: the ledger decides what is new.

A file whose size and modification time (or S3 ETag), or checksum, is unchanged is not read again; an
s3:// object is downloaded only when the ledger does not know it. A file that cannot be read is recorded
`rejected` with a message naming the file, line/column and problem; earlier rows from it (if any) stay,
and every other file still loads.

Two units of replacement:

- **one file** (telemetry, jobs, inventories; billing files outside any export layout): a changed file
  replaces the rows it loaded before, in one transaction;
- **one billing period of one source** (billing readers, which define `plan`): the files one manifest
  lists (a CUR assembly, a CUR 2.0 execution, an Azure export run) or the files of a `BILLING_PERIOD=`
  folder replace every earlier row of that period in one transaction: a restatement, even of a closed
  month, never appends. Files of older versions are recorded `superseded` and never read; a file listed
  by a manifest but missing rejects the whole delivery (the warehouse keeps the previous version).

For billing sources the ledger also handles removed files (their rows are deleted, `removed`; keep them
with `options.on_removed: keep`), renamed files (same bytes under a new name: the rows follow, nothing is
read) and re-delivered identical files (same bytes as a file already loaded: `duplicate`, not loaded
twice). Every billing file is reconciled: rows and billed/effective sums counted from the file's own
columns must equal what landed, or the file is rejected and its transaction rolled back.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import Config, Source, billing_options
from pipelines.ingest.errors import RejectedFile
from pipelines.ingest.files import SourceFile, fetch, list_files, list_local, source_cache
from pipelines.ingest.readers import get_reader
from pipelines.ingest.readers.base import LoadContext, LoadResult, Reader, duckdb_problem
from pipelines.ingest.readers.billing_common import LoadFailed, prune_tag_sets, resolve_tag_sets
from pipelines.warehouse import one, rows, stored_in, transaction, utcnow

# error prefix of a ledger row that still holds its loaded lines while a new version was rejected
NEW_VERSION_REJECTED = "new version rejected: "

__all__ = ["FileOutcome", "IngestReport", "file_id", "ingest", "list_local"]


@dataclass
class FileOutcome:
    source: str
    uri: str
    status: str  # loaded | unchanged | rejected | superseded | removed | renamed | duplicate
    rows: int = 0
    error: str | None = None
    target: str | None = None
    repairs: list[str] = field(default_factory=list)  # documented repairs applied while loading


@dataclass
class IngestReport:
    outcomes: list[FileOutcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # sources skipped, missing folders, repairs, ...

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
        rows_ = sum(o.rows for o in loaded)
        text = f"{len(loaded)} file(s) loaded ({rows_:,} rows), {len(unchanged)} unchanged, {len(rejected)} rejected"
        others = [
            f"{len(self.of(s))} {s}" for s in ("superseded", "removed", "renamed", "duplicate") if self.of(s)
        ]
        if others:
            text += " (" + ", ".join(others) + ")"
        lines = [text, *(f"  note: {n}" for n in self.notes)]
        lines += [f"  repaired: {o.uri}: {r}" for o in self.outcomes for r in o.repairs]
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
            _progress(progress, [outcome])
            continue
        s3 = None
        if source.is_s3:
            from pipelines.ingest import s3 as s3mod

            try:
                s3 = s3mod.client(source)
                files = list_files(config, source, s3)
            except (s3mod.S3Error, ValueError) as exc:
                report.notes.append(f"source {source.name!r}: {exc}")
                report.outcomes.append(
                    FileOutcome(
                        source.name, source.uri, "rejected", error=str(exc), target=reader.target_table
                    )
                )
                continue
        else:
            files = list_local(config, source)
        if not files:
            report.notes.append(f"source {source.name!r}: no files at {config.source_location(source)}")
        try:
            if hasattr(reader, "plan"):
                outcomes = _ingest_billing(con, config, source, reader, files, s3, report)
                report.outcomes.extend(outcomes)
                _progress(progress, outcomes)
                continue
            if s3 is not None:
                outcomes, files = _s3_unchanged(con, source, reader, files, s3)
                report.outcomes.extend(outcomes)
            if hasattr(
                reader, "load_batch"
            ):  # telemetry: many small files, few commits (readers/batching.py)
                from pipelines.ingest.readers.batching import ingest_in_batches

                report.outcomes.extend(ingest_in_batches(con, config, source, reader, files, progress))
                continue
            for f in files:
                outcome = _ingest_file(con, config, source, reader, f)
                report.outcomes.append(outcome)
                _progress(progress, [outcome])
        finally:
            if s3 is not None or hasattr(reader, "plan"):
                from pipelines.ingest.s3 import clean_cache

                clean_cache(source_cache(config, source))
    return report


def _progress(progress: Callable[[str], None] | None, outcomes: list[FileOutcome]) -> None:
    if progress:
        for o in outcomes:
            progress(f"{o.status:9} {o.uri}" + (f" ({o.rows:,} rows)" if o.rows else ""))


def _s3_unchanged(
    con: duckdb.DuckDBPyConnection, source: Source, reader: Reader, files: list[SourceFile], s3: Any
) -> tuple[list[FileOutcome], list[SourceFile]]:
    """S3 objects the ledger knows (same ETag and size) are unchanged; the others are downloaded."""
    known = {
        r["uri"]: r
        for r in rows(
            con,
            "select uri, status, size_bytes, etag from ingest_files where source = $s and status = 'loaded'",
            {"s": source.name},
        )
    }
    unchanged, todo = [], []
    for f in files:
        prev = known.get(f.uri)
        if prev and prev["size_bytes"] == f.size and prev["etag"] and prev["etag"] == f.etag:
            unchanged.append(FileOutcome(source.name, f.uri, "unchanged", target=reader.target_table))
        else:
            fetch(f, s3)
            todo.append(f)
    return unchanged, todo


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
            con.execute(f"delete from {stored_in(target)} where x_file_id = $id", {"id": fid})  # noqa: S608 - identifiers only, values are bound
            result = reader.load(con, f, ctx)
            # documented repairs (a cut last line skipped, ...) travel in the ledger's error column as a note
            note = "; ".join(f"repaired: {w}" for w in result.warnings) or None
            _record(con, fid, source, f, checksum, "loaded", note, result, now)
        return FileOutcome(
            source.name, f.uri, "loaded", rows=result.rows, target=target, repairs=result.warnings
        )
    except RejectedFile as exc:
        error = str(exc)
    except (duckdb.Error, OSError, EOFError) as exc:
        error = f"{f.uri}: cannot load: {duckdb_problem(exc)}"
    with transaction(con):
        if prev and prev[0] == "loaded":
            # the earlier version's rows are still in the table (rolled back): keep holding them
            con.execute(
                "update ingest_files set error = $e, checked_at = $now where file_id = $id",
                {"e": f"{NEW_VERSION_REJECTED}{error}", "now": now, "id": fid},
            )
        else:
            _record(con, fid, source, f, checksum, "rejected", error, None, now)
    return FileOutcome(source.name, f.uri, "rejected", error=error, target=target)


# --------------------------------------------------------------------------------------------------
# billing sources: deliveries replace a period (or a file) in one transaction


def _ledger(con: duckdb.DuckDBPyConnection, source: Source) -> dict[str, dict[str, Any]]:
    return {
        r["uri"]: r
        for r in rows(
            con,
            "select file_id, uri, status, size_bytes, modified_at, etag, checksum, billing_period, delivery_id "
            "from ingest_files where source = $s",
            {"s": source.name},
        )
    }


def _same(con: duckdb.DuckDBPyConnection, prev: dict[str, Any] | None, f: SourceFile) -> bool:
    """The ledger's loaded version of this file has the same bytes (size + ETag/mtime, else checksum)."""
    if not prev or prev["status"] != "loaded" or prev["size_bytes"] != f.size:
        return False
    if f.etag and prev["etag"]:
        return prev["etag"] == f.etag
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


def _ingest_billing(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    source: Source,
    reader: Any,
    files: list[SourceFile],
    s3: Any,
    report: IngestReport,
) -> list[FileOutcome]:
    target = reader.target_table
    options = billing_options(source)

    ledger = _ledger(con, source)

    def read_text(f: SourceFile) -> str:
        """A manifest's text; an S3 manifest the ledger loaded unchanged is not downloaded again: what it
        listed is rebuilt from the ledger (the files loaded with its delivery id)."""
        prev = ledger.get(f.uri)
        if (
            f.is_remote
            and prev
            and prev["status"] == "loaded"
            and _same(con, prev, f)
            and prev["delivery_id"]
        ):
            listed = [
                uri
                for uri, r in ledger.items()
                if r["delivery_id"] == prev["delivery_id"]
                and r["billing_period"] == prev["billing_period"]
                and r["status"] == "loaded"
                and uri != f.uri
            ]
            period = prev["billing_period"] or ""
            return json.dumps(
                {
                    "executionId": prev["delivery_id"],
                    "billingPeriod": {"start": f"{period}-01T00:00:00Z"} if period else None,
                    "dataFiles": listed,
                }
            )
        return fetch(f, s3).read_text(encoding="utf-8-sig")

    deliveries, notes = reader.plan(files, read_text, options)
    report.notes.extend(f"source {source.name!r}: {n}" for n in notes)
    outcomes: list[FileOutcome] = []
    listed = {f.uri for f in files}

    # files the ledger loaded that are gone from the source (never on an empty or failed listing)
    gone = [r for uri, r in ledger.items() if r["status"] == "loaded" and uri not in listed]
    renamed_from = {r["uri"]: r for r in gone} if files else {}

    rejected_periods: set[str] = set()
    # periods with lines before this run: a load can delete lines (and so orphan a tag set) only in
    # those, or over a file the ledger knows; a first load leaves nothing to prune (0.4 s per 10 M lines)
    had_lines = {r["billing_period"] for r in ledger.values() if r["status"] in ("loaded", "superseded")}
    replaced = False
    for d in deliveries:
        known = d.period in had_lines or any(f.uri in ledger for f in d.files)  # before the load adds them
        got = _ingest_delivery(con, config, source, reader, d, ledger, renamed_from, listed, s3)
        if d.period is not None and any(o.status == "rejected" for o in got):
            rejected_periods.add(d.period)
        replaced = replaced or (known and any(o.status == "loaded" for o in got))
        outcomes.extend(got)

    for r in renamed_from.values():  # still gone after renames were matched
        if r["billing_period"] in rejected_periods:
            continue  # the period keeps its previous version until a delivery of it loads
        if options.on_removed == "keep":
            report.notes.append(
                f"source {source.name!r}: {r['uri']} is gone from the source; its rows are kept "
                "(options.on_removed: keep)"
            )
            continue
        now = utcnow()
        with transaction(con):
            con.execute(f"delete from {stored_in(target)} where x_file_id = $id", {"id": r["file_id"]})  # noqa: S608 - our constant
            con.execute(
                "update ingest_files set status = 'removed', error = null, checked_at = $now where file_id = $id",
                {"id": r["file_id"], "now": now},
            )
        outcomes.append(FileOutcome(source.name, r["uri"], "removed", target=target))
    with transaction(con):  # a changed `tags:` config reaches the lines loaded before it
        changed = resolve_tag_sets(con, config.tags)
        if replaced or any(o.status == "removed" for o in outcomes):
            prune_tag_sets(con)  # lines were replaced or deleted: sets only they used go with them
    if changed:
        report.notes.append(
            f"source {source.name!r}: {changed} tag set(s) resolved again through the tags: config"
        )
    return outcomes


def _ingest_delivery(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    source: Source,
    reader: Any,
    d: Any,
    ledger: dict[str, dict[str, Any]],
    renamed_from: dict[str, dict[str, Any]],
    listed: set[str],
    s3: Any,
) -> list[FileOutcome]:
    target = reader.target_table
    now = utcnow()
    members = list(d.files) + ([d.manifest] if d.manifest is not None else [])

    def outcome(f: SourceFile, status: str, **kw: Any) -> FileOutcome:
        return FileOutcome(source.name, f.uri, status, target=target, **kw)

    if d.problem:
        with transaction(con):
            return [_reject_member(con, source, f, d.problem, None, now, outcome) for f in members]

    superseded = [outcome(f, "superseded") for f in d.superseded]
    fresh_superseded = [f for f in d.superseded if (ledger.get(f.uri) or {}).get("status") != "superseded"]

    # unchanged: the same files (and manifest) as the version the ledger loaded
    if d.period is not None:
        loaded_before = {
            uri
            for uri, r in ledger.items()
            if r["status"] == "loaded" and r["billing_period"] == d.period and uri in listed
        }
        manifest_uri = d.manifest.uri if d.manifest is not None else None
        if (
            d.files
            and loaded_before - {manifest_uri} == {f.uri for f in d.files}
            and all(_same(con, ledger.get(f.uri), f) for f in members)
        ):
            _record_superseded(con, source, fresh_superseded, ledger, now)
            return [outcome(f, "unchanged") for f in members] + superseded
    else:
        f = d.files[0]
        if _same(con, ledger.get(f.uri), f):
            return [outcome(f, "unchanged")]
        moved = _renamed_or_duplicate(con, source, reader, f, ledger, renamed_from, listed, s3, now)
        if moved is not None:
            return [moved]

    # fetch and prepare (downloads, parallel gunzip) before the transaction
    try:
        for f in members:
            fetch(f, s3)
    except Exception as exc:  # an S3 error: nothing was written; the next run tries again
        error = f"{exc}"
        with transaction(con):
            return [_reject_member(con, source, f, error, None, now, outcome) for f in members]
    workdir = source_cache(config, source) / "prepared"
    threads = int(config.duckdb_settings.get("threads", 2) or 2)
    checksums = _checksums(members, threads)

    # open every file and check its header before the transaction (a failed statement would abort it)
    probes: dict[str, Any] = {}
    try:
        for f in d.files:
            ctx = LoadContext(
                source=source,
                config=config,
                file_id=file_id(source.name, f.uri),
                loaded_at=now,
                period=d.period,
            )
            try:
                probes[f.uri] = reader.probe(con, f, ctx)
            except (duckdb.Error, OSError, EOFError) as exc:
                raise RejectedFile(f.uri, f"cannot read: {duckdb_problem(exc)}") from None
    except RejectedFile as exc:
        return _reject_delivery(con, source, members, exc, checksums, now, outcome)

    # .gz files inflate in the background, in load order, while the files before them load
    prepared = reader.prepare(d.files, workdir, threads)
    copies: dict[str, str] = {}  # decompressed copy -> the file's uri, for error messages
    results: dict[str, LoadResult] = {}
    try:
        with transaction(con):
            if d.period is not None:
                old = [
                    r["file_id"]
                    for r in ledger.values()
                    if r["billing_period"] == d.period and r["status"] in ("loaded", "superseded")
                ] + [file_id(source.name, f.uri) for f in d.files]  # same-named files of an older version
                # every row an earlier version of this period loaded (the ledger knows its files)
                con.execute(
                    f"delete from {stored_in(target)} where x_file_id in (select unnest($ids))",  # noqa: S608 - our constant
                    {"ids": old},
                )
            for f in d.files:
                fid = file_id(source.name, f.uri)
                if d.period is None:
                    con.execute(f"delete from {stored_in(target)} where x_file_id = $id", {"id": fid})  # noqa: S608 - our constant
                copy = prepared.get(f.uri)
                if isinstance(copy, Path):
                    copies[str(copy)] = f.uri
                ctx = LoadContext(
                    source=source,
                    config=config,
                    file_id=fid,
                    loaded_at=now,
                    prepared=copy,
                    period=d.period,
                    probe=probes.get(f.uri),
                )
                try:
                    results[f.uri] = reader.load(con, f, ctx)
                except (RejectedFile, LoadFailed):
                    raise
                except (duckdb.Error, OSError, EOFError) as exc:
                    raise RejectedFile(f.uri, f"cannot load: {duckdb_problem(exc)}") from None
                if d.period is not None:
                    results[f.uri].billing_period = d.period
                prepared.done(f.uri)  # its decompressed copy is not needed any more
                note = "; ".join(f"repaired: {w}" for w in results[f.uri].warnings) or None
                _record(
                    con, fid, source, f, checksums.get(f.uri), "loaded", note, results[f.uri], now, d.version
                )
            if d.manifest is not None:
                m = d.manifest
                _record(
                    con,
                    file_id(source.name, m.uri),
                    source,
                    m,
                    checksums.get(m.uri),
                    "loaded",
                    None,
                    LoadResult(rows=0, billing_period=d.period),
                    now,
                    d.version,
                )
            if d.period is not None:
                # files of earlier versions of this period that are not part of this one
                keep = {f.uri for f in members}
                for uri, r in ledger.items():
                    if r["billing_period"] == d.period and r["status"] == "loaded" and uri not in keep:
                        con.execute(
                            "update ingest_files set status = 'superseded', checked_at = $now where file_id = $id",
                            {"id": r["file_id"], "now": now},
                        )
                        renamed_from.pop(uri, None)
            _record_superseded(con, source, fresh_superseded, ledger, now)
    except LoadFailed as failed:  # rolled back: now the bad row can be looked for
        rejected = _named_by_uri(failed.explain(con), copies)
        return _reject_delivery(con, source, members, rejected, checksums, now, outcome)
    except RejectedFile as exc:
        return _reject_delivery(con, source, members, _named_by_uri(exc, copies), checksums, now, outcome)
    finally:
        prepared.close()
    loaded = [
        outcome(f, "loaded", rows=results[f.uri].rows, repairs=results[f.uri].warnings) for f in d.files
    ]
    if d.manifest is not None:
        loaded.append(outcome(d.manifest, "loaded"))
    return loaded + superseded


def _named_by_uri(exc: RejectedFile, copies: dict[str, str]) -> RejectedFile:
    """The rejection with each decompressed copy DuckDB named in it (a cache file, /proc/self/fd/N) named by
    the file's uri: users know their .gz, not our copy of it."""
    problem = exc.problem
    for copy, uri in copies.items():
        problem = re.sub(re.escape(copy) + r"(?![\w.])", lambda _m, uri=uri: uri, problem)
    return exc if problem == exc.problem else RejectedFile(exc.file, problem, exc.line, exc.column)


def _reject_delivery(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    members: list[SourceFile],
    exc: RejectedFile,
    checksums: dict[str, str],
    now: Any,
    outcome: Callable[..., FileOutcome],
) -> list[FileOutcome]:
    """Record the bad file rejected with its problem, and the rest of its delivery as not loaded."""
    error = str(exc)
    out = []
    with transaction(con):
        for f in members:
            why = (
                error
                if f.uri == exc.file or len(members) == 1
                else f"{f.uri}: not loaded: {Path(exc.file).name} of the same delivery was rejected ({error})"
            )
            out.append(_reject_member(con, source, f, why, checksums.get(f.uri), now, outcome))
    return out


def _reject_member(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    f: SourceFile,
    why: str,
    checksum: str | None,
    now: Any,
    outcome: Callable[..., FileOutcome],
) -> FileOutcome:
    """Record one file of a rejected delivery. A file whose earlier version (same name) the ledger holds
    as loaded keeps that status, size and ETag, because its lines are still in the table: the error is
    noted as `new version rejected: ...` (the CLI reports it), and the next run sees the new version
    again and retries."""
    fid = file_id(source.name, f.uri)
    held = one(con, "select status from ingest_files where file_id = $id", {"id": fid})
    if held is not None and held[0] == "loaded":
        con.execute(
            "update ingest_files set error = $e, checked_at = $now where file_id = $id",
            {"e": f"{NEW_VERSION_REJECTED}{why}", "now": now, "id": fid},
        )
    else:
        _record(con, fid, source, f, checksum, "rejected", why, None, now)
    return outcome(f, "rejected", error=why)


def _record_superseded(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    files: list[SourceFile],
    ledger: dict[str, dict[str, Any]],
    now: Any,
) -> None:
    for f in files:
        fid = file_id(source.name, f.uri)
        _record(con, fid, source, f, None, "superseded", None, None, now)


def _checksums(files: list[SourceFile], threads: int) -> dict[str, str]:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, min(threads, len(files) or 1))) as pool:
        return dict(zip([f.uri for f in files], pool.map(lambda f: f.checksum(), files), strict=True))


def _renamed_or_duplicate(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    reader: Any,
    f: SourceFile,
    ledger: dict[str, dict[str, Any]],
    renamed_from: dict[str, dict[str, Any]],
    listed: set[str],
    s3: Any,
    now: Any,
) -> FileOutcome | None:
    """A new file with the same bytes as one the ledger loaded: a rename (the old name is gone: its rows
    follow the new name) or a re-delivered duplicate (the old one is still there: not loaded twice)."""
    target = reader.target_table
    same_size = [
        r
        for uri, r in ledger.items()
        if r["status"] == "loaded" and r["size_bytes"] == f.size and uri != f.uri
    ]
    if not same_size:
        return None
    matches: list[dict[str, Any]] = []
    if f.etag:
        matches = [r for r in same_size if r["etag"] and r["etag"] == f.etag]
    if not matches:
        fetch(f, s3)
        digest = f.checksum()
        matches = [r for r in same_size if r["checksum"] == digest]
    if not matches:
        return None
    old = next((r for r in matches if r["uri"] in renamed_from), None)
    new_id = file_id(source.name, f.uri)
    if old is not None:
        with transaction(con):
            if stored_in(target) == target:
                con.execute(
                    f"update {target} set x_file_id = $new, x_source_file = $uri where x_file_id = $old",  # noqa: S608 - our constant
                    {"new": new_id, "uri": f.uri, "old": old["file_id"]},
                )
            else:  # a view's lineage comes from the ledger row updated below
                con.execute(
                    f"update {stored_in(target)} set x_file_id = $new where x_file_id = $old",  # noqa: S608 - our constant
                    {"new": new_id, "old": old["file_id"]},
                )
            con.execute("delete from ingest_files where file_id = $id", {"id": new_id})
            con.execute(
                "update ingest_files set file_id = $new, uri = $uri, modified_at = $m, etag = $etag, "
                "checked_at = $now where file_id = $old",
                {
                    "new": new_id,
                    "uri": f.uri,
                    "m": f.modified_at,
                    "etag": f.etag,
                    "now": now,
                    "old": old["file_id"],
                },
            )
        renamed_from.pop(old["uri"], None)
        return FileOutcome(source.name, f.uri, "renamed", target=target)
    twin = matches[0]
    error = f"{f.uri}: same bytes as {twin['uri']}, already loaded; not loaded twice"
    with transaction(con):
        _record(con, new_id, source, f, twin["checksum"], "duplicate", error, None, now)
    return FileOutcome(source.name, f.uri, "duplicate", error=error, target=target)


# --------------------------------------------------------------------------------------------------


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
            con.execute(f"delete from {stored_in(target)} where x_file_id = $id", {"id": fid})  # noqa: S608 - our constant
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
    delivery: str | None = None,
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
        "delivery": delivery,
        "file_rows": result.file_rows if result else None,
        "file_billed": result.file_billed_cost_sum if result else None,
        "file_effective": result.file_effective_cost_sum if result else None,
        "currencies": result.currencies if result else None,
    }
    con.execute(
        """
        insert into ingest_files (
            file_id, source, kind, uri, size_bytes, modified_at, etag, checksum, billing_period, rows,
            billed_cost_sum, effective_cost_sum, status, error, first_seen_at, checked_at, loaded_at,
            delivery_id, file_rows, file_billed_cost_sum, file_effective_cost_sum, currencies
        ) values (
            $id, $source, $kind, $uri, $size, $mtime, $etag, $checksum, $period, $rows, $billed, $effective,
            $status, $error, $now, $now, case when $status = 'loaded' then $now end,
            $delivery, $file_rows, $file_billed, $file_effective, $currencies
        )
        on conflict (file_id) do update set
            kind = excluded.kind, size_bytes = excluded.size_bytes, modified_at = excluded.modified_at,
            etag = excluded.etag,
            checksum = coalesce(excluded.checksum, ingest_files.checksum), status = excluded.status,
            error = excluded.error, checked_at = excluded.checked_at,
            billing_period = coalesce(excluded.billing_period, ingest_files.billing_period),
            rows = coalesce(excluded.rows, ingest_files.rows),
            billed_cost_sum = coalesce(excluded.billed_cost_sum, ingest_files.billed_cost_sum),
            effective_cost_sum = coalesce(excluded.effective_cost_sum, ingest_files.effective_cost_sum),
            loaded_at = coalesce(excluded.loaded_at, ingest_files.loaded_at),
            delivery_id = coalesce(excluded.delivery_id, ingest_files.delivery_id),
            file_rows = coalesce(excluded.file_rows, ingest_files.file_rows),
            file_billed_cost_sum = coalesce(excluded.file_billed_cost_sum, ingest_files.file_billed_cost_sum),
            file_effective_cost_sum = coalesce(excluded.file_effective_cost_sum, ingest_files.file_effective_cost_sum),
            currencies = coalesce(excluded.currencies, ingest_files.currencies)
        """,
        params,
    )
