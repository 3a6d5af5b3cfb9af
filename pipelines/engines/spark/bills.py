"""What every bill format's Spark reader shares: which files Spark can read, a CSV read as text, the
columns a file names in its own spelling, and the typed lines of several files put together."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pipelines.engines.spark.builds import spark_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CSV = re.compile(r"\.csv(\.gz)?$", re.IGNORECASE)
PARQUET = re.compile(r"\.parquet$", re.IGNORECASE)
# what a billing CSV writes for NULL, as the billing reader reads it (relation.NULL_STRINGS)
NULL_STRINGS = ("NULL", "null", "")


@dataclass(frozen=True)
class Reading:
    """How a build reads its bill files: the config's currency for lines without one, and each CSV's
    delimiter where its source's options name one (the DuckDB reader sniffs it otherwise: Spark reads ',')."""

    currency: str
    delimiters: dict[str, str] = field(default_factory=dict)


def readable(uri: str) -> bool:
    """Whether Spark reads the file as it lies: CSV, CSV.gz or Parquet (not a zip or another packing)."""
    return bool(CSV.search(uri) or PARQUET.search(uri))


def read_csv_text(spark: SparkSession, uri: str, delimiter: str | None) -> DataFrame:
    """One CSV(.gz) file, every column as text (a file at a time: Spark takes the first file's header for
    every file it reads together, and exports differ in their columns' order)."""
    return (
        spark.read.option("header", True)
        .option("sep", delimiter or ",")
        .option("quote", '"')
        .option("escape", '"')
        .option("multiLine", True)
        .option("mode", "FAILFAST")
        .option("inferSchema", False)
        .csv(spark_path(uri))
    )


def pick(columns: Iterable[str], key: Callable[[str], str | None]) -> dict[str, str]:
    """The file's column for each name `key` maps its columns to (the first in file order wins)."""
    picked: dict[str, str] = {}
    for name in columns:
        target = key(name)
        if target and target not in picked:
            picked[target] = name
    return picked


def union(frames: list[DataFrame]) -> DataFrame:
    """The frames' rows together, columns matched by name."""
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out
