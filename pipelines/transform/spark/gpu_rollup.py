"""The GPU roll-up (`int_gpu_slices`) on Spark for the days whose inputs changed: the nvidia-smi captures
read where they lie (pipelines/transform/spark/gpu_samples.py), other telemetry kinds' samples, the metrics
store's hours and the job boundaries handed over from the warehouse (as Parquet: handover.py), sliced by
sql/spark/intermediate/int_gpu_slices.sql and written as Parquet that pipelines.transform inserts into the
warehouse's int_gpu_slices in the mart's transaction (then removes)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from pipelines.config import Config
from pipelines.errors import WarehouseError
from pipelines.transform.spark import gpu_samples
from pipelines.transform.spark.bills import union
from pipelines.transform.spark.builds import Built, new_folder, remove_build, spark_path
from pipelines.transform.spark.handover import Handover
from pipelines.transform.spark.session import get_session, spark_reason
from pipelines.warehouse import rows, sql_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation, SparkSession

ROLLUP = "int_gpu_slices"
T = TypeVar("T")


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
    spark_span = {k: d.isoformat() for k, d in span.items()}  # dates as text (py4j and years before 1000)
    file_days = rows(con, sql_text("spark/warehouse", "rollup_file_days"), {"days": day_list})
    captures: dict[str, gpu_samples.Capture] = {}
    for f in file_days:
        fid = str(f["file_id"])
        if f["kind"] in gpu_samples.KINDS and fid not in captures and gpu_samples.present(str(f["uri"])):
            captures[fid] = gpu_samples.plan(spark, config, str(f["uri"]), fid, str(f["source"]))
    frames = []
    expected = [f for f in file_days if str(f["file_id"]) in captures]
    observation = None
    if captures:
        read = _readable(lambda: gpu_samples.read(spark, list(captures.values())))
        observation, observed = _observed(spark, read, day_list, expected)
        frames.append(observed)
    with Handover(spark, con, config) as hand:
        # the other kinds' samples; with no capture to read, their frame (empty or not) gives the columns
        others = hand.rows("rollup_samples", {"days": day_list, "read": list(captures)}, not frames)
        if others is not None:
            frames.append(others)
        union(frames).createOrReplaceTempView("samples")
        spark.createDataFrame([(d,) for d in day_list], "day date").createOrReplaceTempView("rollup_days")
        for view, sql, params in (
            ("hourly_stats", "rollup_hourly_stats", {"days": day_list}),
            ("job_boundaries", "rollup_job_boundaries", span),
            ("job_hosts", "rollup_job_hosts", span),
        ):
            hand.rows(sql, params, empty_ok=True).createOrReplaceTempView(view)  # type: ignore[union-attr]
        folder = new_folder(config, ROLLUP)
        slices = spark.sql(sql_text("spark/intermediate", ROLLUP), args=spark_span)
        try:
            _readable(lambda: slices.write.mode("error").parquet(spark_path(folder)))
            sums = observation.get if observation is not None else None
            if sums == {}:
                # Spark Connect returns no observed metrics for a write: the captures are read again, file by file
                _readable(lambda: _check(read, expected))
            elif sums is not None and _totals(sums) != _totals(_expected(expected)):
                # what Spark read differs from the warehouse: read again, file by file, to name the file
                _readable(lambda: _check(read, expected))
                raise WarehouseError(
                    "Spark read the telemetry captures otherwise than the warehouse holds them; roll up with "
                    "engine: duckdb (leave int_gpu_slices out of spark.marts)"
                )
        except BaseException:
            remove_build(Built(folder, 0))  # what a failed write left
            raise
    return RolledUp(folder, dict(days))


# the captures' samples of the days rolled up, summed as the roll-up reads them (one read, not two): each
# file's samples weighted by a number of its own, so that files cannot make up for each other's differences
# (their times modulo a prime, so the sums stay in a BIGINT)
PRIME = 2_147_483_647
OBSERVED = (
    "samples", "weighted", "ts_mod", "index_sum", "index_n", "util_n", "mem_util_n", "mem_used_n", "mem_total_n",
    "power_n", "power_limit_n",
)  # fmt: skip
# the figures counted where a sample has them, and the column each counts
FIGURES = {
    "index_n": "gpu_index", "util_n": "util_pct", "mem_util_n": "mem_util_pct", "mem_used_n": "mem_used_mib",
    "mem_total_n": "mem_total_mib", "power_n": "power_w", "power_limit_n": "power_limit_w",
}  # fmt: skip


def _weight(file_id: str) -> int:
    return int(hashlib.sha1(file_id.encode()).hexdigest()[:5], 16) + 1  # 1 to 2^20


def _observed(
    spark: SparkSession, read: DataFrame, days: list[date], expected: list[dict[str, Any]]
) -> tuple[Observation, DataFrame]:
    """The captures' samples of `days`, with an Observation summing them as the roll-up reads them."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    ids = sorted({str(e["file_id"]) for e in expected})
    weights = spark.createDataFrame([(i, _weight(i)) for i in ids], "x_file_id string, _w bigint")
    micros = F.unix_micros(F.col("ts").cast("timestamp")) - F.unix_micros(
        F.col("x_sample_date").cast("timestamp")
    )
    w = F.col("_w")
    observation = Observation("wastewatch_rollup_read")
    observed = (
        # dates as text: py4j writes a date before year 1000 as `26-11-30`, which Java cannot read back
        read.where(F.col("x_sample_date").cast("string").isin([d.isoformat() for d in days]))
        .join(F.broadcast(weights), "x_file_id", "left")
        .observe(
            observation,
            F.count(F.lit(1)).alias("samples"),
            F.sum(w).alias("weighted"),
            F.sum((w * micros) % F.lit(PRIME)).alias("ts_mod"),
            F.sum(w * F.col("gpu_index")).alias("index_sum"),
            *[F.sum(F.when(F.col(c).isNotNull(), w)).alias(n) for n, c in FIGURES.items()],
        )
        .drop("_w")
    )
    return observation, observed


