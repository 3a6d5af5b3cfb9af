"""Evaluating the new-files sensor the way Dagster does, and reading the one run it requests."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from pipelines.defs.ingest.sensors import new_files_sensor
from pipelines.defs.resources import WastewatchResource


def evaluate_sensor(config_path: Path | None, cursor: str | None) -> dg.SensorResult | dg.SkipReason:
    resource = WastewatchResource(config_path=str(config_path) if config_path else "")
    # as Dagster's daemon does: the resource is a context manager (it holds the warehouse lock during runs)
    with dg.build_sensor_context(cursor=cursor, resources={"wastewatch": resource}) as context:
        return new_files_sensor(context)


def requested(result: dg.SensorResult | dg.SkipReason) -> tuple[str, str]:
    assert isinstance(result, dg.SensorResult), result
    [request] = result.run_requests or []
    assert request.tags == {"wastewatch/trigger": "new-files"}
    assert request.partition_key is None
    assert request.run_key and request.run_key == result.cursor
    return request.run_key, result.cursor
