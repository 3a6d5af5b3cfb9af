"""A mounted file system (Lustre, NFS, a local disk) walked in parallel -> storage_objects.

The source's uri is the root folder; each run replaces the source's previous scan (one snapshot, dated when
the scan ran). Every regular file becomes a row: `bucket` is the root's absolute path, `key` the path below
it (`/`-separated), with its size and modification time (UTC).

Options:
    workers: 8                    folders listed (and files fingerprinted) in parallel
    fingerprint: false            also fingerprint each file's content, for the duplicate-dataset rule:
        full_hash_max_bytes: 67108864   files up to this size: SHA-256 of the whole file (checksum_type
                                  FULL_OBJECT, base64 like S3's ChecksumSHA256, so it matches an S3 copy's
                                  full-object SHA-256)
        sample_blocks: 16         larger files: SHA-256 over the size and this many blocks spread evenly
        sample_block_bytes: 1048576   through the file, first and last included (SAMPLED_SHA256, checksum_type
                                  SAMPLED: evidence says a match was sampled, not proven)
    exclude: []                   glob patterns of paths (relative to the root) to skip, e.g. ".snapshot/*"
    storage_class: null           the class name the `prices: storage_gb_month:` fallback is looked up by
    resource_id: null             the file system's id on the bill (e.g. an FSx fs-0123...), for its price

Folders that cannot be read are skipped and counted in the load's warnings; files that vanish during the
scan are skipped. A root that does not exist rejects the run (the previous scan stays).
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import os
import stat
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import Source
from pipelines.errors import RejectedFile
from pipelines.ingest.readers.base import LoadContext, LoadResult, SourceReader, duckdb_problem
from pipelines.ingest.readers.s3_listing import OBJECT_COLUMNS, insert_rows
from pipelines.ingest.snapshots import replace_snapshot
from pipelines.ingest.storage_patterns import sync_config
from pipelines.sources.options import FsScanOptions

BATCH = 50_000


def fingerprint(path: Path, size: int, full_max: int, blocks: int, block_bytes: int) -> tuple[str, str, str]:
    """(algorithm, checksum type, base64 digest) of a file's content: whole-file SHA-256 up to `full_max`
    bytes, else SHA-256 over the size and `blocks` evenly spaced blocks (first and last included)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        if size <= full_max:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
            return "SHA256", "FULL_OBJECT", base64.b64encode(h.digest()).decode()
        h.update(f"size={size};blocks={blocks}x{block_bytes};".encode())
        last = max(size - block_bytes, 0)
        for i in range(blocks):
            offset = last * i // max(blocks - 1, 1)
            f.seek(offset)
            h.update(f.read(block_bytes))
    return "SAMPLED_SHA256", "SAMPLED", base64.b64encode(h.digest()).decode()


class FsScanReader(SourceReader):
    def load_source(self, con: duckdb.DuckDBPyConnection, source: Source, ctx: LoadContext) -> LoadResult:
        opts = source.options_as(FsScanOptions)
        if source.is_s3:
            raise RejectedFile(
                source.uri, f"source {source.name!r}: fs_scan reads a mounted folder, not s3://"
            )
        root = Path(ctx.config.source_location(source)).resolve()
        sync_config(con, ctx.config, ctx.loaded_at, str(root))
        if not root.is_dir():
            raise RejectedFile(str(root), "no such folder (is the file system mounted?)")
        scan = _Scan(
            root=root,
            workers=opts.workers,
            fingerprint=opts.fingerprint,
            full_max=opts.full_hash_max_bytes,
            blocks=opts.sample_blocks,
            block_bytes=opts.sample_block_bytes,
            exclude=list(opts.exclude),
        )
        common = {
            "inventory_date": ctx.loaded_at.date(),
            "bucket": str(root),
            "storage_class": (str(opts.storage_class).upper() if opts.storage_class else None),
            "x_file_id": ctx.file_id,
        }
        rows = 0
        for batch in scan.run():
            try:
                insert_rows(con, "storage_objects", OBJECT_COLUMNS, [{**common, **r} for r in batch])
            except duckdb.Error as exc:
                raise RejectedFile(str(root), f"cannot load the scan: {duckdb_problem(exc)}") from None
            rows += len(batch)
        replace_snapshot(
            con,
            file_id=ctx.file_id,
            source=source,
            store="fs",
            bucket=str(root),
            taken_at=ctx.loaded_at,
            region=source.region,
            resource_id=str(opts.resource_id) if opts.resource_id else None,
            uri=str(root),
            now=ctx.loaded_at,
        )
        return LoadResult(rows=rows, warnings=scan.warnings)


class _Scan:
    """A parallel walk: each folder is listed by a worker thread; fingerprints are computed there too."""

    def __init__(
        self,
        root: Path,
        workers: int,
        fingerprint: bool,
        full_max: int,
        blocks: int,
        block_bytes: int,
        exclude: list[str],
    ) -> None:
        self.root, self.workers, self.fp = root, workers, fingerprint
        self.full_max, self.blocks, self.block_bytes, self.exclude = full_max, blocks, block_bytes, exclude
        self.warnings: list[str] = []
        self._lock = threading.Lock()

    def _excluded(self, rel: str) -> bool:
        return any(fnmatch.fnmatch(rel, p) for p in self.exclude)

    def _list(self, folder: Path) -> tuple[list[dict[str, Any]], list[Path]]:
        files: list[dict[str, Any]] = []
        subdirs: list[Path] = []
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            with self._lock:
                self.warnings.append(f"{folder}: skipped, cannot list: {exc.strerror}")
            return files, subdirs
        for entry in entries:
            path = Path(entry.path)
            rel = path.relative_to(self.root).as_posix()
            if self._excluded(rel):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # vanished since the folder was listed
            if stat.S_ISDIR(st.st_mode):
                subdirs.append(path)
            elif stat.S_ISREG(st.st_mode):
                row: dict[str, Any] = {
                    "key": rel,
                    "size_bytes": st.st_size,
                    "last_modified": datetime.fromtimestamp(st.st_mtime, UTC).replace(tzinfo=None),
                }
                if self.fp:
                    try:
                        alg, kind, digest = fingerprint(
                            path, st.st_size, self.full_max, self.blocks, self.block_bytes
                        )
                        row.update(checksum_algorithm=alg, checksum_type=kind, checksum=digest)
                    except OSError as exc:
                        with self._lock:
                            self.warnings.append(f"{path}: not fingerprinted: {exc.strerror}")
                files.append(row)
        return files, subdirs

    def run(self) -> Any:
        """Yield batches of file rows as the walk finds them."""
        batch: list[dict[str, Any]] = []
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            pending: set[Future[tuple[list[dict[str, Any]], list[Path]]]] = {
                pool.submit(self._list, self.root)
            }
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    files, subdirs = fut.result()
                    batch.extend(files)
                    pending |= {pool.submit(self._list, d) for d in subdirs}
                if len(batch) >= BATCH:
                    yield batch
                    batch = []
        if batch:
            yield batch
