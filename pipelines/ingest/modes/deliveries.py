"""Billing deliveries: the files one manifest lists (a CUR assembly, a CUR 2.0 execution, an Azure export
run) or the files of a `BILLING_PERIOD=` folder replace every earlier row of that period of that source in
one transaction: a restatement, even of a closed month, never appends. Files of older versions are recorded
`superseded` and never read; a file listed by a manifest but missing rejects the whole delivery (the
warehouse keeps the previous version). A billing file outside any export layout is its own delivery and
replaces only its own rows.

The ledger also handles removed files (their rows are deleted, `removed`; keep them with
`options.on_removed: keep`), renamed files (same bytes under a new name: the rows follow, nothing is read)
and copies: a billing file whose sha256 equals a file the warehouse holds (in any billing source, under any
name, in any period, leaving out what the load replaces) is `duplicate`, names its original and is never
loaded; a manifest that lists the same bytes twice rejects its delivery.
Every billing file is reconciled: rows and billed/effective sums counted from the file's own columns must
equal what landed, or the file is rejected and its transaction rolled back.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb

from pipelines import progress
from pipelines.config import Config, Source
from pipelines.errors import RejectedFile
from pipelines.failpoints import failpoint
from pipelines.ingest import ledger
from pipelines.ingest.billing.deliveries import Delivery
from pipelines.ingest.billing.diagnose import LoadFailed
from pipelines.ingest.billing.tag_sets import prune_tag_sets, resolve_tag_sets
from pipelines.ingest.files import SourceFile, fetch, source_cache
from pipelines.ingest.ledger import FileOutcome, file_id
from pipelines.ingest.readers.base import DeliveryReader, LoadContext, LoadResult
from pipelines.ingest.sniff import refusal, shorten
from pipelines.sources.options import BillingOptions
from pipelines.warehouse import stored_in, transaction, utcnow


def ingest_deliveries(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    source: Source,
    reader: DeliveryReader,
    target: str,
    files: list[SourceFile],
    s3: Any,
    notes: list[str],
) -> list[FileOutcome]:
    """Load a billing source's new and restated deliveries; handle its removed, renamed and re-delivered
    files; then resolve and prune tag sets. Notes for the run summary are appended to `notes`."""
    options = source.options_as(BillingOptions)

    known_files = ledger.of_source(con, source)

    def read_text(f: SourceFile) -> str:
        """A manifest's text; an S3 manifest the ledger loaded unchanged is not downloaded again: what it
        listed is rebuilt from the ledger (the files loaded with its delivery id)."""
        prev = known_files.get(f.uri)
        if (
            f.is_remote
            and prev
            and prev["status"] == "loaded"
            and ledger.unchanged(con, prev, f)
            and prev["delivery_id"]
        ):
            listed = [
                uri
                for uri, r in known_files.items()
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

    try:
        deliveries, plan_notes = reader.plan(files, read_text, options)
    except (
        Exception
    ) as exc:  # an error no step of planning turned into a rejection: each file refused with it
        problem = str(refusal(source.uri, exc, source.kind))
        deliveries = [Delivery(f"file:{f.uri}", None, [f], problem=problem) for f in files]
        plan_notes = []
    notes.extend(f"source {source.name!r}: {n}" for n in plan_notes)
    outcomes: list[FileOutcome] = []
    listed = {f.uri for f in files}

    # files the ledger loaded that are gone from the source (never on an empty or failed listing)
    gone = [r for uri, r in known_files.items() if r["status"] == "loaded" and uri not in listed]
    renamed_from = {r["uri"]: r for r in gone} if files else {}

    rejected_periods: set[str] = set()
    # periods with lines before this run: a load can delete lines (and so orphan a tag set) only in
    # those, or over a file the ledger knows; a first load leaves nothing to prune (pruning scans every line)
    had_lines = {r["billing_period"] for r in known_files.values() if r["status"] in ("loaded", "superseded")}
    replaced = False
    started = time.monotonic()
    for d in deliveries:
        known = d.period in had_lines or any(
            f.uri in known_files for f in d.files
        )  # before the load adds them
        try:
            got = _ingest_delivery(
                con, config, source, reader, target, d, known_files, renamed_from, listed, s3
            )
        except Exception as exc:  # rolled back: one bad delivery is its own refusal, the others still load
            got = _refused(con, source, target, d, exc)
        if d.period is not None and any(o.status == "rejected" for o in got):
            rejected_periods.add(d.period)
        replaced = replaced or (known and any(o.status == "loaded" for o in got))
        outcomes.extend(got)
        rows = sum(o.rows for o in outcomes if o.status == "loaded")
        progress.count_files(source.name, len(outcomes), len(files), rows, started)

    for r in renamed_from.values():  # still gone after renames were matched
        if r["billing_period"] in rejected_periods:
            continue  # the period keeps its previous version until a delivery of it loads
        if options.on_removed == "keep":
            notes.append(
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
        notes.append(f"source {source.name!r}: {changed} tag set(s) resolved again through the tags: config")
    return outcomes


def _ingest_delivery(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    source: Source,
    reader: DeliveryReader,
    target: str,
    d: Any,
    known_files: dict[str, dict[str, Any]],
    renamed_from: dict[str, dict[str, Any]],
    listed: set[str],
    s3: Any,
) -> list[FileOutcome]:
    now = utcnow()
    members = list(d.files) + ([d.manifest] if d.manifest is not None else [])

    def outcome(f: SourceFile, status: str, **kw: Any) -> FileOutcome:
        return FileOutcome(source.name, f.uri, status, target=target, **kw)

    if d.problem:
        with transaction(con):
            return [ledger.reject(con, source, f, d.problem, None, now, outcome) for f in members]

    superseded = [outcome(f, "superseded") for f in d.superseded]
    fresh_superseded = [
        f for f in d.superseded if (known_files.get(f.uri) or {}).get("status") != "superseded"
    ]

    # unchanged: the same files (and manifest) as the version the ledger loaded
    if d.period is not None:
        loaded_before = {
            uri
            for uri, r in known_files.items()
            if r["status"] == "loaded" and r["billing_period"] == d.period and uri in listed
        }
        manifest_uri = d.manifest.uri if d.manifest is not None else None
        copies = [f for f in d.files if ledger.still_duplicate(con, known_files.get(f.uri), f)]
        if (
            d.files
            and loaded_before - {manifest_uri} == {f.uri for f in d.files} - {f.uri for f in copies}
            and all(f in copies or ledger.unchanged(con, known_files.get(f.uri), f) for f in members)
        ):
            _record_superseded(con, source, fresh_superseded, now)
            kept = [outcome(f, "unchanged") for f in members if f not in copies]
            return kept + _still_duplicates(con, copies, known_files, now, outcome) + superseded
    else:
        f = d.files[0]
        if ledger.unchanged(con, known_files.get(f.uri), f):
            return [outcome(f, "unchanged")]
        if ledger.still_duplicate(con, known_files.get(f.uri), f):
            return _still_duplicates(con, [f], known_files, now, outcome)
        moved = _renamed(con, source, target, f, known_files, renamed_from, s3, now)
        if moved is not None:
            return [moved]

    # fetch and prepare (downloads, parallel gunzip) before the transaction
    try:
        for f in members:
            fetch(f, s3)
    except Exception as exc:  # an S3 error: nothing was written; the next run tries again
        error = f"{exc}"
        with transaction(con):
            return [ledger.reject(con, source, f, error, None, now, outcome) for f in members]
    workdir = source_cache(config, source) / "prepared"
    threads = int(config.duckdb_settings.get("threads", 2) or 2)
    checksums = _checksums(members, threads)

    # what this load deletes: every file of the period an earlier version loaded, or the file itself
    replaced = [file_id(source.name, f) for f in d.files]
    if d.period is not None:
        replaced += [
            r["file_id"]
            for r in known_files.values()
            if r["billing_period"] == d.period and r["status"] in ("loaded", "superseded")
        ]
    try:
        twins = _copies(con, d, checksums, replaced)
    except RejectedFile as exc:
        return _reject_delivery(con, source, members, exc, checksums, now, outcome)
    fresh = [f for f in d.files if f.uri not in twins]

    # open every file and check its header before the transaction (a failed statement would abort it)
    probes: dict[str, Any] = {}
    try:
        for f in fresh:
            ctx = LoadContext(
                source=source,
                config=config,
                file_id=file_id(source.name, f),
                loaded_at=now,
                period=d.period,
            )
            try:
                probes[f.uri] = reader.probe(con, f, ctx)
            except Exception as exc:  # any reader error is this file's rejection
                raise refusal(f.uri, exc, source.kind) from None
    except RejectedFile as exc:
        return _reject_delivery(con, source, members, exc, checksums, now, outcome)

    # .gz files inflate in the background, in load order, while the files before them load
    prepared = reader.prepare(fresh, workdir, threads, bounded=config.duckdb.memory_limit is not None)
    copies: dict[str, str] = {}  # decompressed copy -> the file's uri, for error messages
    results: dict[str, LoadResult] = {}
    try:
        with transaction(con):
            # every row an earlier version of this period loaded (the ledger knows its files), or the
            # rows of the file's own earlier version
            con.execute(
                f"delete from {stored_in(target)} where x_file_id in (select unnest($ids))",  # noqa: S608 - our constant
                {"ids": replaced},
            )
            for f in d.files:
                fid = file_id(source.name, f)
                if f.uri in twins:
                    error = _copy_error(f, twins[f.uri])
                    result = LoadResult(rows=0, billing_period=d.period)
                    ledger.record(
                        con, fid, source, f, checksums.get(f.uri), "duplicate", error, result, now,
                        duplicate_of=twins[f.uri],
                    )  # fmt: skip
                    continue
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
                except Exception as exc:  # any reader error is this file's rejection
                    raise refusal(f.uri, exc, source.kind) from None
                if d.period is not None:
                    results[f.uri].billing_period = d.period
                prepared.done(f.uri)  # its decompressed copy is not needed any more
                note = "; ".join(f"repaired: {w}" for w in results[f.uri].warnings) or None
                ledger.record(
                    con, fid, source, f, checksums.get(f.uri), "loaded", note, results[f.uri], now, d.version
                )
            if d.manifest is not None:
                m = d.manifest
                ledger.record(
                    con,
                    file_id(source.name, m),
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
                for uri, r in known_files.items():
                    if r["billing_period"] == d.period and r["status"] == "loaded" and uri not in keep:
                        con.execute(
                            "update ingest_files set status = 'superseded', checked_at = $now where file_id = $id",
                            {"id": r["file_id"], "now": now},
                        )
                        renamed_from.pop(uri, None)
            _record_superseded(con, source, fresh_superseded, now)
            failpoint("ingest.delivery.before_commit")
        failpoint("ingest.delivery.committed")
    except LoadFailed as failed:  # rolled back: now the bad row can be looked for
        try:
            explained = failed.explain(con)
        except Exception:  # the diagnosis itself failed: the insert's own error names the file
            explained = refusal(failed.file.uri, failed.exc, source.kind)
        rejected = _named_by_uri(explained, copies)
        return _reject_delivery(con, source, members, rejected, checksums, now, outcome)
    except RejectedFile as exc:
        return _reject_delivery(con, source, members, _named_by_uri(exc, copies), checksums, now, outcome)
    finally:
        prepared.close()
    loaded = [
        outcome(f, "loaded", rows=results[f.uri].rows, repairs=results[f.uri].warnings)
        if f.uri not in twins
        else outcome(f, "duplicate", error=_copy_error(f, twins[f.uri]))
        for f in d.files
    ]
    if d.manifest is not None:
        loaded.append(outcome(d.manifest, "loaded"))
    return loaded + superseded


def _refused(
    con: duckdb.DuckDBPyConnection, source: Source, target: str, d: Any, exc: Exception
) -> list[FileOutcome]:
    """Every file of a delivery whose load raised what no step of it turned into a rejection, rejected:
    the file the error names with it, the others as not loaded."""
    members = list(d.files) + ([d.manifest] if d.manifest is not None else [])
    first = members[0].uri if members else source.uri
    named = exc if isinstance(exc, RejectedFile) else refusal(first, exc, source.kind)

    def outcome(f: SourceFile, status: str, **kw: Any) -> FileOutcome:
        return FileOutcome(source.name, f.uri, status, target=target, **kw)

    return _reject_delivery(con, source, members, named, {}, utcnow(), outcome)


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
    error = shorten(str(exc))
    out = []
    with transaction(con):
        for f in members:
            why = (
                error
                if f.uri == exc.file or len(members) == 1
                else f"{f.uri}: not loaded: {Path(exc.file).name} of the same delivery was rejected ({error})"
            )
            out.append(ledger.reject(con, source, f, why, checksums.get(f.uri), now, outcome))
    return out


def _record_superseded(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    files: list[SourceFile],
    now: Any,
) -> None:
    for f in files:
        fid = file_id(source.name, f)
        ledger.record(con, fid, source, f, None, "superseded", None, None, now)


def _checksums(files: list[SourceFile], threads: int) -> dict[str, str]:
    with ThreadPoolExecutor(max(1, min(threads, len(files) or 1))) as pool:
        return dict(zip([f.uri for f in files], pool.map(lambda f: f.checksum(), files), strict=True))


def _renamed(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    target: str,
    f: SourceFile,
    known_files: dict[str, dict[str, Any]],
    renamed_from: dict[str, dict[str, Any]],
    s3: Any,
    now: Any,
) -> FileOutcome | None:
    """A new file with the same bytes as one of this source the ledger loaded whose name is gone from the
    source: a rename (its rows follow the new name, nothing is read). A copy whose original is still there
    is found later, by `_copies`."""
    same_size = [
        r
        for uri, r in known_files.items()
        if r["status"] == "loaded" and r["size_bytes"] == f.size and uri != f.uri and uri in renamed_from
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
    old = matches[0]
    new_id = file_id(source.name, f)
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


def _copies(
    con: duckdb.DuckDBPyConnection, d: Any, checksums: dict[str, str], replaced: list[str]
) -> dict[str, str]:
    """The delivery's data files whose bytes the warehouse already holds, each with its original's uri.

    The original is a loaded billing file of any source, name or period that this load does not replace,
    or an earlier file of the same delivery (a folder without a manifest: the first by name loads). A
    manifest that lists the same bytes twice contradicts itself: RejectedFile naming both files.
    """
    twins: dict[str, str] = {}
    first: dict[tuple[str, int], SourceFile] = {}
    for f in d.files:
        digest = checksums[f.uri]
        earlier = first.setdefault((digest, f.size), f)
        if earlier is not f:
            if d.manifest is not None:
                raise RejectedFile(
                    d.manifest.uri,
                    f"the manifest lists the same bytes twice: {earlier.uri} and {f.uri} (sha256 {digest})",
                )
            twins[f.uri] = earlier.uri
            continue
        twin = ledger.live_copy(con, digest, f.size, replaced)
        if twin is not None:
            twins[f.uri] = twin["uri"]
    return twins


def _copy_error(f: SourceFile, original: str) -> str:
    return f"{f.uri}: same bytes as {original}, already loaded; not loaded twice"


def _still_duplicates(
    con: duckdb.DuckDBPyConnection,
    files: list[SourceFile],
    known_files: dict[str, dict[str, Any]],
    now: Any,
    outcome: Callable[..., FileOutcome],
) -> list[FileOutcome]:
    """Copies seen before whose originals still hold their lines: reported again, not read."""
    out = []
    for f in files:
        prev = known_files[f.uri]
        con.execute(
            "update ingest_files set checked_at = $now where file_id = $id",
            {"now": now, "id": prev["file_id"]},
        )
        out.append(outcome(f, "duplicate", error=_copy_error(f, prev["duplicate_of"])))
    return out
