"""AWS Cost and Usage Reports on Spark (CUR 2.0 from Data Exports, and the legacy CUR): CSV(.gz) files as
text, Parquet files in their own types, with the columns sql/spark/staging/cur_line_items.sql reads
named as the billing reader names them (pipelines/ingest/billing/aws_cur.py: matched by name ignoring case
and separators, so `lineItem/UnblendedCost` and `line_item_unblended_cost` are one column), then typed by
it.

What the reader derives per line is derived here the same way: the promoted `product_*` column, else the
key of the `product` map (a MAP in Parquet, JSON text in CSV); the tags as the text the warehouse's tag
sets hold (a MAP's JSON, the CSV's JSON text, or a JSON object of the legacy `resourceTags/*` columns);
'' as no value where the reader reads it so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pipelines.catalog.mappings import service_catalog
from pipelines.sources.aws_cur import (
    ALIASES,
    EMPTY_IS_NULL,
    OPTIONAL_NUMBERS,
    PRODUCT_KEYS,
    split_glued_header,
    squash,
)
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

# the CUR columns the hourly cost lines are derived from (the staging SQL's input, besides tags_raw)
WANTED = (
    "line_item_line_item_type", "split_line_item_parent_resource_id", "line_item_usage_start_date",
    "line_item_usage_end_date", "bill_billing_period_start_date", "bill_billing_period_end_date",
    "line_item_unblended_cost", "line_item_net_unblended_cost",
    "pricing_public_on_demand_cost", "savings_plan_savings_plan_effective_cost",
    "savings_plan_total_commitment_to_date", "savings_plan_used_commitment", "reservation_effective_cost",
    "reservation_unused_amortized_upfront_fee_for_billing_period", "reservation_unused_recurring_fee",
    "reservation_reservation_a_r_n", "line_item_currency_code", "line_item_usage_account_id",
    "line_item_product_code", "line_item_usage_type", "line_item_resource_id", "product_region_code",
    "product_product_name", "product_instance_type",
)  # fmt: skip
# the columns read in their Parquet type (cast by the staging SQL); the rest are text
TYPED = frozenset(c for c in WANTED if c in OPTIONAL_NUMBERS)
MAPS = ("resource_tags", "product", "cost_category", "discount")


def _columns(names: list[str]) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The file's column for each wanted CUR column, and its tag columns (file column, raw tag key) as the
    reader finds them (AwsCurReader.spec)."""
    tags: list[tuple[str, str]] = []
    plain: list[str] = []
    for name in names:
        low = name.lower()
        if low.startswith("resourcetags/"):
            tags.append((name, name.split("/", 1)[1]))
        elif low.startswith("resource_tags_"):
            tags.append((name, name[len("resource_tags_") :]))
        elif low not in MAPS and not low.startswith(("costcategory/", "cost_category_", "notags/")):
            plain.append(name)
    by_key = pick(plain, squash)
    found: dict[str, str] = {}
    for canonical in WANTED:
        for key in (squash(canonical), *ALIASES.get(canonical, ())):
            if key in by_key:
                found[canonical] = by_key[key]
                break
    return found, tags


def _repaired(header: list[str], first_row: list[str]) -> list[str] | None:
    """The header as the reader repairs it (a field that glues two CUR columns), else None."""
    fixed = split_glued_header(header, first_row)
    return fixed[0] if fixed else None


def _lower_names(names: list[str]) -> dict[str, str]:
    return {n.lower(): n for n in reversed(names)}  # the first of a spelling wins, as Relation.column


