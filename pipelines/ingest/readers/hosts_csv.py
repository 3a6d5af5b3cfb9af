"""A hosts CSV (a CMDB export, a Slurm node list, a spreadsheet) -> inventory_hosts.

Columns, matched by name ignoring case (only `host` is required):
  host, instance_id, resource_id (the bill's id when it is not the instance id, e.g. an ARM path or a
  GCE global name), private_dns, private_ip, instance_type, provider, region_id, launched_at,
  terminated_at, tags (a JSON object).
Other columns become tags (normalised keys): a `team` column is tags['team']. The `columns` option maps
these names to the file's own (`{host: hostname, instance_id: aws_id}`); `provider` sets the provider of
rows without one; times without an offset are read in `timezone` (default UTC). A row without a host, a
time that cannot be read, or a tags value that is not a JSON object rejects the file naming its line and
column. The layout is HOSTS_CSV (pipelines/sources/mapped_csv.py); the reading is the shared mapped-CSV
reader's (mapped_csv.py); `columns:` is checked when the config loads.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb
import pyarrow as pa

from pipelines.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, duckdb_problem
from pipelines.ingest.readers.mapped_csv import MappedRows, Typed
from pipelines.sources.options import Options
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


class HostsCsvReader(MappedRows):
    def row(self, typed: Typed, opts: Options) -> dict[str, Any]:
        v = typed.values
        return {
            **{name: v.get(name) for name in SCHEMA.names[:-1]},
            "resource_id": v["resource_id"] or v["instance_id"],
            "tags_json": json.dumps(typed.tags) if typed.tags else None,
        }

    def insert(
        self,
        con: duckdb.DuckDBPyConnection,
        rows: list[dict[str, Any]],
        file: SourceFile,
        ctx: LoadContext,
        opts: Options,
    ) -> int:
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
        return len(rows)
