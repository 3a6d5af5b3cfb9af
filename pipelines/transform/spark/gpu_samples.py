"""nvidia-smi captures read by Spark where they lie, as the nvidia_smi reader reads them: the layout each
file's first line gives (pipelines/sources/nvidia_smi.py, shared with the reader), its values split at
the separator, blank lines, header lines and a last line cut short skipped, and the text typed by
sql/spark/staging/nvidia_smi_gpu_samples.sql. Files of one source and layout are read as one text source;
each line knows its file by Spark's `_metadata.file_path`."""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.config import Config, Source
from pipelines.errors import RejectedFile, WarehouseError
from pipelines.net import s3 as s3mod
from pipelines.sources import nvidia_smi
from pipelines.sources.options import NvidiaSmiOptions
from pipelines.transform.spark.bills import union
from pipelines.transform.spark.builds import inflated, spark_file, spark_path
from pipelines.transform.spark.session import sql_over
from pipelines.warehouse import sql_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# the telemetry files Spark reads itself (the others' samples are handed over from the warehouse)
KINDS = ("nvidia_smi",)
# the columns the staging casts to a number (from the value's first word)
NUMBERS = (
    "gpu_index", "util_pct", "mem_util_pct", "mem_total_mib", "mem_used_mib", "mem_free_mib", "mem_reserved_mib",
    "power_w", "power_limit_w", "temperature_c", "sm_clock_mhz", "mem_clock_mhz",
)  # fmt: skip
# a first word DuckDB's cast may read as a number: Java's parser also reads `5d`, `5f` and hex floats
# (`0x1p3`), which DuckDB does not; such a word is NULL before Spark casts it. Forms DuckDB reads and Java
# does not (`1_000`, `-nan`) stay NULL in Spark, and the read check fails the mart naming the file.
NUMBER_WORD = r"^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$|^(?i)[+-]?(inf|infinity|nan)$"


@dataclass(frozen=True)
class Capture:
    """One capture file to read: where it lies, its ledger id, and its layout."""

    uri: str
    file_id: str
    source: Source
    header: str  # the first line (BOM dropped): a header line to skip when the layout has one
    shape: nvidia_smi.Layout


def present(uri: str) -> bool:
    """Whether Spark reads the file where it lies: it is still where the ingest found it (a local file may
    be removed once ingested; an s3:// object is taken to be there: Spark's read names it otherwise), and
    packed so that Hadoop inflates it (`builds.inflated`: not gzip named `.CSV.GZ`)."""
    return inflated(uri) and (uri.startswith("s3://") or os.path.isfile(uri))


def plan(spark: SparkSession, config: Config, uri: str, file_id: str, source_name: str) -> Capture:
    """The file's layout from its first line, as the reader plans it."""
    source = next((s for s in config.sources if s.name == source_name), None)
    if source is None:  # the config no longer names the source whose files the warehouse holds
        raise WarehouseError(
            f"{uri}: its source {source_name!r} is not in the config; roll up with engine: duckdb"
        )
    if uri.startswith("s3://"):
        head = spark.read.text(spark_file(uri)).limit(1).collect()
        first = head[0].value.removeprefix("\ufeff") if head else ""
    else:
        opener = gzip.open if uri.lower().endswith(".gz") else open
        try:
            with opener(uri, "rt", encoding="utf-8-sig", errors="replace") as f:
                first = f.readline().rstrip("\r\n")
        except (OSError, EOFError) as exc:  # changed since its ingest: a gzip stream cut short, ...
            raise WarehouseError(
                f"{uri}: Spark's roll-up cannot read this capture's first line ({exc}); run `wastewatch "
                "ingest`, or roll up with engine: duckdb (leave int_gpu_slices out of spark.marts)"
            ) from None
    try:
        shape = nvidia_smi.layout(
            uri, first, source.options_as(NvidiaSmiOptions), _relative(config, source, uri)
        )
    except RejectedFile as exc:  # it was read by the ingest: a source whose options changed since
        raise WarehouseError(f"{exc}; ingest again or roll up with engine: duckdb") from None
    return Capture(uri, file_id, source, first, shape)


def _relative(config: Config, source: Source, uri: str) -> str:
    """The file's path under its source's location, as the reader was given it (what `host_pattern` and the
    file-name host read)."""
    if uri.startswith("s3://"):
        _, prefix = s3mod.split_uri(source.uri)
        _, key = s3mod.split_uri(uri)
        rel = key[len(prefix) :].lstrip("/") if key.startswith(prefix) else key
        return rel or Path(key).name
    root = config.source_root(source)
    for base in (root, root.resolve()):
        try:
            return str(Path(uri).relative_to(base))
        except ValueError:
            continue
    return Path(uri).name


