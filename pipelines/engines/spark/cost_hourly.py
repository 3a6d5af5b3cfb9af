"""cost_hourly's billed rows on Spark: the raw bill files the ledger holds, spread over their hours.

The warehouse says which files count (their lines are in billing_lines) and hands over the tag sets;
Spark reads the files where they lie (FOCUS CSV, CSV.gz or Parquet), types them as the staging SQL does,
spreads each line over its hours with the mart's arithmetic and writes the rows as Parquet partitioned by
month, in a build folder of its own (pipelines/engines/spark/builds.py).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import duckdb

from pipelines.config import Config
from pipelines.engines.spark.builds import Built, attach_view, new_folder, spark_path
from pipelines.engines.spark.session import get_session
from pipelines.errors import ConfigError, WarehouseError
from pipelines.warehouse import rows, sql_text

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

# the billing formats Spark reads so far, by the source kind that loaded them
READS = ("focus",)
# the columns the staging SQL reads, by the lower-case spellings FOCUS files use (1.3's renames too)
FOCUS_COLUMNS = {
    "billedcost": "billed_cost",
    "effectivecost": "effective_cost",
    "listcost": "list_cost",
    "billingcurrency": "billing_currency",
    "chargeperiodstart": "charge_period_start",
    "chargeperiodend": "charge_period_end",
    "chargecategory": "charge_category",
    "servicecategory": "service_category",
    "providername": "provider_name",
    "serviceprovidername": "provider_name",
    "subaccountid": "sub_account_id",
    "regionid": "region_id",
    "servicename": "service_name",
    "resourceid": "resource_id",
    "skupricedetails": "sku_price_details",
    "tags": "tags",
    "x_instancetype": "_x_instance_type",
    "x_instance_type": "_x_instance_type",
    "x_skuinstancetype": "_x_instance_type",
    "x_usagetype": "_x_usage_type",
    "x_usage_type": "_x_usage_type",
}
# what a FOCUS CSV writes for NULL (the FOCUS sample writes NULL), as the billing reader reads it
NULL_STRINGS = ("NULL", "null", "")
# what a text column of a FOCUS Parquet file writes for NULL, as the billing reader reads it (focus.py)
PARQUET_NULL_STRINGS = ("NULL", "")
CSV = re.compile(r"\.csv(\.gz)?$", re.IGNORECASE)
PARQUET = re.compile(r"\.parquet$", re.IGNORECASE)


def _read_focus_csv(spark: SparkSession, uri: str) -> DataFrame:
    """One FOCUS CSV(.gz) as text columns named as the staging SQL reads them (missing ones NULL)."""
    from pyspark.sql import functions as F

    # one file at a time: Spark takes the first file's header for every file it reads together, and
    # FOCUS exports differ in their columns' order
    df = (
        spark.read.option("header", True)
        .option("quote", '"')
        .option("escape", '"')
        .option("multiLine", True)
        .option("mode", "FAILFAST")
        .option("inferSchema", False)
        .csv(spark_path(uri))
    )
    picked: dict[str, str] = {}
    for name in df.columns:
        target = FOCUS_COLUMNS.get(name.strip().lower())
        if target and target not in picked:
            picked[target] = name
    wanted = dict.fromkeys(FOCUS_COLUMNS.values())

    def text(column: str) -> Column:
        # the texts the DuckDB reader takes for NULL (relation.NULL_STRINGS), quoted or not
        value = F.col(f"`{column}`")
        return F.when(value.isin(*NULL_STRINGS), None).otherwise(value)

    return df.select(
        *[text(picked[c]).alias(c) if c in picked else F.lit(None).cast("string").alias(c) for c in wanted],
        F.lit(uri).alias("_file"),
    )


def _read_focus_parquet(spark: SparkSession, uri: str) -> DataFrame:
    """One FOCUS Parquet file's columns in their own types, named as the staging SQL reads them, as the
    billing reader takes them: a MAP or STRUCT (tags, SKU price details) as its JSON text, text as it is
    (machine-written, not trimmed) with 'NULL' and '' as NULL."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType, StringType, StructType

    df = spark.read.parquet(spark_path(uri))
    types = {f.name: f.dataType for f in df.schema.fields}
    picked: dict[str, str] = {}
    for name in df.columns:
        target = FOCUS_COLUMNS.get(name.strip().lower())
        if target and target not in picked:
            picked[target] = name

    def column(name: str) -> Column:
        value = F.col(f"`{name}`")
        if isinstance(types[name], MapType | StructType):
            return F.to_json(value)
        if isinstance(types[name], StringType):
            return F.when(value.isin(*PARQUET_NULL_STRINGS), None).otherwise(value)
        return value

    wanted = dict.fromkeys(FOCUS_COLUMNS.values())
    return df.select(
        *[column(picked[c]).alias(c) if c in picked else F.lit(None).cast("string").alias(c) for c in wanted],
        F.lit(uri).alias("_file"),
    )