def _expected(expected: list[dict[str, Any]]) -> dict[str, int]:
    """What the observation must sum to, from the warehouse's rows of each file and day."""
    out = dict.fromkeys(OBSERVED, 0)
    for e in expected:
        w = _weight(str(e["file_id"]))
        out["samples"] += int(e["samples"])
        out["weighted"] += w * int(e["samples"])
        out["ts_mod"] += w * int(e["ts_us"])
        out["index_sum"] += w * int(e["index_sum"])
        for n in FIGURES:
            out[n] += w * int(e[n])
    return out


def _totals(sums: dict[str, Any]) -> dict[str, int]:
    """The sums compared: NULL (no rows) as 0, the times modulo the prime."""
    out = {n: int(sums.get(n) or 0) for n in OBSERVED}
    out["ts_mod"] %= PRIME
    return out


def _readable(action: Callable[[], T]) -> T:
    """Run a Spark step over the captures; when it fails (a file Spark cannot find or read, a function the
    platform forbids), fail with Spark's reason (a file's path is in it)."""
    try:
        return action()
    except WarehouseError:
        raise
    except Exception as exc:  # Py4JJavaError, or a Spark Connect error
        raise WarehouseError(
            f"Spark could not roll up the telemetry the warehouse holds: {spark_reason(exc)}; roll up with "
            "engine: duckdb (leave int_gpu_slices out of spark.marts)"
        ) from None


def _check(read: DataFrame, expected: list[dict[str, Any]]) -> None:
    """Each file's samples of each day as Spark read them, against the warehouse's (gpu_samples.check)."""
    from pyspark.sql import functions as F

    days = sorted({e["day"] for e in expected})
    got = (
        # dates as text: py4j writes a date before year 1000 as `26-11-30`, which Java cannot read back
        read.where(F.col("x_sample_date").cast("string").isin([d.isoformat() for d in days]))
        .groupBy("x_file_id", "x_sample_date")
        .agg(
            F.count(F.lit(1)).alias("samples"),
            # microseconds after midnight: a day's sum fits a BIGINT for 10^8 samples (a DECIMAL sum is slow)
            F.sum(
                F.unix_micros(F.col("ts").cast("timestamp"))
                - F.unix_micros(F.col("x_sample_date").cast("timestamp"))
            ).alias("ts_us"),
            F.coalesce(F.sum("gpu_index"), F.lit(0)).alias("index_sum"),
            *[F.count(c).alias(n) for n, c in FIGURES.items()],
        )
        .collect()
    )
    gpu_samples.check({(r["x_file_id"], r["x_sample_date"]): r.asDict() for r in got}, expected)


def discard(rolled: RolledUp) -> None:
    """Remove the roll-up's Parquet (inserted into the warehouse, or not wanted)."""
    remove_build(Built(rolled.folder, 0))
