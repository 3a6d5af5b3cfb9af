"""The storage snapshots a whole-source storage reader loads (an inventory report, a listing, a scan)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from pipelines.config import Source


def loaded_snapshot(con: duckdb.DuckDBPyConnection, file_id: str) -> tuple[Any, ...] | None:
    """(checksum, rows) of a snapshot already loaded with this ledger id, if it is still kept."""
    result = con.execute(
        "select checksum, rows from ingest_files where file_id = $id and status = 'loaded' "
        "and exists (select 1 from storage_snapshots where x_file_id = $id)",
        {"id": file_id},
    ).fetchall()
    return result[0] if result else None


def replace_snapshot(
    con: duckdb.DuckDBPyConnection,
    *,
    file_id: str,
    source: Source,
    store: str,
    bucket: str,
    taken_at: datetime,
    region: str | None,
    resource_id: str | None,
    uri: str,
    now: datetime,
) -> None:
    """The storage_snapshots row of a snapshot whose objects were just written (its object count from them)."""
    con.execute("delete from storage_snapshots where x_file_id = $id", {"id": file_id})
    con.execute(
        """
        insert into storage_snapshots
        select $id, $source, $kind, $store, $bucket, $at::date, $at, $region, $resource, $uri,
            (select count(*) from storage_objects where x_file_id = $id), $now
        """,
        {
            "id": file_id,
            "source": source.name,
            "kind": source.kind,
            "store": store,
            "bucket": bucket,
            "at": taken_at,
            "region": region,
            "resource": resource_id,
            "uri": uri,
            "now": now,
        },
    )
