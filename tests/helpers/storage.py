"""Helpers for the storage tests: S3 Inventory reports written the way S3 delivers them, projects."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import shutil
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import Config, load_config
from pipelines.ingest import IngestReport, ingest
from pipelines.marts.registry import MARTS
from pipelines.warehouse import rows
from rules import ALL_RULES
from tests.helpers.config import write_config
from tests.helpers.marts import build_only
from tests.helpers.paths import FIXTURES

INVENTORY_FIXTURE = FIXTURES / "storage" / "inventory"
# storage_objects with its snapshot's attributes (store, time, region, billing resource, source)
OBJECTS = (
    "(select o.*, s.store, s.inventory_at, s.region_id, s.resource_id, s.source, s.kind "
    "from storage_objects as o join storage_snapshots as s using (x_file_id))"
)
SHORT_SCHEMA = "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass, IsMultipartUploaded"
GIB = 1024**3


def write_report(
    root: Path,
    bucket: str,
    stamp: str,
    objects: list[dict[str, Any]],
    config_id: str = "daily",
    schema: str = SHORT_SCHEMA,
    raw_lines: list[str] | None = None,
    dest_prefix: str = "",
) -> Path:
    """An S3 Inventory report (CSV.gz, keys URL-encoded, every field quoted, no header) under `root`:
    `<bucket>/<config_id>/<stamp>/manifest.json` + `<bucket>/<config_id>/data/<name>.csv.gz`.

    `objects` are dicts with key, size, modified (datetime), etag, storage_class; `raw_lines` replaces the
    CSV body verbatim (for broken files). Returns the manifest's path.
    """
    base = root / bucket / config_id
    (base / "data").mkdir(parents=True, exist_ok=True)
    if raw_lines is None:
        buf = io.StringIO()
        w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
        for o in objects:
            etag = o.get("etag", hashlib.md5(o["key"].encode()).hexdigest())  # noqa: S324 - a fake ETag
            w.writerow(
                [
                    bucket,
                    urllib.parse.quote_plus(o["key"], safe="/"),
                    o["size"],
                    o.get("modified", datetime(2026, 9, 1)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                    etag,
                    o.get("storage_class", "STANDARD"),
                    "true" if "-" in etag else "false",
                ]
            )
        body = buf.getvalue()
    else:
        body = "".join(line + "\n" for line in raw_lines)
    name = hashlib.md5(f"{bucket}{stamp}".encode()).hexdigest() + ".csv.gz"  # noqa: S324 - a file name
    (base / "data" / name).write_bytes(gzip.compress(body.encode("utf-8"), mtime=0))
    return _write_manifest(
        base, bucket, stamp, "CSV", schema, [f"{dest_prefix}{bucket}/{config_id}/data/{name}"]
    )


def _write_manifest(base: Path, bucket: str, stamp: str, fmt: str, schema: str, keys: list[str]) -> Path:
    """`<base>/<stamp>/manifest.json` listing the data files `keys` (under `base`'s data/ folder, by name) with
    their sizes and MD5s, as S3 Inventory publishes them."""
    files = []
    for key in keys:
        blob = (base / "data" / key.rsplit("/", 1)[-1]).read_bytes()
        md5 = hashlib.md5(blob).hexdigest()  # noqa: S324 - what S3 Inventory publishes
        files.append({"key": key, "size": len(blob), "MD5checksum": md5})
    when = datetime.strptime(stamp, "%Y-%m-%dT%H-%MZ").replace(tzinfo=UTC)
    manifest = {
        "sourceBucket": bucket,
        "destinationBucket": "arn:aws:s3:::acme-inventory",
        "version": "2016-11-30",
        "creationTimestamp": str(int(when.timestamp() * 1000)),
        "fileFormat": fmt,
        "fileSchema": schema,
        "files": files,
    }
    folder = base / stamp
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return folder / "manifest.json"


# the columns of an S3 Inventory Parquet report as S3 names and types them (its fileSchema), the times as
# TIMESTAMP(MILLIS, true): UTC-adjusted
PARQUET_COLUMNS = {
    "bucket": "varchar",
    "key": "varchar",
    "version_id": "varchar",
    "is_latest": "boolean",
    "is_delete_marker": "boolean",
    "size": "bigint",
    "last_modified_date": "timestamptz",
    "e_tag": "varchar",
    "storage_class": "varchar",
    "is_multipart_uploaded": "boolean",
    "encryption_status": "varchar",
    "checksum_algorithm": "varchar",
}

# each column in the manifest's fileSchema (Parquet's message syntax, as S3 writes it)
PARQUET_SCHEMA = {
    c: {
        "varchar": "optional binary {} (STRING);",
        "boolean": "optional boolean {};",
        "bigint": "optional int64 {};",
        "timestamptz": "optional int64 {} (TIMESTAMP(MILLIS,true));",
    }[t]
    for c, t in PARQUET_COLUMNS.items()
}


def write_parquet_report(root: Path, bucket: str, stamp: str, files: list[list[dict[str, Any]]]) -> Path:
    """An S3 Inventory report in Parquet under `root`, laid out as write_report's: one data file per list of
    `files`, each row a dict of PARQUET_COLUMNS values (keys as written, not URL-encoded); a file takes the
    columns its first row names, in that order, so files of one report can differ (a column added to the
    configuration part way). A column may be given a `(value, type)` pair to write another type. Returns
    the manifest's path."""
    base = root / bucket / "daily"
    (base / "data").mkdir(parents=True, exist_ok=True)
    keys, fields = [], [c for c in PARQUET_COLUMNS if any(c in f[0] for f in files)]
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    for i, objects in enumerate(files):
        columns = list(objects[0])
        types = {c: v[1] if isinstance(v, tuple) else PARQUET_COLUMNS[c] for c, v in objects[0].items()}
        con.execute("create or replace table part (" + ", ".join(f'"{c}" {types[c]}' for c in columns) + ")")
        con.executemany(
            "insert into part values (" + ", ".join("?" for _ in columns) + ")",
            [[o[c][0] if isinstance(o[c], tuple) else o[c] for c in columns] for o in objects],
        )
        name = hashlib.md5(f"{bucket}{stamp}{i}".encode()).hexdigest() + ".parquet"  # noqa: S324 - a file name
        con.execute("copy part to $p (format parquet)", {"p": str(base / "data" / name)})
        keys.append(f"{bucket}/daily/data/{name}")
    con.close()
    schema = "message s3.inventory { " + " ".join(PARQUET_SCHEMA[f].format(f) for f in fields) + " }"
    return _write_manifest(base, bucket, stamp, "Parquet", schema, keys)


def copy_fixture_report(dst: Path) -> Path:
    """The committed acme-ckpt report (two dated reports of one configuration) under `dst`."""
    shutil.copytree(INVENTORY_FIXTURE, dst, dirs_exist_ok=True)
    return dst / "acme-ckpt" / "ckpt-daily"


def project(tmp: Path, sources: str, extra: str = "") -> Config:
    """A project folder with `sources:` (YAML lines, indented by 2) and optional more config."""
    write_config(tmp, "sources:\n" + sources + extra)
    return load_config(tmp / "wastewatch.yaml")


def run_ingest(con: duckdb.DuckDBPyConnection, config: Config) -> IngestReport:
    return ingest(con, config)


# the storage marts and what the storage rules (STO*, COST004) require
STORAGE_MARTS = tuple(
    m
    for m in MARTS
    if m.startswith("storage_")
    or any(m in r.requires for r in ALL_RULES if r.id.startswith("STO") or r.id == "COST004")
)


def build_storage_marts(con: duckdb.DuckDBPyConnection) -> None:
    """The storage marts, the marts the storage rules read and the marts those read (tests/helpers/marts.py),
    not the GPU and cost marts."""
    build_only(con, *STORAGE_MARTS)


def table(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None) -> list[dict]:
    return rows(con, sql, params)
