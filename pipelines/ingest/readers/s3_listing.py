"""A bucket listed through the S3 API (boto3 ListObjectsV2, ListMultipartUploads, ListParts) -> storage_objects
and storage_uploads; for buckets without an S3 Inventory report, and for any S3-compatible store
(MinIO, Ceph, ... through the source's `endpoint_url`).

The source's uri is `s3://bucket/` or `s3://bucket/prefix/`; each run replaces the source's previous listing
(one snapshot, dated when the listing ran). ETags lose their quotes; the bucket's region is the source's
`region`, else its location (GetBucketLocation) when the credentials may ask.

Options:
    checksums: false        HeadObject (ChecksumMode=ENABLED) per object for its additional checksum
                            (CRC32, CRC32C, SHA1, SHA256, CRC64NVME; FULL_OBJECT or COMPOSITE), which lets
                            the duplicate-dataset rule match copies uploaded with different part sizes
    multipart_uploads: true list incomplete multipart uploads (and, with upload_parts, their parts' sizes)
    upload_parts: true      ListParts per incomplete upload, for the bytes it holds
    page_size: 1000         MaxKeys per ListObjectsV2 page
    workers: 16             parallel HeadObject/ListParts requests
    retries: 5              attempts per request (botocore standard retry mode)
    timeout: 60             seconds each answer (a page) may take whole, request to last byte
    max_response_mb: 64     largest answer (a page); ListObjectsV2's 1,000 keys are at most ~1.5 MB

A listing that fails part-way (a page that cannot be fetched after the retries, or a truncated page without
a continuation token, or a page that takes longer than `timeout` or is larger than `max_response_mb`: see
pipelines/net/limits.py) rejects the source run: nothing of it is written and the previous listing stays.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import duckdb
import pyarrow as pa

from pipelines.config import Source
from pipelines.errors import RejectedFile
from pipelines.ingest.readers.base import LoadContext, LoadResult, SourceReader, duckdb_problem
from pipelines.ingest.snapshots import replace_snapshot
from pipelines.ingest.storage_patterns import sync_config
from pipelines.net import s3 as s3mod
from pipelines.sources.options import S3ListingOptions

CHECKSUMS = ("CRC64NVME", "SHA256", "SHA1", "CRC32C", "CRC32")  # preferred first
BATCH = 50_000
OBJECT_COLUMNS = {
    "inventory_date": pa.date32(),
    "bucket": pa.string(),
    "key": pa.string(),
    "size_bytes": pa.int64(),
    "last_modified": pa.timestamp("us"),
    "etag": pa.string(),
    "is_multipart": pa.bool_(),
    "storage_class": pa.string(),
    "checksum_algorithm": pa.string(),
    "checksum_type": pa.string(),
    "checksum": pa.string(),
    "x_file_id": pa.string(),
}
UPLOAD_COLUMNS = {
    "listed_at": pa.timestamp("us"),
    "store": pa.string(),
    "bucket": pa.string(),
    "key": pa.string(),
    "upload_id": pa.string(),
    "initiated": pa.timestamp("us"),
    "storage_class": pa.string(),
    "parts": pa.int32(),
    "size_bytes": pa.int64(),
    "region_id": pa.string(),
    "resource_id": pa.string(),
    "source": pa.string(),
    "x_source_file": pa.string(),
    "x_file_id": pa.string(),
}


def utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def strip_etag(etag: str | None) -> str | None:
    return etag.strip().strip('"') or None if etag else None


def insert_rows(
    con: duckdb.DuckDBPyConnection, table: str, columns: dict[str, Any], batch: list[dict]
) -> None:
    """Append rows (dicts keyed by column) to `table` through an Arrow table."""
    if not batch:
        return
    arrow = pa.table(
        {c: pa.array([r.get(c) for r in batch], type=t) for c, t in columns.items()},
    )
    con.register("_storage_rows", arrow)
    try:
        con.execute(f"insert into {table} by name select * from _storage_rows")  # noqa: S608 - our constants
    finally:
        con.unregister("_storage_rows")


class S3ListingReader(SourceReader):
    def load_source(self, con: duckdb.DuckDBPyConnection, source: Source, ctx: LoadContext) -> LoadResult:
        opts = source.options_as(S3ListingOptions)
        if not source.is_s3:
            raise RejectedFile(
                source.uri, f"source {source.name!r}: an s3_listing uri is s3://bucket/prefix/"
            )
        location = source.uri
        sync_config(con, ctx.config, ctx.loaded_at, location)
        page_size, workers = opts.page_size, opts.workers
        bucket, prefix = s3mod.split_uri(location)
        client = s3mod.client(source, opts.retries)
        region = source.region or _bucket_region(client, bucket)
        common = {"inventory_date": ctx.loaded_at.date(), "bucket": bucket, "x_file_id": ctx.file_id}
        rows = 0
        batch: list[dict[str, Any]] = []
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for page in _pages(client, bucket, prefix, page_size, location):
                for obj in page:
                    etag = strip_etag(obj.get("ETag"))
                    algorithms = obj.get("ChecksumAlgorithm") or []
                    batch.append(
                        {
                            **common,
                            "key": obj["Key"],
                            "size_bytes": int(obj.get("Size", 0)),
                            "last_modified": utc(obj.get("LastModified")),
                            "etag": etag,
                            "is_multipart": bool(etag and "-" in etag),
                            "storage_class": (obj.get("StorageClass") or "STANDARD").upper(),
                            "checksum_algorithm": algorithms[0].upper() if algorithms else None,
                            "checksum_type": obj.get("ChecksumType"),
                        }
                    )
                if len(batch) >= BATCH:
                    rows += self._flush(con, client, pool, bucket, batch, opts, location)
                    batch = []
            rows += self._flush(con, client, pool, bucket, batch, opts, location)
            con.execute("delete from storage_uploads where x_file_id = $f", {"f": ctx.file_id})
            if opts.multipart_uploads:
                uploads = _uploads(client, bucket, prefix, location)
                if opts.upload_parts:
                    sizes = list(pool.map(lambda u: _parts(client, bucket, u, location), uploads))
                else:
                    sizes = [(None, None)] * len(uploads)
                insert_rows(
                    con,
                    "storage_uploads",
                    UPLOAD_COLUMNS,
                    [
                        {
                            "store": "s3",
                            "bucket": bucket,
                            "region_id": region,
                            "resource_id": bucket,
                            "source": source.name,
                            "listed_at": ctx.loaded_at,
                            "key": u["Key"],
                            "upload_id": u["UploadId"],
                            "initiated": utc(u.get("Initiated")),
                            "storage_class": (u.get("StorageClass") or "STANDARD").upper(),
                            "parts": parts,
                            "size_bytes": size,
                            "x_source_file": location,
                            "x_file_id": ctx.file_id,
                        }
                        for u, (parts, size) in zip(uploads, sizes, strict=True)
                    ],
                )
        replace_snapshot(
            con,
            file_id=ctx.file_id,
            source=source,
            store="s3",
            bucket=bucket,
            taken_at=ctx.loaded_at,
            region=region,
            resource_id=bucket,
            uri=location,
            now=ctx.loaded_at,
        )
        return LoadResult(rows=rows)

    def _flush(
        self,
        con: duckdb.DuckDBPyConnection,
        client: Any,
        pool: ThreadPoolExecutor,
        bucket: str,
        batch: list[dict[str, Any]],
        opts: S3ListingOptions,
        location: str,
    ) -> int:
        if opts.checksums:
            for row, found in zip(
                batch, pool.map(lambda r: _checksum(client, bucket, r, location), batch), strict=True
            ):
                row.update(found)
        try:
            insert_rows(con, "storage_objects", OBJECT_COLUMNS, batch)
        except duckdb.Error as exc:
            raise RejectedFile(location, f"cannot load the listing: {duckdb_problem(exc)}") from None
        return len(batch)


def _bucket_region(client: Any, bucket: str) -> str | None:
    try:
        found = client.get_bucket_location(Bucket=bucket).get("LocationConstraint")
    except Exception:  # region lookups may be denied; the bill or the source's region fills it in
        return None
    return found or "us-east-1"  # S3 reports us-east-1 as an empty constraint


def _pages(client: Any, bucket: str, prefix: str, page_size: int, location: str) -> Iterator[list[dict]]:
    try:
        yield from s3mod.object_pages(client, bucket, prefix, page_size)
    except s3mod.ListingInterrupted as exc:
        raise RejectedFile(
            location,
            f"listing interrupted after {exc.pages} page(s) ({exc.objects:,} objects): {exc.reason}; "
            "nothing of this listing was written, the previous one is kept",
        ) from None


def _uploads(client: Any, bucket: str, prefix: str, location: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
    while True:
        try:
            page = client.list_multipart_uploads(**kwargs)
        except Exception as exc:
            raise RejectedFile(
                location, f"cannot list incomplete multipart uploads: {s3mod.problem(exc)}"
            ) from None
        out.extend(page.get("Uploads", []))
        if not page.get("IsTruncated"):
            return out
        kwargs["KeyMarker"] = page.get("NextKeyMarker")
        kwargs["UploadIdMarker"] = page.get("NextUploadIdMarker")
        if not kwargs["KeyMarker"]:
            raise RejectedFile(location, "a truncated ListMultipartUploads page without NextKeyMarker")


def _parts(client: Any, bucket: str, upload: dict[str, Any], location: str) -> tuple[int, int]:
    parts = size = 0
    kwargs: dict[str, Any] = {"Bucket": bucket, "Key": upload["Key"], "UploadId": upload["UploadId"]}
    while True:
        try:
            page = client.list_parts(**kwargs)
        except Exception as exc:
            code = getattr(exc, "response", {}).get("Error", {}).get("Code")
            if code == "NoSuchUpload":  # completed or aborted since it was listed
                return parts, size
            raise RejectedFile(
                location,
                f"cannot list the parts of upload {upload['UploadId']} ({upload['Key']}): {s3mod.problem(exc)}",
            ) from None
        for p in page.get("Parts", []):
            parts += 1
            size += int(p.get("Size", 0))
        if not page.get("IsTruncated"):
            return parts, size
        kwargs["PartNumberMarker"] = page.get("NextPartNumberMarker")


def _checksum(client: Any, bucket: str, row: dict[str, Any], location: str) -> dict[str, Any]:
    """The object's additional checksum (HeadObject with ChecksumMode=ENABLED), if it has one."""
    try:
        head = client.head_object(Bucket=bucket, Key=row["key"], ChecksumMode="ENABLED")
    except Exception as exc:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code")
        if code in ("404", "NoSuchKey"):  # deleted since it was listed
            return {}
        raise RejectedFile(
            location, f"cannot read the checksum of {row['key']}: {s3mod.problem(exc)}"
        ) from None
    for algorithm in CHECKSUMS:
        value = head.get(f"Checksum{algorithm}")
        if value:
            kind = head.get("ChecksumType")
            if not kind:  # older endpoints: multipart SHA/CRC32 checksums are composite, CRC64NVME never
                kind = "COMPOSITE" if row.get("is_multipart") and algorithm != "CRC64NVME" else "FULL_OBJECT"
            return {"checksum_algorithm": algorithm, "checksum": value, "checksum_type": kind}
    return {}
