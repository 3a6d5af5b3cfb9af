"""The s3_inventory reader: the newest report of each inventory configuration, loaded once, older ones pruned."""

from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb

from pipelines.config import Config, Source
from pipelines.errors import RejectedFile
from pipelines.ingest.ledger import file_id, held, key_in, record_snapshot, source_key
from pipelines.ingest.readers.base import LoadContext, LoadResult, SourceReader
from pipelines.ingest.readers.s3_inventory.load import load, prune
from pipelines.ingest.readers.s3_inventory.manifest import Manifest, ManifestRef, parse_manifest, verify
from pipelines.ingest.readers.s3_inventory.stores import LocalStore, S3Store, Store
from pipelines.ingest.snapshots import loaded_snapshot, replace_snapshot
from pipelines.ingest.storage_patterns import sync_config
from pipelines.sources.options import S3InventoryOptions


class S3InventoryReader(SourceReader):
    def load_source(self, con: duckdb.DuckDBPyConnection, source: Source, ctx: LoadContext) -> LoadResult:
        opts = source.options_as(S3InventoryOptions)
        keep, check_md5 = opts.keep_inventories, opts.verify_md5
        location = ctx.config.source_location(source)
        sync_config(con, ctx.config, ctx.loaded_at, location)
        store = _store(source, location)
        by_bucket = _newest_by_bucket(store, location)
        rows = 0
        warnings = []
        loaded = 0
        for bucket, m in sorted(by_bucket.items()):
            fid = file_id(source.name, key_in(location, m.ref.uri))
            done = loaded_snapshot(con, fid)
            if done and done[0] == m.md5:
                warnings.append(f"{m.ref.uri}: already loaded")
                continue
            loaded += 1
            with tempfile.TemporaryDirectory(prefix="wastewatch-inventory-") as tmp:
                paths = [store.data_file(m, i, Path(tmp)) for i in range(len(m.files))]
                if check_md5:
                    verify(m, paths)
                con.execute("delete from storage_objects where x_file_id = $f", {"f": fid})
                n = load(con, m, paths, fid) if paths else 0
            replace_snapshot(
                con,
                file_id=fid,
                source=source,
                store="s3",
                bucket=bucket,
                taken_at=m.created_at,
                region=source.region,
                resource_id=bucket,
                uri=m.ref.uri,
                now=ctx.loaded_at,
            )
            record_snapshot(
                con,
                file_id=fid,
                source=source,
                uri=m.ref.uri,
                size=m.ref.size,
                modified_at=m.ref.modified_at,
                etag=m.ref.etag,
                checksum=m.md5,
                rows=n,
                now=ctx.loaded_at,
            )
            prune(con, source.name, bucket, keep)
            rows += n
        return LoadResult(rows=rows, warnings=warnings, changed=loaded > 0)

    def pending(self, con: duckdb.DuckDBPyConnection, config: Config, source: Source) -> str | None:
        """The newest report of a bucket that is not the one loaded (by its manifest's MD5), if any."""
        location = config.source_location(source)
        if not held(con, file_id(source.name, source_key(config, source))):
            return f"{location}: not loaded yet"
        for m in _newest_by_bucket(_store(source, location), location).values():
            done = loaded_snapshot(con, file_id(source.name, key_in(location, m.ref.uri)))
            if not done or done[0] != m.md5:
                return f"{m.ref.uri}: a report not loaded yet"
        return None


def _store(source: Source, location: str) -> Store:
    return S3Store(source, location) if source.is_s3 else LocalStore(Path(location))  # type: ignore[return-value]


def _newest_by_bucket(store: Store, location: str) -> dict[str, Manifest]:
    """The newest report of each source bucket: the latest dated folder of each inventory configuration,
    then, of configurations reporting the same bucket, the one created last."""
    refs = store.manifests()
    if not refs:
        raise RejectedFile(location, "no inventory manifest.json found here")
    newest: dict[str, ManifestRef] = {}
    for ref in sorted(refs, key=lambda r: (r.folder, r.uri)):
        newest[ref.group] = ref
    by_bucket: dict[str, Manifest] = {}
    for ref in newest.values():
        m = parse_manifest(ref, store.read(ref))
        other = by_bucket.get(m.source_bucket)
        if other is None or (m.created_at, m.ref.uri) > (other.created_at, other.ref.uri):
            by_bucket[m.source_bucket] = m
    return by_bucket
