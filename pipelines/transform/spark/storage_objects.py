"""storage_objects_current on Spark: each bucket's newest inventory report, read where it lies, with lineage.

The warehouse says which snapshot of each bucket counts (the newest, as the DuckDB mart takes it) and hands
over the snapshots' attributes and the `checkpoints:` / `datasets:` patterns; Spark reads each report's
manifest and data files where they lie (CSV or Parquet), types the objects as the s3_inventory reader does,
matches their paths against the patterns with the mart's logic and writes the rows as Parquet partitioned by
bucket, in a build folder of its own (pipelines/transform/spark/builds.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from pipelines.config import Config
from pipelines.errors import ConfigError, WarehouseError
from pipelines.sources.inventory_format import (
    FIELDS,
    destination_bucket,
    local_data_file,
    norm,
    schema_fields,
)
from pipelines.transform.spark.builds import Built, attach_view, new_folder, spark_path
from pipelines.transform.spark.handover import Handover
from pipelines.transform.spark.session import get_session, sql_over
from pipelines.warehouse import rows, sql_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MART = "storage_objects_current"
# the snapshot kinds Spark reads from their report files where they lie
READS = ("s3_inventory",)
# the kinds whose objects the warehouse hands over: a listing or a scan lists the objects itself, so its
# rows in the warehouse are the snapshot (no file to read)
HANDED_OVER = ("s3_listing", "fs_scan")
# storage_objects' columns an inventory report can carry, as the reader names them (raw_<column>)
COLUMNS = tuple(dict.fromkeys(FIELDS.values()))


@dataclass
class Report:
    """An inventory report as Spark reads it: its manifest's uri, format, fields and data files."""

    uri: str
    fmt: str
    fields: list[str]
    files: list[str]


def build(con: duckdb.DuckDBPyConnection, config: Config) -> Built:
    """Compute storage_objects_current on Spark into a new folder under the marts folder."""
    assert config.spark is not None  # the config's validator requires it with engine: spark
    snapshots = rows(con, sql_text("spark/warehouse", "storage_snapshots"))
    other = [s for s in snapshots if s["kind"] not in READS + HANDED_OVER]
    if other:
        taken = ", ".join(sorted({f"{s['source']} (kind {s['kind']})" for s in other}))
        raise ConfigError(
            f"engine: spark reads storage snapshots of kind {', '.join(READS + HANDED_OVER)} only; the newest "
            f"snapshot of a bucket comes from {taken}: remove {MART} from spark.marts and DuckDB builds it"
        )
    folder = new_folder(config, MART)
    if not snapshots:
        return Built(folder, 0)
    spark = get_session(config.spark)
    _hand_over(spark, con, snapshots)
    raw, typed = None, []
    for s in snapshots:
        if s["kind"] not in READS:
            continue
        report = _report(spark, s)
        if not report.files:  # a report of an empty bucket lists no data files (the reader loads none)
            continue
        if report.fmt == "parquet":
            typed.append(_parquet_objects(spark, report, s["x_file_id"]))
            continue
        df = _read_report(spark, report, s["x_file_id"])
        raw = df if raw is None else raw.unionByName(df)
    if raw is not None:
        raw.createOrReplaceTempView("inventory_raw")
        typed.append(spark.sql(sql_text("spark/staging", "s3_inventory_objects")))
    objects = None
    for df in typed:
        objects = df if objects is None else objects.unionByName(df)
    listed = [s["x_file_id"] for s in snapshots if s["kind"] in HANDED_OVER]
    with Handover(spark, con, config) as hand:
        if listed:
            handed = _listed_objects(hand, listed)
            objects = handed if objects is None else objects.unionByName(handed)
        if objects is None:
            _check_objects({}, snapshots)
            return Built(folder, 0)
        objects.createOrReplaceTempView("inventory_objects")
        read = spark.sql(sql_text("spark/checks", "snapshot_objects")).collect()
        _check_objects({r["x_file_id"]: r["objects"] for r in read}, snapshots)
        mart = spark.sql(sql_text("spark/marts", MART))
        mart.write.mode("error").partitionBy("bucket_part").parquet(spark_path(folder))
        schema = mart.schema  # while what the mart read is still there (Spark Connect analyses it anew)
    # with the schema given, a build of no rows (every object a delete marker) reads as empty
    n = spark.read.schema(schema).parquet(spark_path(folder)).count()
    return Built(folder, n)


