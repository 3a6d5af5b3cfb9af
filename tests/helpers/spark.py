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

from pipelines.config import Config, SparkSettings, load_config
from pipelines.transform.build import build_mart

# two cores, and few shuffle partitions: the demo's week is a few thousand lines
SETTINGS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "1g",
}


def settings(marts_dir: Path) -> SparkSettings:
    """Local mode, or the Spark Connect server WASTEWATCH_SPARK_URL names (`sc://localhost:15002`: .ci/run
    runs the Spark tests again against one)."""
    url = os.environ.get("WASTEWATCH_SPARK_URL", "local[2]")
    # a Connect session sets the SQL settings alone: the server's JVM, driver and UI are its own
    conf = (
        {k: v for k, v in SETTINGS.items() if k.startswith("spark.sql.")}
        if url.startswith("sc://")
        else SETTINGS
    )
    return SparkSettings(url=url, marts_dir=str(marts_dir), conf=conf)


def demo_copy(demo: Path, tmp_path: Path) -> Config:
    """The demo's config on Spark over a copy of its warehouse under tmp_path (the shared demo is read-only)."""
    warehouse = tmp_path / "wastewatch.duckdb"
    shutil.copy(demo / "warehouse" / "wastewatch.duckdb", warehouse)
    config = load_config(demo / "wastewatch.yaml")
    return config.model_copy(
        update={"warehouse": warehouse, "engine": "spark", "spark": settings(tmp_path / "marts")}
    )


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
    from pipelines.transform.spark.session import get_session

    spark = get_session(settings(marts_dir))
    if not settings(marts_dir).url.startswith("sc://"):  # a Connect client has no SparkContext
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


def assert_same_rows(con: duckdb.DuckDBPyConnection, a: str, b: str, keys: list[str]) -> int:
    """Tables `a` and `b` hold the same rows, matched on `keys` (unique in each): every column equal, DOUBLEs
    to 1e-9 of their size (two engines add a group's doubles in different orders); the row count."""
    columns = con.execute("select column_name, column_type from (describe " + a + ")").fetchall()
    assert columns == con.execute("select column_name, column_type from (describe " + b + ")").fetchall()
    on = " and ".join(f"x.{k} is not distinct from y.{k}" for k in keys)
    differ = " or ".join(
        f"abs(x.{c} - y.{c}) > 1e-9 * greatest(1, abs(x.{c})) or (x.{c} is null) <> (y.{c} is null)"
        if t == "DOUBLE"
        else f"x.{c} is distinct from y.{c}"
        for c, t in columns
    )
    n_a, n_b = (con.execute(f"select count(*) from {t}").fetchall()[0][0] for t in (a, b))
    assert n_a == n_b, f"{a} has {n_a} rows, {b} {n_b}"
    bad = con.execute(
        f"select x.*, y.* from {a} as x full join {b} as y on {on} where x.{keys[0]} is null "
        f"or y.{keys[0]} is null or {differ} limit 3"
    ).fetchall()
    assert bad == [], f"rows of {a} and {b} that differ: {bad}"
    return int(n_a)
