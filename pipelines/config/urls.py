"""The URLs of `wastewatch.yaml`, checked when the file is loaded: each needs a scheme and a host.

Three kinds, each declared once here and used as a field's type in the config models:
- `WebhookUrl` (notify.webhook_url, alert.webhook_url): the URL carries a token to a third party, so it
  must be `https://`, or `http://` to a loopback address (a local receiver in tests);
- `EndpointUrl` (S3-compatible and EC2 `endpoint_url`s, a Prometheus source's uri): the user's own
  services, `http://` or `https://` (`http://minio.internal:9000`);
- `LinkUrl` (notify.report_url): where the reports are served, `http://` or `https://`.

A refused value is quoted with its secret parts masked: a webhook keeps only its scheme and host
(`https://hooks.slack.com/***`), an endpoint loses its user info and credential query values.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from typing import Annotated

from pydantic import AfterValidator

from pipelines.redact import MASK, redact, remember, url_label

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_LOOPBACK_NAMES = ("localhost", "localhost.localdomain")


def mask_webhook(value: str) -> str:
    """A webhook URL as an error may quote it: scheme and host only; without a scheme, the first part."""
    text = value.strip()
    if _SCHEME.match(text):
        return url_label(text)
    head, sep, _ = text.partition("/")
    return f"{head.rsplit('@', 1)[-1]}/{MASK}" if sep else MASK


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost: a receiver on this machine."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _parts(
    value: str, shown: str, example: str, schemes: tuple[str, ...], what: str
) -> urllib.parse.SplitResult:
    """The URL split, or ValueError (quoting `shown`): no scheme, a scheme not in `schemes`, no host, or a
    host or port that cannot be read. `what` names the kind of URL in the message."""
    text = value.strip()
    if text != value or any(ch.isspace() or ord(ch) < 32 for ch in text):
        raise ValueError(f"{shown} holds spaces or control characters; a URL has none")
    if not _SCHEME.match(text):
        raise ValueError(f"{shown} is not a URL: it needs a scheme and a host, e.g. {example}")
    scheme = text.split("://", 1)[0].lower()
    if scheme not in schemes:
        wanted = " or ".join(f"{s}://" for s in schemes)
        raise ValueError(f"{shown}: {what} must be an {wanted} URL, not {scheme}://")
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
    except ValueError:
        raise ValueError(f"{shown} is not a valid URL (its host or port cannot be read)") from None
    if not parts.hostname:
        raise ValueError(f"{shown} has no host, e.g. {example}")
    remember(parts.password, urllib.parse.unquote(parts.password or ""))
    return parts


def check_webhook(value: str) -> str:
    """A webhook URL: https://, or http:// to a loopback address; its token is remembered for redaction."""
    shown = mask_webhook(value)
    if len(shown) < len(value.strip()):  # the part masked is the secret
        remember(value, value.strip())
    parts = _parts(value, repr(shown), "https://hooks.slack.com/services/...", ("https", "http"), "a webhook")
    if parts.scheme.lower() == "http" and not is_loopback(parts.hostname or ""):
        raise ValueError(
            f"{shown!r} is http://: a webhook carries its token to another service, so it must be https:// "
            "(http:// only to a loopback address such as 127.0.0.1, for tests)"
        )
    return value


def check_endpoint(value: str, example: str = "http://minio.internal:9000") -> str:
    """An endpoint of the user's own service: http:// or https:// with a host."""
    _parts(value, repr(redact(value)), example, ("http", "https"), "an endpoint")
    return value


def check_link(value: str) -> str:
    """A URL people open (where the reports are served): http:// or https:// with a host."""
    _parts(value, repr(redact(value)), "https://finops.example.com/reports", ("https", "http"), "a link")
    return value


WebhookUrl = Annotated[str, AfterValidator(check_webhook)]
EndpointUrl = Annotated[str, AfterValidator(check_endpoint)]
LinkUrl = Annotated[str, AfterValidator(check_link)]

# the schemes a source's uri may have, beside a local path: files in a bucket, the AWS APIs the
# `ec2_instances` and `cloudwatch_logs` kinds call (their host is the region, which may be left out),
# and an HTTP API
SOURCE_SCHEMES = ("s3", "ec2", "logs", "http", "https")


def check_source_uri(value: str, kind: str, http_kinds: tuple[str, ...]) -> None:
    """A source's uri: a local path, or a URL of a scheme sources read (ValueError says why not)."""
    if kind in http_kinds:
        check_endpoint(value, "http://prometheus.internal:9090")
        return
    if not _SCHEME.match(value.strip()):
        return  # a file, folder or glob
    shown = repr(redact(value))
    scheme = value.split("://", 1)[0].lower()
    if scheme not in SOURCE_SCHEMES:
        raise ValueError(
            f"{shown}: a source's uri is a file, folder or glob, or an s3://, ec2://, logs:// or "
            f"http(s):// URL, not {scheme}://"
        )
    if scheme in ("http", "https"):
        check_endpoint(value, "http://prometheus.internal:9090")
    elif scheme == "s3" and not value.split("://", 1)[1].split("/", 1)[0]:
        raise ValueError(f"{shown} names no bucket, e.g. s3://bucket/prefix/")


def check_spark_url(value: str) -> str:
    """A Spark master or Spark Connect URL: a name (local[4], yarn) or a URL with a host (sc://host:15002)."""
    if _SCHEME.match(value.strip()):
        schemes = ("sc", "spark", "k8s", "mesos")
        _parts(value, repr(redact(value)), "sc://spark-connect.internal:15002", schemes, "a Spark URL")
    return value