def _hand_over(spark: SparkSession, con: duckdb.DuckDBPyConnection, snapshots: list[dict[str, Any]]) -> None:
    """The snapshots' attributes and the storage patterns, as the temporary views the mart's SQL reads."""
    from pyspark.sql.types import (
        ArrayType,
        BooleanType,
        DateType,
        IntegerType,
        StringType,
        StructField,
        StructType,
        TimestampNTZType,
    )

    text, number = StringType(), IntegerType()
    snapshot_schema = StructType(
        [
            StructField("x_file_id", text),
            StructField("store", text),
            StructField("inventory_date", DateType()),
            StructField("inventory_at", TimestampNTZType()),
            StructField("source", text),
            StructField("region_id", text),
            StructField("resource_id", text),
        ]
    )
    picked = [tuple(s[f.name] for f in snapshot_schema.fields) for s in snapshots]
    spark.createDataFrame(picked, snapshot_schema).createOrReplaceTempView("snapshots")
    segment = StructType(
        [StructField(c, text) for c in ("name", "lit_prefix", "lit_suffix")]
        + [StructField("exact", BooleanType())]
    )
    pattern_schema = StructType(
        [
            StructField("ord", number),
            StructField("kind", text),
            StructField("position", number),
            StructField("store", text),
            StructField("prefix", text),
            StructField("segments", ArrayType(segment)),
            StructField("open_ended", BooleanType()),
            *[StructField(c, number) for c in ("project_idx", "run_idx", "step_idx", "metric_idx")],
            StructField("metric_name", text),
            StructField("dataset_idx", number),
        ]
    )
    patterns = []
    for p in rows(con, sql_text("spark/warehouse", "storage_patterns")):
        p["segments"] = [tuple(s[f.name] for f in segment.fields) for s in p["segments"]]
        patterns.append(tuple(p[f.name] for f in pattern_schema.fields))
    spark.createDataFrame(patterns, pattern_schema).createOrReplaceTempView("storage_patterns")


def _report(spark: SparkSession, snapshot: dict[str, Any]) -> Report:
    """The snapshot's report from its manifest.json read where it lies; a manifest rewritten since the ingest
    fails the mart (the ledger holds the MD5 of the one it loaded)."""
    uri = snapshot["uri"]
    found = spark.read.format("binaryFile").load(spark_path(uri)).select("content").collect()
    data = bytes(found[0][0]) if found else b""
    md5 = hashlib.md5(data).hexdigest()  # noqa: S324 - the content fingerprint the ledger recorded
    if md5 != snapshot["checksum"]:
        raise WarehouseError(
            f"{uri}: the inventory manifest Spark read differs from the one the warehouse loaded (MD5 {md5}, "
            f"the ledger has {snapshot['checksum']}): run `wastewatch ingest` and build the marts again"
        )
    doc = json.loads(data.decode("utf-8-sig"))  # the reader parsed these very bytes when it loaded them
    fmt = str(doc["fileFormat"]).strip().lower()
    if fmt not in ("csv", "parquet"):  # the reader loads no other (ORC), so no warehouse holds one
        raise ConfigError(
            f"engine: spark reads CSV and Parquet inventory reports, not the {fmt} report {uri} "
            f"(source {snapshot['source']}): remove {MART} from spark.marts and DuckDB builds it"
        )
    keys = [str(f["key"]).lstrip("/") for f in doc["files"]]
    if uri.startswith("s3://"):
        bucket = destination_bucket(doc, uri[len("s3://") :].split("/", 1)[0])
        files = [f"s3a://{bucket}/{key}" for key in keys]
    else:
        files = []
        for key in keys:
            path, tried = local_data_file(Path(uri), key)
            if path is None:
                raise WarehouseError(
                    f"{uri}: data file {key!r} not found (looked under {tried[0]} and its parents): the report "
                    "changed since it was ingested; run `wastewatch ingest` and build the marts again"
                )
            files.append(str(path))
    return Report(uri, fmt, schema_fields(str(doc["fileSchema"])), files)


