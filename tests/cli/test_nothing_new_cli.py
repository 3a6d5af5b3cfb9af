"""`wastewatch ingest` with nothing new since the last full run stops before Dagster: it prints what each
table holds, leaves the warehouse and its published copy untouched and exits 0; `--full` runs every step,
and a Dagster run that did not build every mart leaves no state, so the next ingest runs in full."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner, Result

from pipelines.cli import main
from pipelines.config import load_config
from pipelines.defs.resources import WastewatchResource
from pipelines.runner import _assets
from pipelines.warehouse import connect
from tests.helpers.config import write_config
from tests.helpers.paths import FOCUS_SAMPLE, copy_into


def _cli(config: Path, *args: str) -> Result:
    return CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(
        main, ["--config", str(config), *args], catch_exceptions=False
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "billing")
    return write_config(tmp_path, "sources:\n  - {name: focus, kind: focus, uri: landing/billing/}\n")


def _states(path: Path) -> int:
    con = connect(load_config(path).warehouse_path, read_only=True)
    try:
        return con.execute("select count(*) from ingest_state").fetchone()[0]
    finally:
        con.close()


def test_a_nightly_ingest_with_nothing_new_stops_before_dagster_until_a_run_of_part_of_the_graph(
    project: Path,
) -> None:
    first = _cli(project, "-v", "ingest")
    assert first.exit_code == 0, first.output
    assert "a full run: no warehouse yet" in first.output
    config = load_config(project)
    published = config.published_path.stat().st_mtime_ns
    stored = config.warehouse_path.stat().st_mtime_ns
    assert _states(project) == 1

    second = _cli(project, "-v", "ingest")
    assert second.exit_code == 0, second.output
    assert "nothing new since the run of " in second.output
    assert (
        "billing_line_items: 0 file(s) loaded (0 rows), 1 unchanged, 0 rejected; 1,000 rows in the table"
        in (second.output)
    )
    assert "STEP_START" not in second.output  # no Dagster run: -v would show its events
    assert config.published_path.stat().st_mtime_ns == published
    assert config.warehouse_path.stat().st_mtime_ns == stored

    forced = _cli(project, "-v", "ingest", "--full")
    assert forced.exit_code == 0, forced.output
    assert "nothing new" not in forced.output and "STEP_START" in forced.output
    assert config.published_path.stat().st_mtime_ns > published

    # a Dagster run of part of the graph (here the publish alone) did not build the marts: it forgets the
    # state, so the next ingest runs in full and records it again
    result = dg.materialize(
        _assets(project),
        selection=dg.AssetSelection.assets("published_warehouse"),
        resources={"wastewatch": WastewatchResource(config_path=str(project))},
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success and _states(project) == 0
    again = _cli(project, "-v", "ingest")
    assert "a full run: no full run recorded since the last change" in again.output
    assert _states(project) == 1
