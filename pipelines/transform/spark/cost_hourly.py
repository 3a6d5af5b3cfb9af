"""cost_hourly's billed rows on Spark: the raw bill files the ledger holds, spread over their hours.

The warehouse says which files count (their lines are in billing_lines) and hands over the tag sets;
Spark reads the files where they lie (FOCUS or AWS CUR, CSV, CSV.gz or Parquet: bill_focus.py,
bill_cur.py) and types them as the staging SQL does. The lines of the other files (Azure and Google Cloud
exports, gzip named `.CSV.GZ`, a source with its own options.date_format) are handed over from the
warehouse as it typed them (as Parquet under the marts folder: handover.py). Spark spreads each line over
its hours with the mart's arithmetic and writes the rows as Parquet partitioned by month, in a build
folder of its own (pipelines/transform/spark/builds.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import duckdb

from pipelines.config import Config
from pipelines.errors import WarehouseError
from pipelines.transform.spark import bill_cur, bill_focus
from pipelines.transform.spark.bills import Reading, readable, union
from pipelines.transform.spark.builds import Built, attach_view, new_folder, spark_path
from pipelines.transform.spark.handover import Handover
from pipelines.transform.spark.session import get_session, spark_reason
from pipelines.warehouse import rows, sql_text

MART = "cost_hourly"

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# the billing formats Spark reads, by the source kind that loaded them: each module's stage() types them
FORMATS = {"focus": bill_focus, "aws_cur2": bill_cur, "aws_cur": bill_cur}


def _options(config: Config, source: str) -> dict[str, Any]:
    return next((dict(s.options) for s in config.sources if s.name == source), {})


def read_where_they_lie(config: Config, file: dict[str, Any]) -> bool:
    """Whether Spark reads a billing file itself: a format it has a reader for (FOCUS, AWS CUR), in a
    packing it opens (CSV, CSV.gz, Parquet), from a source whose dates are the format's documented forms
    (its own `options.date_format` is strftime's, which Spark's casts do not read)."""
    return (
        file["kind"] in FORMATS
        and readable(file["uri"])
        and not _options(config, file["source"]).get("date_format")
    )


def _reading(config: Config, files: list[dict[str, Any]]) -> Reading:
    """What Spark needs to read the files as the billing reader did, from their sources' options."""
    delimiters = {}
    for f in files:
        delimiter = _options(config, f["source"]).get("delimiter")
        if delimiter:
            delimiters[f["uri"]] = delimiter
    return Reading(config.currency, delimiters)


def build(con: duckdb.DuckDBPyConnection, config: Config) -> Built:
    """Compute cost_hourly's billed rows on Spark into a new folder under the marts folder."""
    assert config.spark is not None  # the config's validator requires it with engine: spark
    files = rows(con, sql_text("spark/warehouse", "billing_files"))
    where = {f["file_id"]: read_where_they_lie(config, f) for f in files}
    read = [f for f in files if where[f["file_id"]]]
    handed_ids = [str(f["file_id"]) for f in files if not where[f["file_id"]]]
    reading = _reading(config, read)
    spark = get_session(config.spark)
    from pyspark.sql.types import StringType, StructField, StructType

    tag_schema = StructType([StructField(c, StringType()) for c in ("raw", "team", "project", "owner")])
    tags = [tuple(r.values()) for r in rows(con, sql_text("spark/warehouse", "tag_sets"))]
    spark.createDataFrame(tags, tag_schema).createOrReplaceTempView("tag_sets")
    folder = new_folder(config, MART)
    if not files:
        return Built(folder, 0)
    from pyspark.sql import functions as F

    with Handover(spark, con, config) as hand:
        staged = []
        for module in dict.fromkeys(FORMATS.values()):
            uris = [f["uri"] for f in read if FORMATS[f["kind"]] is module]
            if uris:
                staged.append(module.stage(spark, uris, reading))
        if handed_ids:
            lines = hand.rows("billing_lines_handed", {"file_ids": handed_ids})
            if lines is not None:
                staged.append(lines)
        # each line's key, then materialised once: line_key (monotonically_increasing_id) must name the same
        # line in every place the mart's SQL reads `lines`, which a recomputed scan does not promise
        keyed = union(staged).select(F.monotonically_increasing_id().alias("line_key"), "*")
        try:
            keyed.localCheckpoint(eager=True).createOrReplaceTempView("lines")
        except Exception as exc:  # Py4JJavaError, or a Spark Connect error: the reader's message and path
            raise WarehouseError(
                f"Spark could not read the bill files the warehouse holds: {spark_reason(exc)}; build "
                "cost_hourly with engine: duckdb"
            ) from None
        _check_file_totals(spark, files)
        billed = spark.sql(sql_text("spark/marts", "cost_hourly_billed"))
        billed.write.mode("error").partitionBy("month").parquet(spark_path(folder))
    n = spark.read.parquet(spark_path(folder)).count()
    return Built(folder, n)


def _check_file_totals(spark: SparkSession, files: list[dict[str, Any]]) -> None:
    """Fail naming the first file whose lines or costs as Spark read them differ from what the ledger
    landed from it (the file changed where it lies since it was ingested)."""
    read = {r["source_file"]: r for r in spark.sql(sql_text("spark/checks", "file_totals")).collect()}
    for f in files:
        got = read.get(f["uri"])
        seen = (got["lines"], got["billed_cost"], got["effective_cost"]) if got else (0, None, None)
        landed = (f["rows"], f["billed_cost_sum"], f["effective_cost_sum"])
        if seen == landed and got and got["tags_unknown"]:
            raise WarehouseError(
                f"{f['uri']}: {got['tags_unknown']:,} lines whose tags, as Spark wrote them, no tag set of the "
                "warehouse holds: their team, project and owner would be lost; build cost_hourly with "
                "engine: duckdb and report this file's tag columns"
            )
        if seen != landed:
            raise WarehouseError(
                f"{f['uri']}: Spark read {seen[0]:,} lines (billed {seen[1]}, effective {seen[2]}) but the "
                f"warehouse landed {landed[0]:,} (billed {landed[1]}, effective {landed[2]}) from it: the file "
                "changed since it was ingested; run `wastewatch ingest` and build the marts again"
            )


def attach(con: duckdb.DuckDBPyConnection, built: Built) -> None:
    """Point the warehouse's cost_hourly view at the build, with the modelled hosts' rows the warehouse
    computes (inside the mart's transaction)."""
    con.execute(sql_text("spark/warehouse", "cost_hourly_modelled"))
    attach_view(con, MART, built, "*/*.parquet")
