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

import duckdb
import pytest

from pipelines.config import SparkSettings, load_config
from pipelines.transform import build_mart

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


def mart_kind(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """Whether the warehouse's `name` is a 'view' (over Spark's Parquet) or a 'table' (DuckDB's), or None."""
    found = con.execute(  # fetchall: fetchone leaves the result open, and the next statement refuses it
        "select 'view' from duckdb_views() where view_name = $n and not internal "
        "union all select 'table' from duckdb_tables() where table_name = $n",
        {"n": name},
    ).fetchall()
    return found[0][0] if found else None


def cost_hourly_on_both_engines(con: duckdb.DuckDBPyConnection, project: Path) -> int:
    """Build cost_hourly of the project in `project` on DuckDB, then on Spark: the view Spark's build leaves
    holds the same rows as DuckDB's table, both ways (EXCEPT ALL counts duplicates); its row count."""
    config = load_config(project / "wastewatch.yaml")
    n = build_mart(con, "cost_hourly", config)
    con.execute("create table expected as select * from cost_hourly")
    on_spark = config.model_copy(update={"engine": "spark", "spark": settings(project / "marts")})
    assert build_mart(con, "cost_hourly", on_spark) == n > 0
    assert mart_kind(con, "cost_hourly") == "view"
    for a, b in (("cost_hourly", "expected"), ("expected", "cost_hourly")):
        differ = con.execute(f"from {a} except all from {b} order by all limit 5").fetchall()
        assert differ == [], f"rows of {a} that are not in {b}: {differ}"
    return n