def _staged(spark: SparkSession, raw: DataFrame, currency: str) -> DataFrame:
    """The lines of `raw` typed by the staging SQL (each group of files is typed on its own: a CSV's text
    and a Parquet file's own types do not union before it)."""
    raw.createOrReplaceTempView("focus_raw")
    return spark.sql(sql_text("spark/staging", "focus_line_items"), args={"default_currency": currency})


def build_billed(con: duckdb.DuckDBPyConnection, config: Config) -> Built:
    """Compute cost_hourly's billed rows on Spark into a new folder under the marts folder."""
    assert config.spark is not None  # the config's validator requires it with engine: spark
    files = rows(con, sql_text("spark/warehouse", "billing_files"))
    other = [f for f in files if f["kind"] not in READS]
    if other:
        kinds = ", ".join(sorted({f"{f['source']} (kind {f['kind']})" for f in other}))
        raise ConfigError(
            f"engine: spark reads bills of kind {', '.join(READS)} only; the warehouse holds lines from {kinds}: "
            "set engine: duckdb for these"
        )
    unread = [f["uri"] for f in files if not CSV.search(f["uri"]) and not PARQUET.search(f["uri"])]
    if unread:
        raise ConfigError(f"engine: spark reads FOCUS CSV, CSV.gz and Parquet files, not {unread[0]}")
    spark = get_session(config.spark)
    from pyspark.sql.types import StringType, StructField, StructType

    tag_schema = StructType([StructField(c, StringType()) for c in ("raw", "team", "project", "owner")])
    tags = [tuple(r.values()) for r in rows(con, sql_text("spark/warehouse", "tag_sets"))]
    spark.createDataFrame(tags, tag_schema).createOrReplaceTempView("tag_sets")
    folder = new_folder(config, "cost_hourly")
    if not files:
        return Built(folder, 0)
    from pyspark.sql import functions as F

    text, typed = None, []
    for f in files:
        if PARQUET.search(f["uri"]):
            # each Parquet file on its own: two exports may type a column differently
            typed.append(_staged(spark, _read_focus_parquet(spark, f["uri"]), config.currency))
            continue
        df = _read_focus_csv(spark, f["uri"])
        text = df if text is None else text.unionByName(df)
    if text is not None:
        typed.append(_staged(spark, text, config.currency))
    staged = typed[0]
    for df in typed[1:]:
        staged = staged.unionByName(df)
    # each line's key, then materialised once: line_key (monotonically_increasing_id) must name the same line
    # in every place the mart's SQL reads `lines`, which a recomputed scan does not promise
    keyed = staged.select(F.monotonically_increasing_id().alias("line_key"), "*")
    keyed.localCheckpoint(eager=True).createOrReplaceTempView("lines")
    _check_file_totals(spark, files)
    billed = spark.sql(sql_text("spark/marts", "cost_hourly_billed"))
    billed.write.mode("errorifexists").partitionBy("month").parquet(spark_path(folder))
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
        if seen != landed:
            raise WarehouseError(
                f"{f['uri']}: Spark read {seen[0]:,} lines (billed {seen[1]}, effective {seen[2]}) but the "
                f"warehouse landed {landed[0]:,} (billed {landed[1]}, effective {landed[2]}) from it: the file "
                "changed since it was ingested; run `wastewatch ingest` and build the marts again"
            )


def attach(con: duckdb.DuckDBPyConnection, built: Built) -> None:
    """Point the warehouse's cost_hourly view at the build (inside the mart's transaction)."""
    attach_view(con, "cost_hourly", built, "*/*.parquet")
