"""What every bill format's Spark reader shares: which files Spark can read, a CSV read as text, the
columns a file names in its own spelling, and the typed lines of several files put together."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pipelines.errors import WarehouseError
from pipelines.transform.spark.builds import inflated, spark_file
from pipelines.transform.spark.session import sql_over
from pipelines.warehouse import sql_text

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

CSV = re.compile(r"\.csv(\.gz)?$", re.IGNORECASE)
PARQUET = re.compile(r"\.parquet$", re.IGNORECASE)
# what a billing CSV writes for NULL, as the billing reader reads it (relation.NULL_STRINGS)
NULL_STRINGS = ("NULL", "null", "")
# the delimiters a CSV's header is tried with, the first preferred where two split it alike
SEPARATORS = (",", ";", "\t", "|")


@dataclass(frozen=True)
class Reading:
    """How a build reads its bill files: the config's currency for lines without one, and each CSV's
    delimiter where its source's options name one (read_csv_text sniffs it otherwise)."""

    currency: str
    delimiters: dict[str, str] = field(default_factory=dict)


def readable(uri: str) -> bool:
    """Whether Spark reads the file as it lies: CSV, CSV.gz or Parquet, gzip named so that Hadoop inflates
    it (`builds.inflated`)."""
    return bool(CSV.search(uri) or PARQUET.search(uri)) and inflated(uri)


def read_parquet(spark: SparkSession, uri: str) -> DataFrame:
    """One Parquet file in its own types; one Spark cannot read (a TIMESTAMP(NANOS) column, which DuckDB
    reads) fails naming the file and Spark's reason."""
    from pyspark.errors import AnalysisException

    try:
        return spark.read.parquet(spark_file(uri))
    except AnalysisException as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise WarehouseError(
            f"{uri}: Spark cannot read this Parquet file ({reason}); let DuckDB build from it (engine: duckdb)"
        ) from None


@dataclass(frozen=True)
class CsvFile:
    """A CSV file as Spark reads it: every column text, named by position (`_c0`, `_c1`, ...), with the
    header's names beside. By position, because Spark renames header names that repeat ignoring case
    (`resourceTags/user:team` and `resourceTags/user:Team`, two tags to AWS), and the readers look
    columns up by the header's own spelling."""

    df: DataFrame
    names: list[str]

    def column(self, name: str) -> Column:
        """The column the header names `name` (the first of that spelling, as the billing reader takes)."""
        from pyspark.sql import functions as F

        return F.col(f"_c{self.names.index(name)}")


def read_csv_text(
    spark: SparkSession,
    uri: str,
    delimiter: str | None,
    fix_header: Callable[[list[str], list[str]], list[str] | None] | None = None,
) -> CsvFile:
    """One CSV(.gz) file, every column as text (a file at a time: exports differ in their columns' order).

    Its header is read first: its delimiter, unless the source names one, is the one of `,` `;` tab `|`
    that splits the header into the most fields (the billing reader sniffs it too); a UTF-8 byte order
    mark is dropped; `fix_header(header, first data row)` may repair it (a CUR header with a missing
    comma). Rows shorter than the header read NULL for the missing fields, as the billing reader reads
    them."""
    import csv

    from pyspark.sql.types import StringType, StructField, StructType

    head = [r.value for r in spark.read.text(spark_file(uri)).limit(2).collect()]
    if not head:
        raise WarehouseError(
            f"{uri}: Spark read no header from this file; let DuckDB build from it (engine: duckdb)"
        )
    header_line = head[0].removeprefix("\ufeff")
    sep = delimiter or max(SEPARATORS, key=lambda d: len(next(csv.reader([header_line], delimiter=d))))
    header = next(csv.reader([header_line], delimiter=sep))
    if fix_header is not None and len(head) > 1:
        header = fix_header(header, next(csv.reader([head[1]], delimiter=sep))) or header
    schema = StructType([StructField(f"_c{i}", StringType()) for i in range(len(header))])
    df = (
        spark.read.schema(schema)
        .option("header", True)
        .option("enforceSchema", True)
        .option("sep", sep)
        .option("quote", '"')
        .option("escape", '"')
        .option("multiLine", True)
        .option("mode", "PERMISSIVE")
        .csv(spark_file(uri))
    )
    return CsvFile(df, header)


def pick(columns: Iterable[str], key: Callable[[str], str | None]) -> dict[str, str]:
    """The file's column for each name `key` maps its columns to (the first in file order wins)."""
    picked: dict[str, str] = {}
    for name in columns:
        target = key(name)
        if target and target not in picked:
            picked[target] = name
    return picked


def stage_files(
    spark: SparkSession,
    uris: list[str],
    read: Callable[[str], DataFrame],
    view: str,
    staging: str,
    reading: Reading,
) -> DataFrame:
    """The files' lines as `read` gives them, typed by sql/spark/staging/<staging>.sql, which reads them as
    the view `view`: the CSVs' text together, each Parquet file on its own (two exports may type a column
    differently, and a CSV's text and a Parquet file's types do not union before the staging casts them)."""

    def staged(raw: DataFrame) -> DataFrame:
        return sql_over(
            spark, raw, view, sql_text("spark/staging", staging), {"default_currency": reading.currency}
        )

    frames, text = [], []
    for uri in uris:
        if PARQUET.search(uri):
            frames.append(staged(read(uri)))
        else:
            text.append(read(uri))
    if text:
        frames.append(staged(union(text)))
    return union(frames)


def union(frames: list[DataFrame]) -> DataFrame:
    """The frames' rows together, columns matched by name."""
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def decimal_of_double(column: Column) -> Column:
    """A DOUBLE (or FLOAT) amount as DECIMAL(38, 12), rounded as DuckDB's cast rounds it: the value times
    10^12 in floating point, rounded half away from zero, as an integer of 10^-12. Spark's own cast rounds
    the double's shortest decimal form instead, which differs in the last place for about 1 in 400
    amounts with 13 or more decimals (8.1244676460895: DuckDB ...089, Spark ...090). The integer is
    converted in two halves of 32 bits, each below 2^53 and so exact, as the double's decimal text of a
    larger integer need not be."""
    from pyspark.sql import functions as F

    units = F.round(column.cast("double") * F.lit(1e12))
    high = F.floor(units / F.lit(4294967296.0))
    low = units - high.cast("double") * F.lit(4294967296.0)
    whole = high.cast("decimal(38, 0)") * F.lit(4294967296) + low.cast("decimal(38, 0)")
    return (whole.cast("decimal(38, 0)") * F.lit("0.000000000001").cast("decimal(13, 12)")).cast(
        "decimal(38, 12)"
    )


def trim_spaces(column: Column) -> Column:
    """Text trimmed as DuckDB's trim() trims it: the Unicode space separators (category Zs: the space, the
    no-break space, the ideographic space, ...) at both ends, not tabs or line ends. Spark's trim() takes
    the ASCII space alone."""
    from pyspark.sql import functions as F

    return F.regexp_replace(column, r"^\p{Zs}+|\p{Zs}+$", "")
