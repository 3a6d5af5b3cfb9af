"""A hosts CSV (a CMDB export, a Slurm node list, a spreadsheet) -> inventory_hosts.

Columns, matched by name ignoring case (only `host` is required):
  host, instance_id, resource_id (the bill's id when it is not the instance id, e.g. an ARM path or a
  GCE global name), private_dns, private_ip, instance_type, provider, region_id, launched_at,
  terminated_at, tags (a JSON object).
Other columns become tags (normalised keys): a `team` column is tags['team']. The `columns` option maps
these names to the file's own (`{host: hostname, instance_id: aws_id}`); `provider` sets the provider of
rows without one; times without an offset are read in `timezone` (default UTC). A row without a host, a
time that cannot be read, or a tags value that is not a JSON object rejects the file naming its line and
column.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb
import pyarrow as pa

from pipelines.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, LoadResult, PerFileBatch, duckdb_problem
from pipelines.ingest.readers.jobs_common import ISO_HINT, parse_time, zone
from pipelines.sources.options import HostsCsvOptions
from pipelines.warehouse import sql_text

CANONICAL = (
    "host", "instance_id", "resource_id", "private_dns", "private_ip", "instance_type", "provider", "region_id",
    "launched_at", "terminated_at", "tags",
)  # fmt: skip
ALIASES = {
    "host": ("hostname", "node", "nodename", "name"),
    "instance_id": ("instanceid", "instance"),
    "instance_type": ("instancetype", "type", "machine_type", "vm_size"),
    "region_id": ("region",),
    "private_ip": ("ip", "ip_address"),
}
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


class HostsCsvReader(PerFileBatch):
    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        opts = ctx.source.options_as(HostsCsvOptions)
        tz = zone(ctx.source.name, file.uri, opts.timezone)
        mapping = opts.columns or {}
        if not isinstance(mapping, dict) or set(mapping) - set(CANONICAL):
            raise RejectedFile(
                file.uri,
                f"source {ctx.source.name!r}: `columns` maps these names to the file's: {list(CANONICAL)}",
            )
        if file.size == 0:
            raise RejectedFile(file.uri, "file is empty (0 bytes)")
        try:
            cur = con.execute(
                "select * from read_csv($p, header = true, all_varchar = true, null_padding = true)",
                {"p": str(file.local_path)},
            )
            header = [d[0] for d in cur.description]
            data = cur.fetchall()
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot read: {duckdb_problem(exc)}") from None
        by_lower = {h.lower().strip(): i for i, h in enumerate(header)}
        where: dict[str, int] = {}
        for canon in CANONICAL:
            wanted = mapping.get(canon)
            if wanted is not None:
                if str(wanted).lower().strip() not in by_lower:
                    raise RejectedFile(
                        file.uri,
                        f"column {wanted!r} (options.columns.{canon}) is not in the header {header}",
                        line=1,
                    )
                where[canon] = by_lower[str(wanted).lower().strip()]
                continue
            for name in (canon, *ALIASES.get(canon, ())):
                if name in by_lower and by_lower[name] not in where.values():
                    where[canon] = by_lower[name]
                    break
        if "host" not in where:
            raise RejectedFile(
                file.uri, f"no host column in the header {header} (see options.columns)", line=1
            )
        used = set(where.values())
        rows: list[dict[str, Any]] = []
        for n, values in enumerate(data):
            line = n + 2

            def get(canon: str, values: tuple[Any, ...] = values) -> str | None:
                i = where.get(canon)
                v = values[i] if i is not None else None
                return v.strip() if isinstance(v, str) and v.strip() else None

            host = get("host")
            if host is None:
                raise RejectedFile(file.uri, "empty host", line=line, column=header[where["host"]])
            times: dict[str, Any] = {}
            for canon in ("launched_at", "terminated_at"):
                try:
                    times[canon] = parse_time(get(canon), tz)
                except ValueError:
                    raise RejectedFile(
                        file.uri,
                        f"expected {ISO_HINT}, found {get(canon)!r}",
                        line=line,
                        column=header[where[canon]],
                    ) from None
            tags: dict[str, str] = {}
            if get("tags"):
                try:
                    parsed = json.loads(get("tags") or "")
                except json.JSONDecodeError as exc:
                    raise RejectedFile(
                        file.uri, f"tags is not JSON: {exc.msg}", line=line, column=header[where["tags"]]
                    ) from None
                if not isinstance(parsed, dict):
                    raise RejectedFile(
                        file.uri, "tags is not a JSON object", line=line, column=header[where["tags"]]
                    )
                tags.update({str(k): str(v) for k, v in parsed.items() if v is not None})
            for i, h in enumerate(header):
                if i not in used and isinstance(values[i], str) and values[i].strip():
                    tags.setdefault(h, values[i].strip())
            rows.append(
                {
                    "host": host,
                    "instance_id": get("instance_id"),
                    "resource_id": get("resource_id") or get("instance_id"),
                    "private_dns": get("private_dns"),
                    "private_ip": get("private_ip"),
                    "instance_type": get("instance_type"),
                    "provider": get("provider") or opts.provider,
                    "region_id": get("region_id"),
                    **times,
                    "tags_json": json.dumps(tags) if tags else None,
                }
            )
        if not rows:
            return LoadResult(rows=0)
        view = f"_hosts_src_{ctx.file_id}"
        con.register(view, pa.Table.from_pylist(rows, schema=SCHEMA))
        try:
            con.execute(
                f"insert into inventory_hosts by name\nwith _src as (select * from {view})\nselect * from (\n"  # noqa: S608 - identifiers only
                f"{sql_text('staging', 'stg_hosts__inventory_hosts')}\n)",
                {"source_name": ctx.source.name, "source_file": file.uri, "file_id": ctx.file_id},
            )
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot load: {duckdb_problem(exc)}") from None
        finally:
            con.unregister(view)
        return LoadResult(rows=len(rows))
