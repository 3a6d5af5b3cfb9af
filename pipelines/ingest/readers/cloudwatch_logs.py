"""CloudWatch Logs log groups -> log_groups: each group's retention setting and stored bytes, per listing.

A whole-source reader in two forms. With `uri: logs://<region>` it calls DescribeLogGroups through boto3
(paginated) and lands one listing stamped with the time of the call; a second run on the same UTC day
replaces that day's listing, earlier days are kept (their stored bytes give the groups' growth). Any other
uri is a file, folder, glob or s3:// prefix of saved `aws logs describe-log-groups` output (JSON, optionally
gzipped): every file is one listing, stamped with the date in its path (`2026-11-22`, `2026-11-22T06:00`),
else the `listed_at` option, else the file's modification time; each run reads them all again and replaces
the source's rows. Configure it as

    - {name: logs-prod, kind: cloudwatch_logs, uri: "logs://us-east-1", options: {prefix: /aws/sagemaker/}}
    - {name: logs-saved, kind: cloudwatch_logs, uri: landing/logs/}

The region is the source's `region`, else the `region` option, else the uri's `logs://<region>`, else
boto3's default; `endpoint_url` (source field or option) points at another endpoint (tests use moto's
server). Credentials come from boto3's usual chain. A group's account and region come from its ARN.

Bounded reads (pipelines/net/limits.py): each DescribeLogGroups page must arrive whole within `timeout`
seconds and be at most `max_response_mb` (defaults 60 s, 64 MB), else the source fails naming the limit and
keeps its rows; a saved listing downloaded from S3 must keep above `min_download_kbps` over `download_window`.
"""

from __future__ import annotations

import gzip
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from pipelines.config import Source
from pipelines.errors import RejectedFile, S3Error, SourceFailed
from pipelines.ingest.files import clean_cache, fetch, list_files, source_cache
from pipelines.ingest.readers.base import LoadContext, LoadResult, SourceReader, duckdb_problem
from pipelines.net import s3 as s3mod
from pipelines.net.limits import AnswerLimits, LimitHit
from pipelines.sources.options import CloudWatchLogsOptions
from pipelines.warehouse import sql_text

SCHEMA = pa.schema(
    [
        ("provider", pa.string()),
        ("account_id", pa.string()),
        ("region_id", pa.string()),
        ("log_group", pa.string()),
        ("log_group_arn", pa.string()),
        ("retention_in_days", pa.int32()),
        ("stored_bytes", pa.int64()),
        ("log_group_class", pa.string()),
        ("created_at", pa.timestamp("us")),
        ("listed_at", pa.timestamp("us")),
        ("x_source_file", pa.string()),
    ]
)

ARN = re.compile(r"^arn:aws[a-z-]*:logs:([a-z0-9-]*):([0-9]*):log-group:(.+?)(?::\*)?$")
# a listing's date in its path: 2026-11-22, optionally with a time (2026-11-22T06:00, 2026-11-22_0600)
PATH_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T_ ](\d{2})[:-]?(\d{2})(?:[:-]?(\d{2}))?)?")


def _whole(value: Any, where: str, field: str) -> int | None:
    """A non-negative whole number from the listing (absent or null: None); anything else rejects it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or value != int(value):
        raise RejectedFile(where, f"{field}: expected a non-negative whole number, got {value!r}")
    return int(value)


def group_row(group: Any, where: str, index: int, region: str | None, listed_at: datetime) -> dict[str, Any]:
    """One DescribeLogGroups entry as a log_groups row; a malformed entry names its index and field."""
    at = f"logGroups[{index}]"
    if not isinstance(group, dict):
        raise RejectedFile(where, f"{at}: expected an object, got {type(group).__name__}")
    name = group.get("logGroupName")
    if not isinstance(name, str) or not name:
        raise RejectedFile(where, f"{at}: no logGroupName")
    arn_text = group.get("logGroupArn") or group.get("arn")
    m = ARN.match(arn_text) if isinstance(arn_text, str) else None
    arn = f"arn:aws:logs:{m.group(1)}:{m.group(2)}:log-group:{m.group(3)}" if m else None
    created_ms = _whole(group.get("creationTime"), where, f"{at}.creationTime")
    return {
        "provider": "AWS",
        "account_id": (m.group(2) or None) if m else None,
        "region_id": (m.group(1) or None) if m else region,
        "log_group": name,
        "log_group_arn": arn,
        "retention_in_days": _whole(group.get("retentionInDays"), where, f"{at}.retentionInDays"),
        "stored_bytes": _whole(group.get("storedBytes"), where, f"{at}.storedBytes"),
        "log_group_class": group.get("logGroupClass"),
        "created_at": datetime.fromtimestamp(created_ms / 1000, UTC).replace(tzinfo=None)
        if created_ms is not None
        else None,
        "listed_at": listed_at,
        "x_source_file": where,
    }


def read_listing(path: Path, where: str) -> list[Any]:
    """The log groups of a saved `aws logs describe-log-groups` output: an object with `logGroups`, or a list
    of such pages."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RejectedFile(where, f"not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise RejectedFile(where, f"line {exc.lineno}, column {exc.colno}: not JSON: {exc.msg}") from None
    pages = doc if isinstance(doc, list) else [doc]
    groups: list[Any] = []
    for page in pages:
        if not isinstance(page, dict) or not isinstance(page.get("logGroups"), list):
            raise RejectedFile(
                where,
                "expected the output of `aws logs describe-log-groups`: an object with a `logGroups` list",
            )
        groups.extend(page["logGroups"])
    return groups


