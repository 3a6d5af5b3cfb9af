"""EC2 DescribeInstances (boto3, paginated) -> inventory_hosts: which host is which instance.

A whole-source reader: every run lists the instances again and replaces the source's previous rows (one
ledger row per source). Configure it as

    - {name: ec2-prod, kind: ec2_instances, uri: "ec2://us-east-1", options: {filters: {instance-type: [p5.48xlarge]}}}

The region is the source's `region`, else the `region` option, else the uri's `ec2://<region>`, else
boto3's default; `endpoint_url` (source field or option) points at another endpoint (tests use moto's
server). Credentials come from boto3's usual chain (environment, profile, instance role). Options:
`filters` ({Name: [values]} or DescribeInstances' own [{Name, Values}] list), `page_size` (default 1000),
`states` (instance states to keep, e.g. [running, stopped]; default all: terminated instances are kept,
with terminated_at, because the bill still names them), `timeout` and `max_response_mb` (each page whole
within 60 s and at most 64 MB by default: a page that is not fails the source, naming the limit; its rows
are kept).

Per instance: instance id (also the bill's resource id), host = the first tag named in config
`tags.host` (hostname, Name, host by default), else the private DNS name, else the instance id;
private DNS and IP, instance type, region, launch time (UTC), termination time (from the state
transition reason of a terminated instance), and the tags (normalised keys, `state` added).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import duckdb
import pyarrow as pa

from pipelines.config import Source
from pipelines.errors import RejectedFile, SourceFailed
from pipelines.ingest.readers.base import LoadContext, LoadResult, SourceReader, duckdb_problem
from pipelines.ingest.readers.jobs_common import norm_keys
from pipelines.net import s3 as s3mod
from pipelines.net.limits import AnswerLimits, LimitHit
from pipelines.sources.options import Ec2InstancesOptions
from pipelines.warehouse import sql_text

SCHEMA = pa.schema(
    [
        ("host", pa.string()),
        ("instance_id", pa.string()),
        ("resource_id", pa.string()),
        ("private_dns", pa.string()),
        ("private_ip", pa.string()),
        ("instance_type", pa.string()),
        ("provider", pa.string()),
        ("region_id", pa.string()),
        ("launched_at", pa.timestamp("us")),
        ("terminated_at", pa.timestamp("us")),
        ("tags_json", pa.string()),
    ]
)

TERMINATED_AT = re.compile(r"\((\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) (?:GMT|UTC)\)")


def _utc(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def _filters(option: Any, where: str) -> list[dict[str, Any]]:
    if option is None:
        return []
    if isinstance(option, dict):
        return [
            {"Name": str(k), "Values": [str(v) for v in (vs if isinstance(vs, list) else [vs])]}
            for k, vs in option.items()
        ]
    if isinstance(option, list) and all(
        isinstance(f, dict) and "Name" in f and "Values" in f for f in option
    ):
        return option
    raise RejectedFile(where, "option `filters` must be {name: [values]} or a list of {Name, Values}")


class Ec2InstancesReader(SourceReader):
    def load_source(self, con: duckdb.DuckDBPyConnection, source: Source, ctx: LoadContext) -> LoadResult:
        from botocore.exceptions import BotoCoreError, ClientError

        where = source.uri
        opts = source.options_as(Ec2InstancesOptions)
        uri_region = source.uri[len("ec2://") :].strip("/") if source.uri.startswith("ec2://") else ""
        region = source.region or opts.region or uri_region or None
        endpoint = source.endpoint_url or opts.endpoint_url
        filters = _filters(opts.filters, where)
        states = set(opts.states or [])
        try:
            page_size = int(opts.page_size)
        except (TypeError, ValueError):
            raise RejectedFile(where, "option `page_size` must be a whole number") from None
        host_keys = norm_keys(con, ctx.config.tags["host"])
        instances: list[dict[str, Any]] = []
        try:
            client = s3mod.client_at(
                endpoint, region, retries=3, service="ec2", answers=AnswerLimits.of(opts)
            )
            region = client.meta.region_name
            pages = client.get_paginator("describe_instances").paginate(
                Filters=filters, PaginationConfig={"PageSize": page_size}
            )
            for page in pages:
                for reservation in page.get("Reservations", []):
                    instances.extend(reservation.get("Instances", []))
        except LimitHit as exc:  # a page too slow or too large: the source fails, its rows are kept
            raise SourceFailed(f"DescribeInstances: {exc}") from None
        except (BotoCoreError, ClientError) as exc:
            raise RejectedFile(where, f"DescribeInstances failed: {exc}") from None
        rows = []
        for inst in instances:
            state = (inst.get("State") or {}).get("Name")
            if states and state not in states:
                continue
            tags = {t["Key"]: t.get("Value", "") for t in inst.get("Tags") or [] if "Key" in t}
            by_norm = {re.sub(r"\s+", "_", k.strip().lower()): v for k, v in tags.items()}
            host = next((by_norm[k] for k in host_keys if by_norm.get(k)), None)
            terminated = None
            if state in ("terminated", "shutting-down"):
                m = TERMINATED_AT.search(inst.get("StateTransitionReason") or "")
                terminated = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S") if m else None
            rows.append(
                {
                    "host": host or inst.get("PrivateDnsName") or inst["InstanceId"],
                    "instance_id": inst["InstanceId"],
                    "resource_id": inst["InstanceId"],
                    "private_dns": inst.get("PrivateDnsName") or None,
                    "private_ip": inst.get("PrivateIpAddress"),
                    "instance_type": inst.get("InstanceType"),
                    "provider": "AWS",
                    "region_id": region,
                    "launched_at": _utc(inst.get("LaunchTime")),
                    "terminated_at": terminated,
                    "tags_json": json.dumps({**tags, "state": state} if state else tags),
                }
            )
        if not rows:
            return LoadResult(rows=0)
        view = f"_ec2_src_{ctx.file_id}"
        con.register(view, pa.Table.from_pylist(rows, schema=SCHEMA))
        try:
            con.execute(
                f"insert into inventory_hosts by name\nwith _src as (select * from {view})\nselect * from (\n"  # noqa: S608 - identifiers only
                f"{sql_text('staging', 'stg_ec2__inventory_hosts')}\n)",
                {"source_name": source.name, "source_file": source.uri, "file_id": ctx.file_id},
            )
        except duckdb.Error as exc:
            raise RejectedFile(where, f"cannot load: {duckdb_problem(exc)}") from None
        finally:
            con.unregister(view)
        return LoadResult(rows=len(rows))
