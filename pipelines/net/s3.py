"""S3 and S3-compatible stores through boto3: the client, URIs, listing, downloads and error text.

Credentials come from boto3's default chain (environment, shared config/credentials files, instance or
container roles); a source's `endpoint_url` and `region` reach S3-compatible stores (MinIO, Ceph, Baidu BOS,
Aliyun OSS, Tencent COS). Every message this module builds goes through `message()` and `problem()`, which
word what reaches a user about an S3 request and pass it through `redact()`: an endpoint's password, a
presigned URL's signature or a credential never reaches a message.

Every client made here reads bounded (pipelines/net/limits.py): each answer (a listing page, an error body)
whole within the source's `timeout` and at most its `max_response_mb`, each download (GetObject, also
through boto3's download_file) above `min_download_kbps` over `download_window`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.config import Source
from pipelines.errors import S3Error
from pipelines.net.limits import AnswerLimits, DownloadFloor, LimitHit, bound_client
from pipelines.redact import redact, remember
from pipelines.sources.options import AnswerOptions, DownloadOptions
from pipelines.sources.registry import source_kind


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


class ListingInterrupted(S3Error):
    """A ListObjectsV2 listing failed part-way: `pages` and `objects` say how far it got, `reason` why."""

    def __init__(self, location: str, reason: str, pages: int, objects: int) -> None:
        super().__init__(message(location, f"cannot list: {reason}"))
        self.reason, self.pages, self.objects = reason, pages, objects


def split_uri(uri: str) -> tuple[str, str]:
    """s3://bucket/some/prefix -> ("bucket", "some/prefix")."""
    if not uri.startswith("s3://"):
        raise ValueError(f"not an s3:// uri: {uri!r}")
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    if not bucket:
        raise ValueError(f"no bucket in {uri!r}")
    return bucket, prefix


def client(source: Source, retries: int = 5) -> Any:
    """A boto3 S3 client for the source: default credential chain, its endpoint and region, standard retries,
    and its limits (`timeout`, `max_response_mb`, `min_download_kbps`, `download_window`; defaults for a
    kind without them) so that an unreachable, drip-feeding or oversized endpoint fails in bounded time
    rather than hanging a nightly run."""
    answers, floor = source_limits(source)
    return client_at(source.endpoint_url, source.region, retries, answers=answers, floor=floor)


def source_limits(source: Source) -> tuple[AnswerLimits, DownloadFloor]:
    """The answer limits and download floor of a source's options (pipelines/net/limits.py)."""
    try:
        opts = source_kind(source.kind).options.model_validate(source.options)
    except KeyError:  # not a registered kind (a destination made up as a source): the defaults
        return AnswerLimits.default(), DownloadFloor.default()
    answers = AnswerLimits.of(opts) if isinstance(opts, AnswerOptions) else AnswerLimits.default()
    floor = DownloadFloor.of(opts) if isinstance(opts, DownloadOptions) else DownloadFloor.default()
    return answers, floor


def client_at(
    endpoint_url: str | None,
    region: str | None,
    retries: int = 5,
    service: str = "s3",
    answers: AnswerLimits | None = None,
    floor: DownloadFloor | None = None,
) -> Any:
    """A boto3 client for `service` (s3, ec2, logs) at an endpoint (None: AWS) and region, as `client` makes
    it: each answer whole within `answers.timeout` s and at most `answers.max_response_mb`, each download
    above the `floor` (defaults: pipelines/sources/options.py); the password of an endpoint's user info is
    redacted from every message from then on."""
    import boto3
    from botocore.config import Config as BotoConfig

    answers = answers or AnswerLimits.default()
    remember(*_userinfo_secrets(endpoint_url))
    made = boto3.session.Session().client(
        service,
        endpoint_url=endpoint_url,
        region_name=region,
        config=BotoConfig(
            retries={"max_attempts": max(1, retries), "mode": "standard"},
            connect_timeout=min(10, answers.timeout),
            read_timeout=answers.timeout,
        ),
    )
    return bound_client(made, answers, floor or DownloadFloor.default())


def _userinfo_secrets(url: str | None) -> list[str]:
    """The password of a URL's user info, to be redacted wherever it appears alone."""
    if not url or "@" not in url:
        return []
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    return [unquote(parts.password)] if parts.password else []


def problem(exc: BaseException) -> str:
    """A botocore error as one redacted line: the S3 error code and message, or the connection problem."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and "Error" in response:
        err = response["Error"]
        return redact(f"{err.get('Code', 'Error')}: {err.get('Message', '')}".strip().rstrip(":"))
    text = str(exc).strip()
    return redact(text.splitlines()[0] if text else type(exc).__name__)


def message(where: str, what: str, exc: BaseException | None = None) -> str:
    """`where: what[: the request's problem]`, redacted: every S3 message reaching a user is built here."""
    text = f"{where}: {what}"
    return redact(f"{text}: {problem(exc)}" if exc is not None else text)


def object_pages(s3: Any, bucket: str, prefix: str, page_size: int = 1000) -> Iterator[list[dict[str, Any]]]:
    """ListObjectsV2 under a prefix, one page of raw entries at a time (folder markers included).

    Raises ListingInterrupted (how many pages and objects were read) when a request fails or a truncated
    page carries no continuation token.
    """
    location = f"s3://{bucket}/{prefix}"
    token: str | None = None
    pages = objects = 0
    while True:
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": max(1, min(page_size, 1000))}
        if token:
            kwargs["ContinuationToken"] = token
        try:
            page = s3.list_objects_v2(**kwargs)
        except Exception as exc:  # botocore raises many types; each one interrupts the listing
            raise ListingInterrupted(location, problem(exc), pages, objects) from None
        contents = page.get("Contents", [])
        pages += 1
        objects += len(contents)
        yield contents
        if not page.get("IsTruncated"):
            return
        token = page.get("NextContinuationToken")
        if not token:
            raise ListingInterrupted(
                location, "a truncated page without NextContinuationToken", pages, objects
            )


def as_object(bucket: str, entry: dict[str, Any]) -> S3Object:
    """An S3Object from a ListObjectsV2 entry (LastModified as naive UTC, the ETag unquoted)."""
    modified = entry["LastModified"]
    if modified.tzinfo is not None:
        modified = modified.astimezone(UTC).replace(tzinfo=None)
    return S3Object(bucket, entry["Key"], int(entry["Size"]), str(entry.get("ETag", "")).strip('"'), modified)


def list_objects(s3: Any, uri: str) -> list[S3Object]:
    """Every object under s3://bucket/prefix (recursively, folder markers left out), sorted by key."""
    bucket, prefix = split_uri(uri)
    out = [
        as_object(bucket, entry)
        for page in object_pages(s3, bucket, prefix)
        for entry in page
        if not entry["Key"].endswith("/")
    ]
    return sorted(out, key=lambda o: o.key)


def download(s3: Any, obj: S3Object, dest: Path, chunk: int = 8 << 20) -> None:
    """Stream the object to `dest` (written beside it, renamed when complete); never held in memory. A download
    slower than the client's floor (`min_download_kbps` over `download_window`) fails with S3Error."""
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
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if _is_boto_error(exc) or isinstance(exc, LimitHit):
            raise S3Error(message(obj.uri, "cannot download", exc)) from None
        raise


def _is_boto_error(exc: BaseException) -> bool:
    from botocore.exceptions import BotoCoreError, ClientError

    return isinstance(exc, ClientError | BotoCoreError)