def listing_time(relative: str, modified_at: datetime, option: datetime | None) -> datetime:
    """When a saved listing was taken: the date (and time) in its path, else the option, else its mtime."""
    m = PATH_DATE.search(relative)
    if m:
        day = datetime.strptime(m.group(1), "%Y-%m-%d")
        return day.replace(
            hour=int(m.group(2) or 0), minute=int(m.group(3) or 0), second=int(m.group(4) or 0)
        )
    when = option or modified_at
    return when.astimezone(UTC).replace(tzinfo=None) if when.tzinfo else when


class CloudWatchLogsReader(SourceReader):
    # an API listing replaces only its own day's listing; saved files replace the source's rows themselves
    replaces_all = False

    def load_source(self, con: duckdb.DuckDBPyConnection, source: Source, ctx: LoadContext) -> LoadResult:
        opts = source.options_as(CloudWatchLogsOptions)
        if source.uri.startswith("logs://"):
            rows = self._describe(source, opts)
            if rows:
                con.execute(
                    "delete from log_groups where x_file_id = $id and listed_at::date = $day",
                    {"id": ctx.file_id, "day": rows[0]["listed_at"].date()},
                )
        else:
            rows = self._saved(source, opts, ctx)
            con.execute("delete from log_groups where x_file_id = $id", {"id": ctx.file_id})
        if not rows:
            return LoadResult(rows=0)
        view = f"_logs_src_{ctx.file_id}"
        con.register(view, pa.Table.from_pylist(rows, schema=SCHEMA))
        try:
            con.execute(
                f"insert into log_groups by name\nwith _src as (select * from {view})\nselect * from (\n"  # noqa: S608 - identifiers only
                f"{sql_text('staging', 'stg_cloudwatch__log_groups')}\n)",
                {"source_name": source.name, "file_id": ctx.file_id},
            )
        except duckdb.Error as exc:
            raise RejectedFile(source.uri, f"cannot load: {duckdb_problem(exc)}") from None
        finally:
            con.unregister(view)
        return LoadResult(rows=len(rows))

    def _describe(self, source: Source, opts: CloudWatchLogsOptions) -> list[dict[str, Any]]:
        """DescribeLogGroups, every page, as rows stamped with the time of the call."""
        from botocore.exceptions import BotoCoreError, ClientError

        where = source.uri
        uri_region = source.uri[len("logs://") :].strip("/")
        region = source.region or opts.region or uri_region or None
        listed_at = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
        groups: list[Any] = []
        try:
            endpoint = source.endpoint_url or opts.endpoint_url
            client = s3mod.client_at(
                endpoint, region, retries=3, service="logs", answers=AnswerLimits.of(opts)
            )
            region = client.meta.region_name
            kwargs: dict[str, Any] = {"PaginationConfig": {"PageSize": opts.page_size}}
            if opts.prefix:
                kwargs["logGroupNamePrefix"] = opts.prefix
            for page in client.get_paginator("describe_log_groups").paginate(**kwargs):
                groups.extend(page.get("logGroups", []))
        except LimitHit as exc:  # a page too slow or too large: the source fails, its rows are kept
            raise SourceFailed(f"DescribeLogGroups: {exc}") from None
        except (BotoCoreError, ClientError) as exc:
            raise RejectedFile(where, f"DescribeLogGroups failed: {s3mod.problem(exc)}") from None
        return [group_row(g, where, i, region, listed_at) for i, g in enumerate(groups)]

    def _saved(self, source: Source, opts: CloudWatchLogsOptions, ctx: LoadContext) -> list[dict[str, Any]]:
        """Every saved listing of the source, each stamped with its own listing time."""
        try:
            s3 = s3mod.client(source) if source.is_s3 else None
            files = list_files(ctx.config, source, s3)
        except (S3Error, ValueError) as exc:
            raise RejectedFile(source.uri, str(exc)) from None
        if not files and not source.is_s3 and not Path(ctx.config.source_location(source)).exists():
            raise RejectedFile(ctx.config.source_location(source), "no such file or folder")
        region = source.region or opts.region
        rows: list[dict[str, Any]] = []
        try:
            for f in files:
                listed_at = listing_time(f.relative, f.modified_at, opts.listed_at)
                try:
                    local = fetch(f, s3)
                except S3Error as exc:
                    raise RejectedFile(f.uri, str(exc)) from None
                groups = read_listing(local, f.uri)
                rows.extend(group_row(g, f.uri, i, region, listed_at) for i, g in enumerate(groups))
        finally:
            if s3 is not None:
                clean_cache(source_cache(ctx.config, source))
        return rows
