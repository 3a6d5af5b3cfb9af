"""The CLI's runs build the code location from each `pipelines/defs/` module's `@dg.definitions` functions
(`cli_defs`), not through `load_from_defs_folder` (which adds the component library's schemas for the UI):
both give the same assets, checks, jobs, schedules, sensors and resources, so a run the CLI executes is a run
of the jobs the UI shows."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from pipelines.definitions import cli_defs, defs
from pipelines.defs.partitions import definitions_for
from tests.helpers.config import write_config


def _summary(d: dg.Definitions) -> dict[str, object]:
    graph = d.resolve_asset_graph()
    assets = {
        key.to_user_string(): (
            sorted(p.to_user_string() for p in graph.get(key).parent_keys),
            graph.get(key).group_name,
            graph.get(key).description,
            repr(graph.get(key).partitions_def),
            sorted(graph.get(key).metadata),
        )
        for key in graph.get_all_asset_keys()
    }
    return {
        "assets": assets,
        "checks": sorted(str(k) for k in graph.asset_check_keys),
        "jobs": sorted(
            (j.name, sorted(k.to_user_string() for k in j.asset_layer.selected_asset_keys))
            for j in d.resolve_all_job_defs()
        ),
        "schedules": sorted(s.name for s in d.schedules or []),
        "sensors": sorted(s.name for s in d.sensors or []),
        "resources": sorted(d.resources or {}),
    }


def test_the_clis_definitions_are_the_code_locations(tmp_path: Path) -> None:
    config = write_config(tmp_path, "history_start: 2024-09-02\n")
    with definitions_for(config):
        ui, cli = _summary(defs()), _summary(cli_defs())
    assert cli == ui
    assert {"nightly_ingest", "weekly_report", "daily_alert"} <= {name for name, _ in cli["jobs"]}  # type: ignore[union-attr]
    assert cli["sensors"] == ["new_files_sensor"]