def _read(spark: SparkSession, uri: str, delimiter: str | None) -> DataFrame:
    """One CUR file's columns named as the staging SQL reads them, plus tags_raw and _file."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType, MapType, StringType

    parquet = bool(PARQUET.search(uri))
    if parquet:
        df = read_parquet(spark, uri)
        names = df.columns
        types = {f.name: f.dataType for f in df.schema.fields}

        def col(name: str) -> Column:
            return F.col(f"`{name}`")
    else:
        file = read_csv_text(spark, uri, delimiter, _repaired)
        df, names, col = file.df, file.names, file.column
        types = {name: StringType() for name in names}
    found, tag_columns = _columns(names)
    lower = _lower_names(names)

    def text(name: str) -> Column:
        """A column as the reader reads text: a CSV's NULL spellings as NULL; a Parquet value as it is."""
        if not parquet:
            return F.when(col(name).isin(*NULL_STRINGS), None).otherwise(col(name))
        return col(name).cast("string")

    def value(canonical: str) -> Column:
        name = found[canonical]
        if parquet and canonical in EMPTY_IS_NULL:
            return F.when(col(name) == "", None).otherwise(text(name))
        if canonical in TYPED:
            if not parquet:
                return text(name)
            if isinstance(types[name], StringType):  # CUR for Athena writes figures as text, '' for none
                return F.when(col(name) == "", None).otherwise(col(name))
            if isinstance(types[name], DoubleType | FloatType):  # Data Exports writes amounts as DOUBLE
                return decimal_of_double(col(name))
            return col(name)
        return text(name)

    out = {c: value(c) for c in found}
    product = lower.get("product")
    if product is not None:
        is_map = parquet and isinstance(types[product], MapType)
        for canonical, keys in PRODUCT_KEYS.items():
            if canonical not in WANTED or canonical in found:
                continue  # the promoted column wins
            looked = [
                F.try_element_at(col(product), F.lit(k))
                if is_map
                else F.get_json_object(text(product), f"$.{k}")
                for k in keys
            ]
            out[canonical] = looked[0] if len(looked) == 1 else F.coalesce(*looked)
    out["tags_raw"] = _tags(lower, types, tag_columns, col, text, parquet)
    return df.select(
        *[(out[c] if c in out else F.lit(None).cast("string")).alias(c) for c in WANTED],
        out["tags_raw"].alias("tags_raw"),
        F.lit(uri).alias("_file"),
    )


def _tags(
    lower: dict[str, str],
    types: dict[str, object],
    tag_columns: list[tuple[str, str]],
    col: Callable[[str], Column],
    text: Callable[[str], Column],
    parquet: bool,
) -> Column:
    """The line's tags as the text the warehouse's tag sets hold (AwsCur2Reader.maps, json_nonnull): the
    `resource_tags` MAP's JSON (none when empty), its JSON text in a CSV (trimmed; '{}' is none), or a JSON
    object of the non-empty legacy tag columns in file order."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType

    tags = lower.get("resource_tags")
    if tags is not None:
        if parquet and isinstance(types[tags], MapType):
            value = col(tags)
            return F.when(F.size(value) > 0, F.to_json(value))
        trimmed = trim_spaces(text(tags))
        return F.when(~trimmed.isin("", "{}"), trimmed)
    if not tag_columns:
        return F.lit(None).cast("string")
    entries = F.array(
        *[
            F.struct(F.lit(key).alias("key"), F.nullif(trim_spaces(text(name)), F.lit("")).alias("value"))
            for name, key in tag_columns
        ]
    )
    json = F.to_json(F.map_from_entries(F.filter(entries, lambda e: e["value"].isNotNull())))
    return F.when(json != "{}", json)


def stage(spark: SparkSession, uris: list[str], reading: Reading) -> DataFrame:
    """The files' lines typed by sql/spark/staging/cur_line_items.sql, with the catalogue's AWS service
    categories beside as the view `cur_categories`."""
    from pyspark.sql.types import StringType, StructField, StructType

    catalog = service_catalog("aws")
    schema = StructType([StructField(c, StringType()) for c in ("service", "service_category")])
    pairs = list(zip(catalog["category_services"], catalog["category_names"], strict=True))
    spark.createDataFrame(pairs, schema).createOrReplaceTempView("cur_categories")
    return stage_files(
        spark,
        uris,
        lambda uri: _read(spark, uri, reading.delimiters.get(uri)),
        "cur_raw",
        "cur_line_items",
        reading,
    )
