"""sql/marts/storage_prefix_days.sql on DuckDB with small storage_objects / storage_snapshots tables: the bytes
of each bucket per inventory date, prefix (three folders at most) and class, from the day's last snapshot."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.transform.build import build_mart
from pipelines.warehouse import rows
from tests.helpers.empty_warehouse import open_copy


def _snapshot(con: duckdb.DuckDBPyConnection, fid: str, bucket: str, at: datetime, store: str = "s3") -> None:
    con.execute(
        "insert into storage_snapshots values ($f, 'src', 's3_inventory', $store, $b, $d, $at, null, $b, $f, 0, $at)",
        {"f": fid, "store": store, "b": bucket, "d": at.date(), "at": at},
    )


def _object(con: duckdb.DuckDBPyConnection, fid: str, bucket: str, key: str, size: int, **extra: Any) -> None:
    day = con.execute(
        "select inventory_date from storage_snapshots where x_file_id = $f", {"f": fid}
    ).fetchall()
    con.execute(
        "insert into storage_objects (inventory_date, bucket, key, size_bytes, storage_class, is_delete_marker, "
        "x_file_id) values ($d, $b, $k, $s, $c, $m, $f)",
        {
            "d": day[0][0],
            "b": bucket,
            "k": key,
            "s": size,
            "c": extra.get("storage_class", "STANDARD"),
            "m": extra.get("delete_marker", False),
            "f": fid,
        },
    )


@pytest.fixture
def con(empty_marts: Path, tmp_path: Path) -> duckdb.DuckDBPyConnection:
    return open_copy(empty_marts, tmp_path / "w.duckdb")


def test_bytes_per_date_prefix_and_class_from_the_days_last_snapshot(con: duckdb.DuckDBPyConnection) -> None:
    _snapshot(con, "nov01", "ckpt", datetime(2026, 11, 1, 1))
    _snapshot(con, "nov29-early", "ckpt", datetime(2026, 11, 29, 1))
    _snapshot(con, "nov29-late", "ckpt", datetime(2026, 11, 29, 18))  # the day's last snapshot wins
    _object(con, "nov01", "ckpt", "vit/run-1/step-1/model.pt", 100)
    _object(con, "nov01", "ckpt", "vit/run-1/step-1/optim.pt", 50)
    _object(con, "nov01", "ckpt", "README", 7)  # at the top: prefix ''
    _object(con, "nov01", "ckpt", "vit/run-1/step-1/shard/a/b.bin", 9)  # deeper: cut to three folders
    _object(con, "nov01", "ckpt", "vit/run-1/step-1/model.pt", None, delete_marker=True)  # left out
    _object(con, "nov29-early", "ckpt", "vit/run-1/step-1/model.pt", 999)
    _object(con, "nov29-late", "ckpt", "vit/run-1/step-1/model.pt", 100)
    _object(con, "nov29-late", "ckpt", "vit/run-2/old.pt", 30, storage_class="GLACIER_IR")
    _snapshot(con, "scan", "/lustre/ckpt", datetime(2026, 11, 29, 2), store="fs")
    _object(con, "scan", "/lustre/ckpt", "a/b.pt", 5)
    build_mart(con, "storage_prefix_days")
    got = rows(
        con,
        "select inventory_date, store, bucket, prefix, uri_prefix, storage_class, bytes, objects "
        "from storage_prefix_days order by all",
    )
    assert got == [
        {"inventory_date": date(2026, 11, 1), "store": "s3", "bucket": "ckpt", "prefix": "",
         "uri_prefix": "s3://ckpt/", "storage_class": "STANDARD", "bytes": 7, "objects": 1},
        {"inventory_date": date(2026, 11, 1), "store": "s3", "bucket": "ckpt", "prefix": "vit/run-1/step-1/",
         "uri_prefix": "s3://ckpt/vit/run-1/step-1/", "storage_class": "STANDARD", "bytes": 159, "objects": 3},
        {"inventory_date": date(2026, 11, 29), "store": "fs", "bucket": "/lustre/ckpt", "prefix": "a/",
         "uri_prefix": "/lustre/ckpt/a/", "storage_class": "STANDARD", "bytes": 5, "objects": 1},
        {"inventory_date": date(2026, 11, 29), "store": "s3", "bucket": "ckpt", "prefix": "vit/run-1/step-1/",
         "uri_prefix": "s3://ckpt/vit/run-1/step-1/", "storage_class": "STANDARD", "bytes": 100, "objects": 1},
        {"inventory_date": date(2026, 11, 29), "store": "s3", "bucket": "ckpt", "prefix": "vit/run-2/",
         "uri_prefix": "s3://ckpt/vit/run-2/", "storage_class": "GLACIER_IR", "bytes": 30, "objects": 1},
    ]  # fmt: skip
