"""storage_dataset_matches on Spark: the duplicate candidates, from the Parquet Spark wrote for
storage_objects_current.

The self-join of every dataset file with every other dataset's is the heavy part of the storage marts;
Spark runs it over storage_objects_current's build (the one the warehouse's view reads), with the bucket
prices handed over from the warehouse (storage_prices, a small DuckDB mart), and writes the pairs as
Parquet partitioned by the first dataset's bucket, in a build folder of its own.
"""

from __future__ import annotations

import duckdb

from pipelines.config import Config
from pipelines.errors import ConfigError
from pipelines.transform.spark import storage_objects
from pipelines.transform.spark.builds import Built, attach_view, attached_folder, new_folder, spark_path
from pipelines.transform.spark.session import get_session
from pipelines.warehouse import rows, sql_text

MART = "storage_dataset_matches"


def build(con: duckdb.DuckDBPyConnection, config: Config) -> Built:
    """Compute storage_dataset_matches on Spark into a new folder under the marts folder."""
    assert config.spark is not None  # the config's validator requires it with engine: spark
    folder = new_folder(config, MART)
    kind, objects = attached_folder(con, storage_objects.MART)
    if kind == "table":
        raise ConfigError(
            f"{MART} runs on Spark over the Parquet of {storage_objects.MART}, which DuckDB built: build "
            f"{storage_objects.MART} on Spark first (it is in spark.marts with {MART})"
        )
    if objects is None:  # no object to match: the empty view
        return Built(folder, 0)
    spark = get_session(config.spark)
    from pyspark.sql import functions as F
    from pyspark.sql.types import DecimalType, StringType, StructField, StructType

    spark.read.parquet(spark_path(objects)).drop("bucket_part").createOrReplaceTempView(storage_objects.MART)
    text = StringType()
    price_schema = StructType(
        [
            StructField("store", text),
            StructField("bucket", text),
            StructField("storage_class", text),
            StructField("price_per_gb_month", DecimalType(28, 12)),
            StructField("currency", text),
            StructField("price_source", text),
        ]
    )
    prices = [tuple(r.values()) for r in rows(con, sql_text("spark/warehouse", "storage_prices"))]
    spark.createDataFrame(prices, price_schema).createOrReplaceTempView("storage_prices")
    # the mart's own SQL (it is written in SQL both engines run), partitioned by the first dataset's bucket
    mart = spark.sql(sql_text("marts", MART)).withColumn("bucket_part", F.col("bucket"))
    mart.write.mode("error").partitionBy("bucket_part").parquet(spark_path(folder))
    # with the schema given, a build of no rows (no two datasets share content) reads as empty
    n = spark.read.schema(mart.schema).parquet(spark_path(folder)).count()
    return Built(folder, n)


def attach(con: duckdb.DuckDBPyConnection, built: Built) -> None:
    """Point the warehouse's storage_dataset_matches view at the build (inside the mart's transaction)."""
    attach_view(con, MART, built, "*/*.parquet")
