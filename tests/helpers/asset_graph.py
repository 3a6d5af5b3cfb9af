"""The Dagster code location as data, derived from `pipelines.definitions.defs()`, and its committed snapshot.

`asset_graph` lists every asset with its group, dependencies and partitions, the asset checks (and whether
they block), each job's assets, the schedules and the sensors. tests/dagster/snapshots/asset_graph.json
holds a reviewed copy: tests/dagster/test_definitions.py compares the two (its snapshot test says how to
write the file again), and the tests that need the list of assets or a job's assets read it from there
instead of keeping it by hand, so adding a rule or a mart changes one generated file.
"""

from __future__ import annotations

import json
from typing import Any

import dagster as dg

from tests.helpers.paths import REPO

SNAPSHOT = REPO / "tests" / "dagster" / "snapshots" / "asset_graph.json"
UPDATE_ENV = "WASTEWATCH_UPDATE_SNAPSHOT"
UPDATE_COMMAND = f"{UPDATE_ENV}=1 pytest tests/dagster/test_definitions.py -k snapshot"


def _partitions(p: dg.PartitionsDefinition | None) -> str | None:
    if p is None:
        return None
    if isinstance(p, dg.TimeWindowPartitionsDefinition):
        # the start is history_start (the config's, or the earliest data): not part of the code location
        return f"{p.cron_schedule} ({p.timezone}) from history_start, end offset {p.end_offset}"
    return type(p).__name__


def job_steps(job: Any, assets: list[dg.AssetsDefinition]) -> list[str]:
    """An asset job's assets; an op job's ops, as `op:<name>` (the daily alert's job runs an op)."""
    if hasattr(job, "selection"):
        return sorted(k.to_user_string() for k in job.selection.resolve(assets))
    return sorted(f"op:{node.name}" for node in job.graph.nodes)


def asset_graph(d: dg.Definitions) -> dict[str, Any]:
    """What the code location defines, as sorted plain data (the snapshot's content)."""
    assets = [a for a in d.assets or [] if isinstance(a, dg.AssetsDefinition)]
    specs = sorted(d.resolve_all_asset_specs(), key=lambda s: s.key.to_user_string())
    checks: dict[str, dict[str, dict[str, bool]]] = {}
    for a in assets:
        for spec in a.check_specs:
            checks.setdefault(spec.asset_key.to_user_string(), {})[spec.name] = {"blocking": spec.blocking}
    return {
        "assets": {
            s.key.to_user_string(): {
                "group": s.group_name,
                "deps": sorted(dep.asset_key.to_user_string() for dep in s.deps),
                "partitions": _partitions(s.partitions_def),
            }
            for s in specs
        },
        "asset_checks": {key: dict(sorted(by_name.items())) for key, by_name in sorted(checks.items())},
        "jobs": {job.name: job_steps(job, assets) for job in sorted(d.jobs or [], key=lambda j: j.name)},
        "schedules": {
            s.name: {"cron": s.cron_schedule, "timezone": s.execution_timezone, "job": s.job_name}
            for s in sorted(d.schedules or [], key=lambda s: s.name)
        },
        "sensors": {
            s.name: {"job": s.job_name, "default_status": s.default_status.value}
            for s in sorted(d.sensors or [], key=lambda s: s.name)
        },
    }


def write_snapshot(graph: dict[str, Any]) -> None:
    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    SNAPSHOT.write_text(json.dumps(graph, indent=2) + "\n", encoding="utf-8")


def read_snapshot() -> dict[str, Any]:
    assert SNAPSHOT.is_file(), f"{SNAPSHOT} is missing: write it with {UPDATE_COMMAND}"
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def snapshot_assets() -> list[str]:
    """Every asset key of the code location (as `a/b` strings), sorted, from the snapshot."""
    return sorted(read_snapshot()["assets"])


def snapshot_job(name: str) -> list[str]:
    """The asset keys job `name` materialises, sorted, from the snapshot."""
    return read_snapshot()["jobs"][name]
