"""FOCUS bills on Spark: CSV(.gz) files as text, Parquet files in their own types, with their columns named
as sql/spark/staging/focus_line_items.sql reads them, then typed by it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.transform.spark.bills import (
    NULL_STRINGS,
    PARQUET,
    Reading,
    decimal_of_double,
    pick,
    read_csv_text,
    read_parquet,
    stage_files,
    trim_spaces,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

# the columns the staging SQL reads, by the lower-case spellings FOCUS files use (1.3's renames too)
FOCUS_COLUMNS = {
    "billedcost": "billed_cost",
    "effectivecost": "effective_cost",
    "listcost": "list_cost",
    "billingcurrency": "billing_currency",
    "chargeperiodstart": "charge_period_start",
    "chargeperiodend": "charge_period_end",
    "billingperiodstart": "billing_period_start",
    "billingperiodend": "billing_period_end",
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
# what a text column of a FOCUS Parquet file writes for NULL, as the billing reader reads it (focus.py)
PARQUET_NULL_STRINGS = ("NULL", "")
# the columns the focus reader trims in a CSV (focus.TRIMMED, and the tags' text)
TRIMMED = ("billing_currency", "resource_id", "tags")
# the amounts the staging SQL casts to DECIMAL(38, 12)
MONEY = ("billed_cost", "effective_cost", "list_cost")
# the staging SQL's input columns, in order
WANTED = tuple(dict.fromkeys(FOCUS_COLUMNS.values()))


def _focus_name(name: str) -> str | None:
    return FOCUS_COLUMNS.get(name.strip().lower())


def _read_csv(spark: SparkSession, uri: str, delimiter: str | None) -> DataFrame:
    """One FOCUS CSV(.gz) as text columns named as the staging SQL reads them (missing ones NULL)."""
    from pyspark.sql import functions as F

    file = read_csv_text(spark, uri, delimiter)
    picked = pick(file.names, _focus_name)

    def text(column: str, target: str) -> Column:
        # the texts the DuckDB reader takes for NULL (relation.NULL_STRINGS), quoted or not; the columns it
        # trims in a CSV (focus.TRIMMED and the tags) trimmed as it trims them
        raw = file.column(column)
        value = F.when(raw.isin(*NULL_STRINGS), None).otherwise(raw)
        return F.nullif(trim_spaces(value), F.lit("")) if target in TRIMMED else value

    return file.df.select(
        *[
            text(picked[c], c).alias(c) if c in picked else F.lit(None).cast("string").alias(c)
            for c in WANTED
        ],
        F.lit(uri).alias("_file"),
    )


def _read_parquet(spark: SparkSession, uri: str) -> DataFrame:
    """One FOCUS Parquet file's columns in their own types, named as the staging SQL reads them, as the
    billing reader takes them: a MAP or STRUCT (tags, SKU price details) as its JSON text, text as it is
    (machine-written, not trimmed) with 'NULL' and '' as NULL."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType, MapType, StringType, StructType

    df = read_parquet(spark, uri)
    types = {f.name: f.dataType for f in df.schema.fields}
    picked = pick(df.columns, _focus_name)

    def column(name: str, target: str) -> Column:
        value = F.col(f"`{name}`")
        if isinstance(types[name], MapType | StructType):
            return F.to_json(value)
        if target in MONEY and isinstance(types[name], DoubleType | FloatType):
            return decimal_of_double(value)
        if isinstance(types[name], StringType):
            return F.when(value.isin(*PARQUET_NULL_STRINGS), None).otherwise(value)
        return value

    return df.select(
        *[
            column(picked[c], c).alias(c) if c in picked else F.lit(None).cast("string").alias(c)
            for c in WANTED
        ],
        F.lit(uri).alias("_file"),
    )


def stage(spark: SparkSession, uris: list[str], reading: Reading) -> DataFrame:
    """The files' lines typed by sql/spark/staging/focus_line_items.sql."""

    def read(uri: str) -> DataFrame:
        if PARQUET.search(uri):
            return _read_parquet(spark, uri)
        return _read_csv(spark, uri, reading.delimiters.get(uri))

    return stage_files(spark, uris, read, "focus_raw", "focus_line_items", reading)
