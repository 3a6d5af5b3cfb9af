"""s3:// sources through boto3: listing, and streaming objects into a local cache.

Credentials come from boto3's default chain (environment, shared config/credentials files, instance or
container roles); a source's `endpoint_url` and `region` reach S3-compatible stores (MinIO, Ceph, ...).
Objects are streamed to disk in chunks (never held in memory) under the warehouse's cache folder, and
the ingest loop deletes what it downloaded once the source is done.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.config import Source


class S3Error(Exception):
    """An S3 request failed; the message names the bucket/prefix and the reason."""


@dataclass(frozen=True)
class S3Object:
    bucket: str
    key: str
    size: int
    etag: str
    last_modified: datetime  # naive UTC

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


def split_uri(uri: str) -> tuple[str, str]:
    """s3://bucket/some/prefix -> ("bucket", "some/prefix")."""
    if not uri.startswith("s3://"):
        raise ValueError(f"not an s3:// uri: {uri!r}")
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    if not bucket:
        raise ValueError(f"no bucket in {uri!r}")
    return bucket, prefix


def client(source: Source) -> Any:
    """A boto3 S3 client for the source (default credential chain, optional endpoint and region)."""
    import boto3
    from botocore.config import Config as BotoConfig

    kwargs: dict[str, Any] = {"config": BotoConfig(retries={"max_attempts": 5, "mode": "standard"})}
    if source.endpoint_url:
        kwargs["endpoint_url"] = source.endpoint_url
    if source.region:
        kwargs["region_name"] = source.region
    return boto3.session.Session().client("s3", **kwargs)


def _problem(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and "Error" in response:
        err = response["Error"]
        return f"{err.get('Code', 'error')}: {err.get('Message', '')}".rstrip(": ")
    return str(exc) or type(exc).__name__


def list_objects(s3: Any, uri: str) -> list[S3Object]:
    """Every object under s3://bucket/prefix (recursively), sorted by key."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, prefix = split_uri(uri)
    out: list[S3Object] = []
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for obj in page.get("Contents", []):
                if obj["Key"].endswith("/"):
                    continue  # folder marker
                modified = obj["LastModified"]
                if modified.tzinfo is not None:
                    modified = modified.astimezone(UTC).replace(tzinfo=None)
                out.append(
                    S3Object(bucket, obj["Key"], int(obj["Size"]), obj.get("ETag", "").strip('"'), modified)
                )
    except (ClientError, BotoCoreError) as exc:
        raise S3Error(f"{uri}: cannot list: {_problem(exc)}") from None
    return sorted(out, key=lambda o: o.key)


def download(s3: Any, obj: S3Object, dest: Path, chunk: int = 8 << 20) -> None:
    """Stream the object to `dest` (written beside it, renamed when complete)."""
    from botocore.exceptions import BotoCoreError, ClientError

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    try:
        # IfMatch: an object rewritten since it was listed fails here and is read on the next run
        kwargs = {"IfMatch": f'"{obj.etag}"'} if obj.etag else {}
        body = s3.get_object(Bucket=obj.bucket, Key=obj.key, **kwargs)["Body"]
        with tmp.open("wb") as f:
            for part in body.iter_chunks(chunk):
                f.write(part)
        tmp.replace(dest)
    except (ClientError, BotoCoreError) as exc:
        tmp.unlink(missing_ok=True)
        raise S3Error(f"{obj.uri}: cannot download: {_problem(exc)}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def clean_cache(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
