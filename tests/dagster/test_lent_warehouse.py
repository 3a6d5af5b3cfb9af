"""A run executed in-process by a CLI command uses the command's own connection to the warehouse
(`lend_warehouse`), leaves it open for the command, and uses none it was not lent for its warehouse."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import duckdb

from pipelines.config import load_config
from pipelines.defs.resources import WastewatchResource, lend_warehouse
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse


def _run(config_path: Path) -> list[duckdb.DuckDBPyConnection]:
    """Materialise one asset asking the resource for the warehouse twice; the connections it got."""
    seen: list[duckdb.DuckDBPyConnection] = []

    @dg.asset
    def probe(wastewatch: WastewatchResource) -> None:
        for _ in range(2):
            with wastewatch.warehouse() as con:
                con.execute("select count(*) from schema_version").fetchall()
                seen.append(con)

    result = dg.materialize(
        [probe],
        resources={"wastewatch": WastewatchResource(config_path=str(config_path))},
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success
    return seen


def test_a_run_uses_the_lent_connection_and_leaves_it_open(tmp_path: Path) -> None:
    config_path = write_config(tmp_path, "warehouse: warehouse/wastewatch.duckdb\n")
    con = new_warehouse(load_config(config_path).warehouse_path)
    try:
        with lend_warehouse(load_config(config_path).warehouse_path, con):
            seen = _run(config_path)
        assert seen == [con, con]
        assert con.execute("select 1").fetchall() == [(1,)]  # still the command's to use and close
    finally:
        con.close()


def test_a_connection_lent_for_another_warehouse_is_not_used(tmp_path: Path) -> None:
    config_path = write_config(tmp_path, "warehouse: warehouse/wastewatch.duckdb\n")
    new_warehouse(load_config(config_path).warehouse_path).close()
    other = new_warehouse(tmp_path / "other.duckdb")
    try:
        with lend_warehouse(tmp_path / "other.duckdb", other):
            seen = _run(config_path)
        assert seen[0] is not other and seen[0] is seen[1]  # the run's own, shared by its steps
    finally:
        other.close()
