"""The Spark session the marts run in: one per process, Spark Connect (sc://) or a master URL."""

from __future__ import annotations

import itertools
import os
import re
import shutil
from typing import TYPE_CHECKING

from pipelines.config import SparkSettings
from pipelines.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# what the Spark SQL of sql/spark/ is written for: UTC wall-clock timestamps (DuckDB's TIMESTAMP), strict
# casts, and decimal products that keep every decimal (DuckDB's), not Spark's rounding to 6 places
REQUIRED_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.timestampType": "TIMESTAMP_NTZ",
    "spark.sql.ansi.enabled": "true",
    "spark.sql.decimalOperations.allowPrecisionLoss": "false",
    "spark.sql.sources.partitionOverwriteMode": "static",
}


def local_defaults(url: str) -> dict[str, str]:
    """Settings for a master URL that runs Spark in this process (`local[N]`), unless `conf` names them:
    shuffles in 2 partitions a core, not 200 (each a task of its own), and input paths listed in the
    driver, not by a Spark job (which costs seconds for a few hundred local files)."""
    found = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\d+)?\])?", url.strip())
    if not found:
        return {}
    threads = found.group(1)  # `local` is one thread, `local[*]` one a core
    cores = 1 if threads is None else (os.cpu_count() or 1) if threads == "*" else int(threads)
    return {
        "spark.sql.shuffle.partitions": str(2 * cores),
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    }


def missing() -> str | None:
    """Why Spark cannot run here (no pyspark, or no java for a local master), or None."""
    try:
        import pyspark  # noqa: F401 - only asking whether it is installed
    except ImportError:
        return "pyspark is not installed: pip install 'wastewatch[spark]'"
    return None


def get_session(settings: SparkSettings) -> SparkSession:
    """The process's Spark session for these settings (created on first use, then reused).

    A master URL starts Spark in this process (local mode needs Java 17+); an sc:// URL connects to a
    Spark Connect server. The settings of REQUIRED_CONF are set on the session whatever `conf` says.
    """
    reason = missing()
    if reason:
        raise ConfigError(f"engine: spark: {reason}")
    from pyspark.sql import SparkSession

    remote = settings.url.startswith("sc://")
    if not remote and shutil.which("java") is None:
        raise ConfigError(
            f"engine: spark: the master URL {settings.url!r} runs Spark here, which needs java (17+)"
        )
    builder = SparkSession.builder.appName("wastewatch")
    builder = builder.remote(settings.url) if remote else builder.master(settings.url)
    for key, value in {**local_defaults(settings.url), **settings.conf, **REQUIRED_CONF}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    for key, value in REQUIRED_CONF.items():  # a session that already ran keeps its builder settings
        spark.conf.set(key, value)
    return spark


# numbers the views sql_over registers (one process, one session)
_VIEWS = itertools.count()


def sql_over(
    spark: SparkSession, frame: DataFrame, view: str, sql: str, args: dict[str, object]
) -> DataFrame:
    """`spark.sql(sql)` reading `frame` where the SQL names the relation `view`. The frame is registered
    under a name of its own (`<view>_<n>`), which replaces `view` in the SQL: Spark Connect resolves a
    view's name when a query runs, not when it is built, so several frames staged through one name would
    all read the last one registered."""
    unique = f"{view}_{next(_VIEWS)}"
    text, found = re.subn(rf"\b{re.escape(view)}\b", unique, sql)
    if not found:
        raise ValueError(f"the SQL does not read {view!r}")
    frame.createOrReplaceTempView(unique)
    return spark.sql(text, args=args)


def spark_reason(exc: BaseException) -> str:
    """The line of a Spark error (Py4JJavaError, or a Spark Connect error) that says what failed: Spark names
    its error class in brackets (`[FAILED_READ_FILE...] ...` with the file's path); else its first line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    reason = next((line for line in lines if re.search(r"\[[A-Z_.]+\]", line)), lines[0] if lines else "")
    return reason[:2000]
