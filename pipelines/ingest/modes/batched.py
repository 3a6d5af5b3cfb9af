"""Many small files of one source in few transactions (telemetry, jobs and host inventories).

A day of one host's nvidia-smi capture is a small file; committing each on its own writes every row twice
(write-ahead log, then checkpoint) and dominates ingestion. A BatchReader is given up to its `batch_files`
new or changed files (at most BATCH_BYTES) at once, inside one transaction that also deletes the files'
previous rows and records every file in the ledger. The ledger's guarantees are those of one file per
transaction: each file is recorded with its own rows and warnings, a crash leaves the previous state, and
a bad file never stops the others. When a batch fails it is rolled back; the file at fault
(`FileFailed.index`, when the reader can tell) goes through the one-file path, which records it rejected
with its line and problem, and the rest of the batch is tried again; when the reader cannot tell which
file failed, every file of the batch goes through the one-file path.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import duckdb

from pipelines import progress
from pipelines.config import Config, Source
from pipelines.errors import FileFailed
from pipelines.failpoints import failpoint
from pipelines.ingest import ledger
from pipelines.ingest.files import SourceFile
from pipelines.ingest.ledger import FileOutcome, file_id
from pipelines.ingest.modes.per_file import ingest_file
from pipelines.ingest.readers.base import BatchReader, LoadContext
from pipelines.ingest.sniff import checksum_and_problem, is_binary_name
from pipelines.warehouse import stored_in, transaction, utcnow

BATCH_BYTES = 1 << 30
MAX_RETRIES = 5

_Pending = tuple[SourceFile, str, str, bool]  # file, file id, checksum, has earlier rows


def ingest_in_batches(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    source: Source,
    reader: BatchReader,
    target: str,
    files: list[SourceFile],
) -> list[FileOutcome]:
    """The outcomes of `files`, in their order: the one-file path's outcomes, with fewer commits."""
    outcomes: dict[str, FileOutcome] = {}
    ids = {f.uri: file_id(source.name, f) for f in files}
    known = ledger.previous_many(con, list(ids.values()))
    prevs = {f.uri: known.get(ids[f.uri]) for f in files}
    # read the files whose modification time changed two at a time (hashlib and the sniff release the GIL),
    # once each: the ledger compares the hash of a touched file and records a new file's, and a text file is
    # looked at for what is not text (NUL bytes) in the same read
    stale = [f for f in files if not _same_stamp(prevs[f.uri], f)]
    with ThreadPoolExecutor(2) as pool:
        problems = dict(zip([f.uri for f in stale], pool.map(_checksum_and_problem, stale), strict=True))
    pending: list[_Pending] = []
    for f in files:
        prev = prevs[f.uri]
        if ledger.unchanged(con, prev, f):
            outcomes[f.uri] = FileOutcome(source.name, f.uri, "unchanged", target=target)
        elif problems.get(f.uri) is not None:
            # not text, or NUL bytes in it: the one-file path records its rejection
            outcomes[f.uri] = ingest_file(con, config, source, reader, target, f)
        else:
            pending.append((f, ids[f.uri], f.checksum(), prev is not None))
    batches: list[list[_Pending]] = [[]]
    size = 0
    for item in pending:
        if batches[-1] and (len(batches[-1]) >= reader.batch_files or size + item[0].size > BATCH_BYTES):
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += item[0].size
    started, rows = time.monotonic(), 0
    for batch in batches:
        for outcome in _load_batch(con, config, source, reader, target, batch):
            outcomes[outcome.uri] = outcome
            rows += outcome.rows if outcome.status == "loaded" else 0
        progress.count_files(source.name, len(outcomes), len(files), rows, started)
    return [outcomes[f.uri] for f in files]


def _checksum_and_problem(f: SourceFile) -> tuple[str, int | None] | None:
    """What is wrong with the text of `f` (None for a binary file), its checksum kept on `f`: one read."""
    if is_binary_name(f.local_path.name):
        f.checksum()
        return None
    digest, found = checksum_and_problem(f.local_path)
    f.knows_checksum(digest)
    return found


def _same_stamp(prev: dict[str, object] | None, f: SourceFile) -> bool:
    return bool(
        prev
        and prev["status"] == "loaded"
        and prev["size_bytes"] == f.size
        and prev["modified_at"] == f.modified_at
    )


def _load_batch(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    source: Source,
    reader: BatchReader,
    target: str,
    batch: list[_Pending],
) -> list[FileOutcome]:
    out: list[FileOutcome] = []
    for _ in range(MAX_RETRIES):
        if not batch:
            return out
        now = utcnow()
        ctxs = [
            LoadContext(source=source, config=config, file_id=fid, loaded_at=now) for _, fid, _, _ in batch
        ]
        try:
            with transaction(con):
                stale = [fid for _, fid, _, had in batch if had]
                if stale:
                    con.execute(
                        f"delete from {stored_in(target)} where x_file_id in (select unnest($ids))",  # noqa: S608 - our constant
                        {"ids": stale},
                    )
                results = reader.load_batch(con, [f for f, _, _, _ in batch], ctxs)
                # documented skips (a last line cut short, pods without GPUs) are kept as the ledger's note
                ledger.record_many(
                    con,
                    source,
                    now,
                    [
                        ledger.Outcome(fid, f, checksum, "loaded", "; ".join(result.warnings) or None, result)
                        for (f, fid, checksum, _), result in zip(batch, results, strict=True)
                    ],
                )
                failpoint("ingest.batch.before_commit")
            failpoint("ingest.batch.committed")
        except FileFailed as exc:
            bad = batch.pop(exc.index)
            out.append(ingest_file(con, config, source, reader, target, bad[0]))
            continue
        except Exception:  # any reader error: the one-file path names the file at fault
            break
        out.extend(
            FileOutcome(source.name, f.uri, "loaded", rows=r.rows, target=target, repairs=list(r.warnings))
            for (f, _, _, _), r in zip(batch, results, strict=True)
        )
        return out
    # the reader could not tell which file failed: every file on its own
    out.extend(ingest_file(con, config, source, reader, target, f) for f, _, _, _ in batch)
    return out
