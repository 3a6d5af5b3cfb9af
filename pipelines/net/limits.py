"""Bounded network reads: every API answer has a total deadline and a size cap, every download a throughput
floor (DESIGN.md, "Acting safely"; docs/reliability.md, "Bounded network reads").

An API answer (a Prometheus query, a ListObjectsV2, DescribeInstances or DescribeLogGroups page) is read by
`read_answer`: whole within `timeout` seconds of its request and at most `max_response_mb`, checked after
each socket read. Reads return whatever has arrived (`read1`), so a peer that drips bytes cannot hold one
open past the deadline; a peer that sends nothing fails at the socket timeout. A file download (an S3 object,
possibly many GB) has no useful deadline: `FloorStream` fails it when fewer than `min_download_kbps` KB/s
arrive over `download_window`. `bound_client` makes a boto3 client read every answer and download this way.

A limit hit raises LimitHit, whose message names the URL (no credentials), the limit and the option that
moves it; it is never retried (the same answer would be as slow or as large again).
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from pipelines.redact import redact
from pipelines.sources.options import AnswerOptions, DownloadOptions, PrometheusOptions

KB = 1 << 10
MB = 1 << 20
CHUNK = 64 * KB


class LimitHit(Exception):
    """A network read went past one of its limits; the message names the URL, the limit and its remedy."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


class Readable(Protocol):
    def read1(self, amt: int) -> bytes: ...


def bare_url(url: str) -> str:
    """`url` without user info, query or fragment: what a message may show of a request."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return redact(urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", "")))


@dataclass(frozen=True)
class AnswerLimits:
    """The deadline (seconds from the request) and size cap (MB) of one API answer."""

    timeout: float
    max_mb: float

    @classmethod
    def of(cls, opts: AnswerOptions | PrometheusOptions) -> AnswerLimits:
        return cls(float(opts.timeout), float(opts.max_response_mb))

    @classmethod
    def default(cls) -> AnswerLimits:
        """The defaults of the options (pipelines/sources/options.py), for a kind without them."""
        return cls.of(AnswerOptions())

    @property
    def max_bytes(self) -> int:
        return int(self.max_mb * MB)

    def too_slow(self, url: str) -> LimitHit:
        return LimitHit(
            f"{bare_url(url)}: the answer did not arrive whole within timeout = {self.timeout:g} s; "
            "raise the source's `timeout` option"
        )

    def too_large(self, url: str) -> LimitHit:
        return LimitHit(
            f"{bare_url(url)}: the answer is larger than max_response_mb = {self.max_mb:g} MB; "
            "raise the source's `max_response_mb` option"
        )


def read_answer(
    stream: Readable, limits: AnswerLimits, started: float, url: str, length: str | None = None
) -> bytes:
    """The whole body of an answer whose request was sent at `started` (time.monotonic()); LimitHit when it
    declares (`length`, its Content-Length) or reaches more than the cap, or is still arriving at the
    deadline."""
    if length is not None and length.strip().isdigit() and int(length) > limits.max_bytes:
        raise limits.too_large(url)
    body = bytearray()
    while True:
        if time.monotonic() - started > limits.timeout:
            raise limits.too_slow(url)
        part = stream.read1(CHUNK)
        if not part:
            return bytes(body)
        body += part
        if len(body) > limits.max_bytes:
            raise limits.too_large(url)


@dataclass(frozen=True)
class DownloadFloor:
    """The slowest acceptable download: `min_kbps` KB/s over each `window_s` seconds."""

    min_kbps: float
    window_s: float

    @classmethod
    def of(cls, opts: DownloadOptions) -> DownloadFloor:
        return cls(float(opts.min_download_kbps), float(opts.download_window))

    @classmethod
    def default(cls) -> DownloadFloor:
        """The defaults of the options (pipelines/sources/options.py), for a kind without them."""
        return cls.of(DownloadOptions())

    def too_slow(self, url: str, got: int, seconds: float) -> LimitHit:
        return LimitHit(
            f"{bare_url(url)}: the download fell below min_download_kbps = {self.min_kbps:g} KB/s "
            f"({got:,} bytes in the last {seconds:.1f} s, download_window = {self.window_s:g} s); "
            "lower the source's `min_download_kbps` option or lengthen its `download_window`"
        )


class FloorStream:
    """A response body read as it arrives, failing once a window passes with less than the floor's bytes.

    The windows follow one another from the first read; a peer that sends nothing at all fails at the
    socket's read timeout. Reads return what has arrived (at most `amt`), as a raw stream may."""

    def __init__(self, raw: Any, floor: DownloadFloor, url: str) -> None:
        self.raw, self.floor, self.url = raw, floor, url
        self._mark: float | None = None
        self._mark_bytes = self._bytes = 0

    def read(self, amt: int | None = None) -> bytes:
        if amt is None or amt < 0:
            return b"".join(iter(lambda: self.read(CHUNK), b""))
        if self._mark is None:
            self._mark = time.monotonic()
        part = self.raw.read1(min(amt, CHUNK)) if amt else b""
        self._bytes += len(part)
        now = time.monotonic()
        if part and now - self._mark >= self.floor.window_s:
            got, seconds = self._bytes - self._mark_bytes, now - self._mark
            if got < self.floor.min_kbps * KB * seconds:
                raise self.floor.too_slow(self.url, got, seconds)
            self._mark, self._mark_bytes = now, self._bytes
        return part

    def readinto(self, buffer: Any) -> int:
        part = self.read(len(buffer))
        buffer[: len(part)] = part
        return len(part)

    def readlines(self) -> list[bytes]:
        return self.read().splitlines(keepends=True)

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._bytes

    def stream(self, amt: int = CHUNK) -> Iterator[bytes]:
        while part := self.read(amt):
            yield part

    def close(self) -> None:
        self.raw.close()

    def release_conn(self) -> None:
        self.raw.release_conn()


class _Read:
    """A body already read, as botocore's response expects its raw stream."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, amt: int = CHUNK) -> Iterator[bytes]:
        if self.body:
            yield self.body

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


def bound_client(client: Any, answers: AnswerLimits, floor: DownloadFloor) -> Any:
    """Make every answer of a boto3 client bounded: answers (listing and describe pages, error bodies) by
    `answers`, streamed bodies (GetObject) by `floor`. Returns the client."""
    from botocore.awsrequest import AWSResponse
    from botocore.exceptions import ConnectionClosedError, ReadTimeoutError
    from urllib3.exceptions import HTTPError
    from urllib3.exceptions import ReadTimeoutError as Urllib3ReadTimeout

    # the client's own connection pool, TLS and proxy settings send the request; its body is read here
    session = client._endpoint.http_session

    def send(request: Any, **_: Any) -> Any:
        streamed = bool(request.stream_output)
        request.stream_output = True  # botocore leaves the body unread
        started = time.monotonic()
        response = session.send(request)
        raw = response.raw
        if streamed and response.status_code < 300:
            return AWSResponse(
                request.url, response.status_code, response.headers, FloorStream(raw, floor, request.url)
            )
        try:
            body = read_answer(raw, answers, started, request.url, response.headers.get("content-length"))
        except Urllib3ReadTimeout as exc:
            raw.close()
            raise ReadTimeoutError(endpoint_url=request.url, error=exc) from None
        except HTTPError as exc:
            raw.close()
            raise ConnectionClosedError(endpoint_url=request.url, error=exc) from None
        except LimitHit:
            raw.close()  # the rest of the answer is never read: the connection is not reused
            raise
        raw.release_conn()
        return AWSResponse(request.url, response.status_code, response.headers, _Read(body))

    client.meta.events.register("before-send", send)
    return client
