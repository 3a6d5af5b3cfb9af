"""The GPU roll-up (`int_gpu_slices`) on Spark for the days whose inputs changed: the nvidia-smi captures
read where they lie (pipelines/engines/spark/gpu_samples.py), other telemetry kinds' samples, the metrics
store's hours and the job boundaries handed over from the warehouse, sliced by
sql/spark/intermediate/int_gpu_slices.sql and written as Parquet that pipelines.transform inserts into the
warehouse's int_gpu_slices in the mart's transaction (then removes)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

import duckdb

from pipelines.config import Config
from pipelines.engines.spark import gpu_samples
from pipelines.engines.spark.bills import union
from pipelines.engines.spark.builds import Built, new_folder, remove_build, spark_path
from pipelines.engines.spark.session import get_session
from pipelines.errors import WarehouseError
from pipelines.warehouse import rows, sql_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ROLLUP = "int_gpu_slices"


@dataclass
class RolledUp:
    """A Spark roll-up of some days: the Parquet folder, and the fingerprint of each day's inputs it read."""

    folder: str
    days: dict[date, int]

    @property
    def parquet(self) -> str:
        return f"{self.folder}/*.parquet"


def build(con: duckdb.DuckDBPyConnection, config: Config, days: dict[date, int]) -> RolledUp:
    """Roll up `days` (day -> fingerprint of its inputs) on Spark, outside the warehouse's transaction."""
    assert config.spark is not None
    spark = get_session(config.spark)
    day_list = sorted(days)
    span = {"day_from": day_list[0], "day_to": day_list[-1]}
    file_days = rows(con, sql_text("spark/warehouse", "rollup_file_days"), {"days": day_list})
    captures: dict[str, gpu_samples.Capture] = {}
    for f in file_days:
        fid = str(f["file_id"])
        if f["kind"] in gpu_samples.KINDS and fid not in captures and gpu_samples.present(str(f["uri"])):
            captures[fid] = gpu_samples.plan(spark, config, str(f["uri"]), fid, str(f["source"]))
    frames = []
    if captures:
        read = _checkpointed(gpu_samples.read(spark, list(captures.values())))
        _check(read, [f for f in file_days if str(f["file_id"]) in captures])
        frames.append(read)
    # the other kinds' samples; with no capture to read, their frame (empty or not) gives the columns
    handed = _handed(spark, con, "rollup_samples", {"days": day_list, "read": list(captures)}, not frames)
    if handed is not None:
        frames.append(handed)
    union(frames).createOrReplaceTempView("samples")
    spark.createDataFrame([(d,) for d in day_list], "day date").createOrReplaceTempView("rollup_days")
    for view, sql, params in (
        ("hourly_stats", "rollup_hourly_stats", {"days": day_list}),
        ("job_boundaries", "rollup_job_boundaries", span),
        ("job_hosts", "rollup_job_hosts", span),
    ):
        _handed(spark, con, sql, params, empty_ok=True).createOrReplaceTempView(view)  # type: ignore[union-attr]
    folder = new_folder(config, ROLLUP)
    slices = spark.sql(sql_text("spark/intermediate", ROLLUP), args=span)
    slices.write.mode("errorifexists").parquet(spark_path(folder))
    return RolledUp(folder, dict(days))


def _checkpointed(df: DataFrame) -> DataFrame:
    """The samples read once and kept (the check and the roll-up read them), or the reader's error with its
    path when Spark cannot read a file."""
    try:
        return df.localCheckpoint(eager=True)
    except Exception as exc:  # Py4JJavaError, or a Spark Connect error: the reader's message, with its path
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        reason = next((line for line in lines if re.search(r"\[[A-Z_.]+\]", line)), lines[0] if lines else "")
        raise WarehouseError(
            f"Spark could not read the telemetry files the warehouse holds: {reason[:2000]}; roll up with "
            "engine: duckdb (leave int_gpu_slices out of spark.marts)"
        ) from None


def _check(read: DataFrame, expected: list[dict[str, Any]]) -> None:
    """Each file's samples of each day as Spark read them, against the warehouse's (gpu_samples.check)."""
    from pyspark.sql import functions as F

    days = sorted({e["day"] for e in expected})
    got = (
        read.where(F.col("x_sample_date").isin(days))
        .groupBy("x_file_id", "x_sample_date")
        .agg(
            F.count(F.lit(1)).alias("samples"),
            F.sum(F.unix_micros(F.col("ts").cast("timestamp")).cast("decimal(38, 0)")).alias("ts_us"),
            F.count("util_pct").alias("util_n"),
            F.count("mem_used_mib").alias("mem_used_n"),
            F.count("mem_total_mib").alias("mem_total_n"),
            F.count("power_w").alias("power_n"),
        )
        .collect()
    )
    gpu_samples.check({(r["x_file_id"], r["x_sample_date"]): r.asDict() for r in got}, expected)


def _handed(
    spark: SparkSession,
    con: duckdb.DuckDBPyConnection,
    sql: str,
    params: dict[str, Any],
    empty_ok: bool = False,
) -> DataFrame | None:
    """The warehouse's rows of sql/spark/warehouse/<sql>.sql as a Spark frame (through Arrow), timestamps as
    the session's UTC wall time; None when there are none, unless `empty_ok`."""
    from pyspark.sql import functions as F

    table = con.sql(sql_text("spark/warehouse", sql), params=params).to_arrow_table()
    if table.num_rows == 0 and not empty_ok:
        return None
    if table.num_rows:
        df = spark.createDataFrame(table)
    else:  # pyspark cannot convert an Arrow table without chunks: the columns alone
        from pyspark.sql.pandas.types import from_arrow_schema

        df = spark.createDataFrame([], from_arrow_schema(table.schema))
    stamps = {f.name for f in table.schema if str(f.type).startswith("timestamp")}
    return df.select(
        *[(F.col(c).cast("timestamp_ntz") if c in stamps else F.col(c)).alias(c) for c in df.columns]
    )


def discard(rolled: RolledUp) -> None:
    """Remove the roll-up's Parquet (inserted into the warehouse, or not wanted)."""
    remove_build(Built(rolled.folder, 0))
