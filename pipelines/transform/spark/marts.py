"""The marts `engine: spark` builds, each by the module its registry line names (pipelines/marts/registry.py):
its `build(con, config)` runs the heavy part on Spark, its `attach(con, built)` points the warehouse at it."""

from __future__ import annotations

import importlib
from types import ModuleType

import duckdb

from pipelines.config import Config
from pipelines.marts.registry import mart
from pipelines.transform.spark import builds
from pipelines.transform.spark.builds import Built


def _builder(name: str) -> ModuleType:
    module = mart(name).spark
    if module is None:
        raise KeyError(f"{name!r} is not built on Spark")
    return importlib.import_module(module)


def build(con: duckdb.DuckDBPyConnection, name: str, config: Config) -> Built:
    """Run the mart's heavy part on Spark (outside the warehouse's transaction: it takes the time)."""
    built: Built = _builder(name).build(con, config)
    return built


def attach(con: duckdb.DuckDBPyConnection, name: str, built: Built) -> None:
    """Make the mart a view over what Spark wrote, with the warehouse's own part (inside its transaction)."""
    _builder(name).attach(con, built)


def cleanup(name: str, built: Built) -> list[str]:
    """Remove the mart's older builds once the warehouse points at this one."""
    return builds.remove_old_builds(built)


def discard(name: str, built: Built) -> None:
    """Remove a build the warehouse did not switch to (its transaction failed)."""
    builds.remove_build(built)
