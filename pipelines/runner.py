"""Run the Dagster jobs in-process: the CLI and tests execute exactly the asset graph Dagster schedules."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg

from pipelines.definitions import defs
from pipelines.defs.jobs import INGEST_SELECTION, WEEKLY_SELECTION
from pipelines.defs.partitions import (
    definitions_for,
    partition_to_window,
    week_to_partition,
    weekly_partitions,
)
from pipelines.defs.resources import WastewatchResource
from pipelines.instance import open_instance, run_tags
from pipelines.redact import redact

# Without -v Dagster's console prints nothing (a step's failure would come with its stack trace): the CLI
# prints each failure as one line and each warning an asset logged as `warning: ...` (RunOutcome.warnings)
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


@dataclass
class RunOutcome:
    success: bool
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)  # asset key -> metadata values
    failures: list[str] = field(default_factory=list)  # one redacted line each: the step and the cause
    warnings: list[str] = field(default_factory=list)  # what the assets logged at WARNING or above, redacted
    busy: bool = False  # a step or the run's resources failed because another writer holds the warehouse
    outside: bool = False  # the week is not one wastewatch evaluates (before history_start, or to come)

    def value(self, asset: str, key: str, default: Any = None) -> Any:
        return self.metadata.get(asset, {}).get(key, default)


def _assets(config_path: Path) -> list[dg.AssetsDefinition]:
    """The code location's assets, their weekly partitions built from this config's history_start."""
    with definitions_for(config_path):
        return [a for a in defs().assets or [] if isinstance(a, dg.AssetsDefinition)]


def _materialize(
    config_path: Path, selection: dg.AssetSelection, partition_key: str | None, verbose: bool
) -> RunOutcome:
    # the instance `make dev` opens too: the UI lists this run, its materialisations and check results
    with open_instance(config_path) as instance:
        result = dg.materialize(
            _assets(config_path),
            selection=selection,
            resources={"wastewatch": WastewatchResource(config_path=str(config_path.resolve()))},
            partition_key=partition_key,
            run_config=None if verbose else QUIET_LOGS,
            raise_on_error=False,
            instance=instance,
            tags=run_tags(),
        )
        logged = instance.all_logs(result.run_id)
    outcome = RunOutcome(success=result.success)
    for entry in logged:
        if entry.dagster_event is None and entry.level >= logging.WARNING:
            line = redact(" ".join(entry.user_message.split()))
            if line and line not in outcome.warnings:
                outcome.warnings.append(line)
    for event in result.get_asset_materialization_events():
        mat = event.materialization
        assert mat is not None
        outcome.metadata[mat.asset_key.to_user_string()] = {k: v.value for k, v in mat.metadata.items()}
    for event in result.all_events:
        # step failures, and the engine's own errors (e.g. the resource could not be initialised)
        err = getattr(event.event_specific_data, "error", None)
        if err is None or "FAILURE" not in event.event_type_value:
            continue
        while err.cause is not None:  # Dagster wraps the asset's own exception; report that one
            err = err.cause
        outcome.busy = outcome.busy or err.cls_name == "WarehouseBusy"
        line = _one_line(err.message, err.cls_name)
        where = event.step_key or "run"
        if where == "run" and any(f.endswith(f": {line}") for f in outcome.failures):
            continue  # the run failed because that step did: said once
        if f"{where}: {line}" not in outcome.failures:
            outcome.failures.append(f"{where}: {line}")
    if not outcome.success and not outcome.failures:
        outcome.failures.append("the run failed (see the Dagster log with -v)")
    return outcome


def _one_line(message: str, cls_name: str | None) -> str:
    """An error's message as one redacted line, without the `module.Class: ` prefix Dagster adds."""
    text = " ".join(message.strip().split("\n")[0].split())
    if cls_name and ": " in text and text.split(": ", 1)[0].endswith(cls_name):
        text = text.split(": ", 1)[1]
    return redact(text or cls_name or "unknown error")


def run_ingest(config_path: Path, verbose: bool = False) -> RunOutcome:
    """Ingest new files, rebuild marts, publish (the `nightly_ingest` job)."""
    return _materialize(config_path, INGEST_SELECTION, None, verbose)


def run_weekly(
    config_path: Path, week: str, verbose: bool = False, evaluate: bool = True, report: bool = True
) -> RunOutcome:
    """Evaluate rules and/or write the report for one ISO week (the `weekly_report` job)."""
    partition_key = week_to_partition(week)
    with definitions_for(config_path):
        weeks = weekly_partitions().get_partition_keys()
    if partition_key not in weeks:
        # Dagster would raise DagsterUnknownPartitionError from deep inside materialize()
        first, last = (partition_to_window(k).label for k in (weeks[0], weeks[-1]))
        return RunOutcome(
            success=False,
            outside=True,
            failures=[
                f"{week} is not a week wastewatch can evaluate: weeks run from {first} (history_start, "
                f"default the earliest data in the warehouse) to {last} (this week)"
            ],
        )
    if evaluate and report:
        selection = WEEKLY_SELECTION
    elif evaluate:
        selection = dg.AssetSelection.groups("rules", "advice")
    else:
        selection = dg.AssetSelection.assets(["reports", "weekly_report"])
    return _materialize(config_path, selection, partition_key, verbose)
