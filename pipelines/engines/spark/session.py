"""The Spark session the marts run in: one per process, Spark Connect (sc://) or a master URL."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from pipelines.config import SparkSettings
from pipelines.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# what the Spark SQL of sql/spark/ is written for: UTC wall-clock timestamps (DuckDB's TIMESTAMP), strict
# casts, and decimal products that keep every decimal (DuckDB's), not Spark's rounding to 6 places
REQUIRED_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.timestampType": "TIMESTAMP_NTZ",
    "spark.sql.ansi.enabled": "true",
    "spark.sql.decimalOperations.allowPrecisionLoss": "false",
    "spark.sql.sources.partitionOverwriteMode": "static",
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
    for key, value in {**settings.conf, **REQUIRED_CONF}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    for key, value in REQUIRED_CONF.items():  # a session that already ran keeps its builder settings
        spark.conf.set(key, value)
    return spark