def read(spark: SparkSession, captures: list[Capture]) -> DataFrame:
    """The samples of the captures, typed as gpu_samples (the roll-up's columns), one text read per source
    and layout."""
    groups: dict[tuple[object, ...], list[Capture]] = {}
    for c in captures:
        s = c.shape
        groups.setdefault((c.source.name, s.names, s.delim, s.has_header, s.mapping), []).append(c)
    return union([_read_group(spark, group) for group in groups.values()])


def _read_group(spark: SparkSession, group: list[Capture]) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    from pipelines.transform.spark.bills import trim_spaces

    shape, source = group[0].shape, group[0].source
    opts = source.options_as(NvidiaSmiOptions)
    width = len(shape.names)
    files = spark.createDataFrame(
        [(_spark_file(c.uri), c.uri, c.file_id, c.shape.fixed_host, c.header) for c in group],
        StructType(
            [
                StructField(n, StringType())
                for n in ("_path", "_source_file", "_file_id", "_fixed_host", "_header")
            ]
        ),
    )
    lines = (
        spark.read.text([spark_file(c.uri) for c in group])
        .select(
            F.regexp_replace("value", "^\ufeff", "").alias("value"),
            # Spark names a file as a URI (`file:/a%20b/x.csv`); '+' is kept as it is, so not a space
            F.expr("url_decode(replace(_metadata.file_path, '+', '%2B'))").alias("_path"),
        )
        .join(F.broadcast(files), "_path")
        .where(F.col("value") != "")  # blank lines: the reader's CSV scan skips them
    )
    if shape.has_header:
        lines = lines.where(F.col("value") != F.col("_header"))  # the header, and its repeats in appends
    fields = F.split(F.col("value"), shape.delim, -1)
    # a line with too few values, or none in the last field, is the last line of a capture cut short: the
    # reader skips it (anywhere else it rejects the file, so a landed file has no other)
    lines = lines.where(
        (F.size(fields) >= width) & (F.coalesce(F.element_at(fields, width), F.lit("")) != "")
    )
    mapping = dict(shape.mapping)

    def value(column: str) -> object:
        if column not in mapping:
            return F.lit(None).cast("string")
        raw = F.nullif(F.element_at(fields, int(mapping[column][1:]) + 1), F.lit(""))
        # nvidia-smi separates with `, `; a file with bare `,` may pad values with spaces: trimmed
        text = trim_spaces(raw) if shape.delim == "," else raw
        if column in NUMBERS:
            return F.when(F.split_part(text, F.lit(" "), F.lit(1)).rlike(NUMBER_WORD), text)
        return text

    src = lines.select(
        *[value(c).alias(c) for c in nvidia_smi.CANONICAL],  # type: ignore[attr-defined]
        "_fixed_host",
        "_source_file",
        "_file_id",
    ).where(F.col("ts").isNull() | (F.col("ts") != "timestamp"))  # header lines repeated by appends
    return sql_over(
        spark, src, "_src", sql_text("spark/staging", "nvidia_smi_gpu_samples"),
        {"tz": str(opts.timezone), "source_name": source.name},
    )  # fmt: skip


def _spark_file(uri: str) -> str:
    """The file as `_metadata.file_path` names it once decoded: `file:/abs/path` or `s3a://bucket/key`."""
    return spark_path(uri) if uri.startswith("s3://") else "file:" + os.path.abspath(uri)


def check(read: dict[tuple[str, object], dict[str, object]], expected: list[dict[str, object]]) -> None:
    """Fail naming the first file whose samples of a day, as Spark read them, differ from what the
    warehouse holds of it (how many, their times, how many have each figure)."""
    keys = (
        "samples",
        "ts_us",
        "index_n",
        "index_sum",
        "util_n",
        "mem_util_n",
        "mem_used_n",
        "mem_total_n",
        "power_n",
        "power_limit_n",
    )
    for e in expected:
        got = read.get((str(e["file_id"]), e["day"]), {})
        differ = [k for k in keys if str(got.get(k, 0)) != str(e[k])]
        if differ:
            raise WarehouseError(
                f"{e['uri']}: Spark read {got.get('samples', 0):,} samples of {e['day']} from this file but the "
                f"warehouse holds {e['samples']:,} (differing: {', '.join(differ)}): the file changed since it "
                "was ingested, or Spark reads a value the reader read otherwise; run `wastewatch ingest`, or "
                "roll up with engine: duckdb (leave int_gpu_slices out of spark.marts)"
            )
