"""Loading many small files of one source in few transactions (for telemetry readers).

A day of one host's nvidia-smi capture is ~11,500 rows; committing each such file on its own writes
every row twice (write-ahead log, then checkpoint) and dominates ingestion time. A reader that defines

    load_batch(con, files, ctxs) -> list[LoadResult]     # one result per file, same order

is given up to BATCH_FILES (or its `batch_files`) new or changed files (at most BATCH_BYTES) at once, inside one transaction
that also deletes the files' previous rows and records every file in the ledger: DuckDB then writes
the rows straight into the table. The ledger's guarantees are unchanged: each file is recorded with its
own rows (and the load's warnings, e.g. a last line cut short, as its note and in the run summary); a crash leaves the previous state; a bad file never stops the others. When a batch fails,
it is rolled back; the file at fault (`FileFailed.index`, when the reader can tell) goes through the
ordinary one-file path, which records it `rejected` with its line and problem, and the rest of the batch
is tried again; when the reader cannot tell which file failed, every file of the batch goes through
the one-file path.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import duckdb

from pipelines.config import Config, Source
from pipelines.ingest.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext
from pipelines.warehouse import one, stored_in, transaction, utcnow

if TYPE_CHECKING:
    from pipelines.ingest import FileOutcome

BATCH_FILES = 500
BATCH_BYTES = 1 << 30
MAX_RETRIES = 5


class PerFileBatch:
    """`load_batch` for a reader whose files are loaded one statement each: the batch still shares one
    transaction (and one commit), and the load's warnings reach the run summary and the ledger."""

    def load_batch(
        self, con: duckdb.DuckDBPyConnection, files: list[SourceFile], ctxs: list[LoadContext]
    ) -> list[Any]:
        results = []
        for i, (f, ctx) in enumerate(zip(files, ctxs, strict=True)):
            try:
                results.append(self.load(con, f, ctx))  # type: ignore[attr-defined]
            except RejectedFile as exc:
                raise FileFailed(i, exc) from None
        return results


class PlannedBatch:
    """`load` / `load_batch` for a reader that checks each file into a plan (`_plan(file, ctx)`, raising
    RejectedFile) and then lands the plans of a batch in one statement (`_insert(con, plans)`, raising
    FileFailed(index, cause) for a file it can name)."""

    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> Any:
        plan = self._plan(file, ctx)  # type: ignore[attr-defined]
        try:
            return self._insert(con, [plan])[0]  # type: ignore[attr-defined]
        except FileFailed as exc:
            assert isinstance(exc.cause, BaseException)
            raise exc.cause from None

    def load_batch(
        self, con: duckdb.DuckDBPyConnection, files: list[SourceFile], ctxs: list[LoadContext]
    ) -> list[Any]:
        """Many files in the caller's transaction; FileFailed(index) names a file that cannot load."""
        plans = []
        for i, (f, ctx) in enumerate(zip(files, ctxs, strict=True)):
            try:
                plans.append(self._plan(f, ctx))  # type: ignore[attr-defined]
            except RejectedFile as exc:
                raise FileFailed(i, exc) from None
        return self._insert(con, plans)  # type: ignore[attr-defined]


class FileFailed(Exception):
    """Raised by `load_batch` when it knows which file of the batch cannot be loaded."""

    def __init__(self, index: int, cause: BaseException | None = None) -> None:
        self.index, self.cause = index, cause
        super().__init__(f"file {index} of the batch failed: {cause}")


def ingest_in_batches(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    source: Source,
    reader: Any,
    files: list[SourceFile],
    progress: Callable[[str], None] | None = None,
) -> list[FileOutcome]:
    """The ledger loop of pipelines.ingest for a batch-capable reader: same outcomes, fewer commits."""
    from pipelines.ingest import FileOutcome, file_id

    target = reader.target_table
    outcomes: dict[str, FileOutcome] = {}
    pending: list[tuple[SourceFile, str, str, bool]] = []  # file, file id, checksum, has earlier rows
    todo: list[tuple[SourceFile, str, tuple[Any, ...] | None]] = []
    for f in files:
        fid = file_id(source.name, f.uri)
        prev = one(
            con,
            "select status, size_bytes, modified_at, checksum from ingest_files where file_id = $id",
            {"id": fid},
        )
        if prev and prev[0] == "loaded" and prev[1] == f.size and prev[2] == f.modified_at:
            outcomes[f.uri] = FileOutcome(source.name, f.uri, "unchanged", target=target)
        else:
            todo.append((f, fid, prev))
    # checksums of the new and changed files, two at a time (hashlib releases the GIL)
    with ThreadPoolExecutor(2) as pool:
        sums = list(pool.map(lambda t: t[0].checksum(), todo))
    for (f, fid, prev), checksum in zip(todo, sums, strict=True):
        if prev and prev[0] == "loaded" and prev[1] == f.size and prev[3] == checksum:
            con.execute(
                "update ingest_files set modified_at = $m where file_id = $id",
                {"m": f.modified_at, "id": fid},
            )
            outcomes[f.uri] = FileOutcome(source.name, f.uri, "unchanged", target=target)
            continue
        pending.append((f, fid, checksum, prev is not None))
    batches: list[list[tuple[SourceFile, str, str, bool]]] = [[]]
    size = 0
    most = int(getattr(reader, "batch_files", BATCH_FILES))
    for item in pending:
        if batches[-1] and (len(batches[-1]) >= most or size + item[0].size > BATCH_BYTES):
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += item[0].size
    for batch in batches:
        for outcome in _load_batch(con, config, source, reader, batch):
            outcomes[outcome.uri] = outcome
    result = [outcomes[f.uri] for f in files]
    if progress:
        for o in result:
            progress(f"{o.status:9} {o.uri}" + (f" ({o.rows:,} rows)" if o.rows else ""))
    return result


def _load_batch(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    source: Source,
    reader: Any,
    batch: list[tuple[SourceFile, str, str, bool]],
) -> list[FileOutcome]:
    from pipelines.ingest import FileOutcome, _ingest_file, _record

    target = reader.target_table
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
                for (f, fid, checksum, _), result in zip(batch, results, strict=True):
                    # documented skips (a last line cut short, pods without GPUs) are kept as the ledger's note
                    note = "; ".join(result.warnings) or None
                    _record(con, fid, source, f, checksum, "loaded", note, result, now)
        except FileFailed as exc:
            bad = batch.pop(exc.index)
            out.append(_ingest_file(con, config, source, reader, bad[0]))
            continue
        except (RejectedFile, duckdb.Error, OSError, EOFError):
            break
        out.extend(
            FileOutcome(source.name, f.uri, "loaded", rows=r.rows, target=target, repairs=list(r.warnings))
            for (f, _, _, _), r in zip(batch, results, strict=True)
        )
        return out
    # the reader could not tell which file failed: every file on its own
    out.extend(_ingest_file(con, config, source, reader, f) for f, _, _, _ in batch)
    return out