def _read_report(spark: SparkSession, m: Report, x_file_id: str) -> DataFrame:
    """A CSV report's data files as text columns named raw_<column> (missing fields and empty values NULL)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    # no header: the fields are the manifest's fileSchema, in order, read as text and typed by the staging SQL
    schema = StructType([StructField(f"c{i}", StringType()) for i in range(len(m.fields))])
    df = (
        spark.read.schema(schema)
        .option("header", False)
        .option("quote", '"')
        .option("escape", '"')
        .option("mode", "FAILFAST")
        .csv(m.files)
    )
    at: dict[str, int] = {}
    for i, name in enumerate(m.fields):
        column = FIELDS.get(norm(name))
        if column is not None and column not in at:
            at[column] = i

    def text(i: int) -> Any:
        # the DuckDB reader reads an empty field, quoted or not, as NULL
        value = F.col(f"c{i}")
        return F.when(value == "", None).otherwise(value)

    return df.select(
        *[(text(at[c]) if c in at else F.lit(None).cast("string")).alias(f"raw_{c}") for c in COLUMNS],
        F.lit(x_file_id).alias("x_file_id"),
    )


def _parquet_objects(spark: SparkSession, m: Report, x_file_id: str) -> DataFrame:
    """A Parquet report's objects, typed: its data files' own column names (they win over the manifest's
    fileSchema, as in the reader), merged across files, staged on their own (their types are the files')."""
    from pyspark.sql import functions as F

    df = spark.read.option("mergeSchema", True).parquet(*m.files)
    at: dict[str, str] = {}
    for name in df.columns:
        column = FIELDS.get(norm(name))
        if column is not None and column not in at:
            at[column] = name
    raw = df.select(
        *[
            (F.col(f"`{at[c]}`") if c in at else F.lit(None).cast("string")).alias(f"raw_{c}")
            for c in COLUMNS
        ],
        F.lit(x_file_id).alias("x_file_id"),
    )
    # each report under a view of its own: Spark Connect resolves the name when the mart is written
    return sql_over(
        spark, raw, "inventory_raw_parquet", sql_text("spark/staging", "s3_inventory_objects_parquet"), {}
    )


def _listed_objects(hand: Handover, ids: list[str]) -> DataFrame:
    """The warehouse's objects of these listings and scans, typed as the inventory reports' objects."""
    from pyspark.sql import functions as F

    df = hand.rows("listed_objects", {"ids": ids}, empty_ok=True)
    assert df is not None  # empty_ok: a frame of the columns when there are no objects
    types = {
        "is_latest": "boolean",
        "is_delete_marker": "boolean",
        "size_bytes": "bigint",
        "last_modified": "timestamp_ntz",  # the session runs in UTC: the warehouse's wall time as it is
        "is_multipart": "boolean",
    }
    return df.select(*[F.col(c).cast(types.get(c, "string")).alias(c) for c in df.columns])


def _check_objects(read: dict[str, int], snapshots: list[dict[str, Any]]) -> None:
    """Fail naming the first snapshot whose object count as Spark read it (`read`, by snapshot id) differs
    from what the ledger landed from it (its data files changed where they lie since the ingest)."""
    for s in snapshots:
        seen = read.get(s["x_file_id"], 0)
        if seen != s["objects"]:
            raise WarehouseError(
                f"{s['uri']}: Spark read {seen:,} objects from the inventory's data files but the warehouse "
                f"landed {s['objects']:,} from them: the report changed since it was ingested; run "
                "`wastewatch ingest` and build the marts again"
            )


def attach(con: duckdb.DuckDBPyConnection, built: Built) -> None:
    """Point the warehouse's storage_objects_current view at the build (inside the mart's transaction)."""
    attach_view(con, MART, built, "*/*.parquet")
