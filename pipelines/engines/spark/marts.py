"""The marts `engine: spark` builds, and how each is attached to the warehouse."""

from __future__ import annotations

import duckdb

from pipelines.config import Config
from pipelines.engines.spark import builds, cost_hourly, dataset_matches, storage_objects
from pipelines.engines.spark.builds import Built
from pipelines.warehouse import sql_text


def build(con: duckdb.DuckDBPyConnection, name: str, config: Config) -> Built:
    """Run the mart's heavy part on Spark (outside the warehouse's transaction: it takes the time)."""
    if name == "cost_hourly":
        return cost_hourly.build_billed(con, config)
    if name == storage_objects.MART:
        return storage_objects.build(con, config)
    if name == dataset_matches.MART:
        return dataset_matches.build(con, config)
    raise KeyError(f"{name!r} is not built on Spark")


def attach(con: duckdb.DuckDBPyConnection, name: str, built: Built) -> None:
    """Make the mart a view over what Spark wrote, with the warehouse's own part (inside its transaction)."""
    if name == "cost_hourly":
        con.execute(sql_text("spark/warehouse", "cost_hourly_modelled"))
        cost_hourly.attach(con, built)
        return
    if name == storage_objects.MART:
        storage_objects.attach(con, built)
        return
    if name == dataset_matches.MART:
        dataset_matches.attach(con, built)
        return
    raise KeyError(f"{name!r} is not built on Spark")


def cleanup(name: str, built: Built) -> list[str]:
    """Remove the mart's older builds once the warehouse points at this one."""
    return builds.remove_old_builds(built)


def discard(name: str, built: Built) -> None:
    """Remove a build the warehouse did not switch to (its transaction failed)."""
    builds.remove_build(built)
