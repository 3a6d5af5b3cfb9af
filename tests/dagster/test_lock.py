"""A Dagster run holds the warehouse's run-level lock through its resource: for the whole run, never for a
sensor's tick, and a run that finds another writer fails naming it (a real second process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dagster as dg

from pipelines.definitions import defs
from pipelines.defs.ingest.sensors import new_files_sensor
from pipelines.defs.resources import WastewatchResource
from pipelines.lock import lock_path
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import REPO

HOLD_LOCK = """
import sys, time
from pathlib import Path
from pipelines.lock import writer_lock
with writer_lock(Path(sys.argv[1]), wait=0):
    print("held", flush=True)
    time.sleep(120)
"""


def _published(config_path: Path, wait: float) -> dg.ExecuteInProcessResult:
    assets = [a for a in defs().assets or [] if isinstance(a, dg.AssetsDefinition)]
    return dg.materialize(
        assets,
        selection=dg.AssetSelection.assets("published_warehouse"),
        resources={"wastewatch": WastewatchResource(config_path=str(config_path), lock_wait_s=wait)},
        raise_on_error=False,
    )


def test_a_run_fails_naming_the_writer_that_holds_the_warehouse(sensor_config: Path) -> None:
    warehouse = sensor_config.parent / "warehouse" / "wastewatch.duckdb"
    new_warehouse(warehouse).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(warehouse)], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        # a sensor's tick reads the sources only: it never waits for the lock
        with dg.build_sensor_context(
            resources={"wastewatch": WastewatchResource(config_path=str(sensor_config), lock_wait_s=60)}
        ) as context:
            assert isinstance(new_files_sensor(context), dg.SensorResult)
        result = _published(sensor_config, wait=0.5)
        assert not result.success
        errors = [
            str(getattr(e.event_specific_data, "error", None) or "")
            for e in result.all_events
            if "FAILURE" in e.event_type_value
        ]
        assert any(f"held by another writer, pid {holder.pid}" in e for e in errors), errors
    finally:
        holder.kill()
        holder.wait()
    # once the holder is gone (killed: its lock is stale) the run takes the lock and releases it at the end
    assert _published(sensor_config, wait=5).success
    assert not lock_path(warehouse).exists()
