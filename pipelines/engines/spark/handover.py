"""Rows the warehouse hands to Spark: what Spark has no reader for (other telemetry kinds' samples, the job
boundaries, bills of the formats Spark does not read where they lie), sent through Arrow in batches, so
the process never holds them all at once and a Spark Connect server receives them as a local client's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import duckdb

from pipelines.warehouse import sql_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# the rows sent to Spark in one Arrow batch: about 100 MB of a bill's lines
BATCH_ROWS = 500_000


def handed(
    spark: SparkSession,
    con: duckdb.DuckDBPyConnection,
    sql: str,
    params: dict[str, Any],
    empty_ok: bool = False,
) -> DataFrame | None:
    """The warehouse's rows of sql/spark/warehouse/<sql>.sql as a Spark frame, timestamps as the session's
    UTC wall time; None when there are none, unless `empty_ok`."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    reader = con.sql(sql_text("spark/warehouse", sql), params=params).to_arrow_reader(BATCH_ROWS)
    frames = [spark.createDataFrame(pa.Table.from_batches([b])) for b in reader if b.num_rows]
    if not frames and not empty_ok:
        return None
    if frames:
        df = frames[0]
        for more in frames[1:]:
            df = df.unionByName(more)
    else:  # pyspark cannot convert an Arrow table without rows: the columns alone
        from pyspark.sql.pandas.types import from_arrow_schema

        df = spark.createDataFrame([], from_arrow_schema(reader.schema))
    stamps = {f.name for f in reader.schema if str(f.type).startswith("timestamp")}
    return df.select(
        *[(F.col(c).cast("timestamp_ntz") if c in stamps else F.col(c)).alias(c) for c in df.columns]
    )
