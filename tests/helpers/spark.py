"""Spark in local mode for the `engine: spark` tests: one session per test process.

pyspark is the optional extra `spark` (not the `test` extra) and local mode needs Java 17+; without
either the tests that need Spark skip saying why, unless WASTEWATCH_REQUIRE_SPARK=1 (`.ci/run`).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from pipelines.config import SparkSettings

# two cores, and few shuffle partitions: the demo's week is a few thousand lines
SETTINGS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
}


def settings(marts_dir: Path) -> SparkSettings:
    return SparkSettings(url="local[2]", marts_dir=str(marts_dir), conf=SETTINGS)


def require_spark() -> None:
    """Skip (fail under WASTEWATCH_REQUIRE_SPARK=1) unless pyspark and java are here."""
    why = None
    if importlib.util.find_spec("pyspark") is None:
        why = "pyspark is not installed (pip install -e '.[spark]'; .ci/run installs it)"
    elif shutil.which("java") is None:
        why = "no `java` on PATH: Spark's local mode needs Java 17+ (.ci/run installs it)"
    if why:
        if os.environ.get("WASTEWATCH_REQUIRE_SPARK") == "1":
            pytest.fail(f"{why}, and WASTEWATCH_REQUIRE_SPARK=1")
        pytest.skip(why)


def start(marts_dir: Path) -> Any:
    """The process's local Spark session, as the engine itself creates it."""
    from pipelines.engines.spark.session import get_session

    spark = get_session(settings(marts_dir))
    spark.sparkContext.setLogLevel("ERROR")
    return spark
