"""Run the Dagster jobs in-process: the CLI and tests execute exactly the jobs Dagster schedules.

`wastewatch ingest` runs the job `nightly_ingest`; `evaluate`, `report` and `run`'s weekly part run
`weekly_report` (all of it, or the part the command asks for), so the UI lists each run under its job's name.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb

from pipelines.config import load_config
from pipelines.definitions import cli_defs
from pipelines.defs.jobs import EVALUATE_SELECTION, INGEST_JOB, REPORT_KEY, WEEKLY_JOB, nightly_assets
from pipelines.defs.partitions import definitions_for, partition_to_window, week_to_partition
from pipelines.defs.resources import WastewatchResource, lend_warehouse
from pipelines.health.coverage import history_start
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


def _definitions(config_path: Path, weeks_from: date | None = None) -> dg.Definitions:
    """The code location, its weekly partitions built from this config's history_start (`weeks_from` when
    the caller knows it) and its resource reading this config."""
    with definitions_for(config_path, weeks_from):
        d = cli_defs()
    resource = WastewatchResource(config_path=str(config_path.resolve()))
    return dg.Definitions(
        assets=d.assets,
        asset_checks=d.asset_checks,
        jobs=d.jobs,
        schedules=d.schedules,
        sensors=d.sensors,
        resources={**(d.resources or {}), "wastewatch": resource},
        executor=d.executor,
        loggers=d.loggers,
        metadata=d.metadata,
    )


def _assets(config_path: Path) -> list[dg.AssetsDefinition]:
    """The code location's assets, their weekly partitions built from this config's history_start."""
    return [a for a in _definitions(config_path).assets or [] if isinstance(a, dg.AssetsDefinition)]


@contextmanager
def _instance(config_path: Path, shared: dg.DagsterInstance | None) -> Iterator[dg.DagsterInstance]:
    """The caller's instance (a command running several jobs shares one), else one for this run."""
    if shared is not None:
        yield shared
        return
    with open_instance(config_path) as instance:
        yield instance


def _execute(
    config_path: Path,
    job: dg.JobDefinition,
    selection: Sequence[dg.AssetKey] | None,
    partition_key: str | None,
    verbose: bool,
    con: duckdb.DuckDBPyConnection | None = None,
    instance: dg.DagsterInstance | None = None,
) -> RunOutcome:
    """Run the named job (all its assets, or `selection` of them): the UI lists the run under its name.
    `con`: the caller's writable connection to the warehouse, which the run uses instead of its own."""
    # the instance `make dev` opens too: the UI lists this run, its materialisations and check results
    with _instance(config_path, instance) as instance, _lent(config_path, con):
        result = job.execute_in_process(
            run_config=None if verbose else QUIET_LOGS,
            instance=instance,
            partition_key=partition_key,
            raise_on_error=False,
            asset_selection=selection,
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


@contextmanager
def _lent(config_path: Path, con: duckdb.DuckDBPyConnection | None) -> Iterator[None]:
    if con is None:
        yield
        return
    with lend_warehouse(load_config(config_path).warehouse_path, con):
        yield


def _one_line(message: str, cls_name: str | None) -> str:
    """An error's message as one redacted line, without the `module.Class: ` prefix Dagster adds."""
    text = " ".join(message.strip().split("\n")[0].split())
    if cls_name and ": " in text and text.split(": ", 1)[0].endswith(cls_name):
        text = text.split(": ", 1)[1]
    return redact(text or cls_name or "unknown error")


def run_ingest(
    config_path: Path,
    verbose: bool = False,
    con: duckdb.DuckDBPyConnection | None = None,
    instance: dg.DagsterInstance | None = None,
) -> RunOutcome:
    """Ingest new files, rebuild marts, publish (the `nightly_ingest` job, less the landed tables no source
    of the config writes). `con` and `instance`: the caller's warehouse connection and Dagster instance."""
    # the job has no weekly asset: the definitions' weeks need not be read from the warehouse's extent
    d = _definitions(config_path, weeks_from=datetime.now(UTC).date())
    job = d.resolve_job_def(INGEST_JOB)
    return _execute(
        config_path, job, nightly_assets(job, load_config(config_path)), None, verbose, con, instance
    )


def run_weekly(
    config_path: Path,
    week: str,
    verbose: bool = False,
    evaluate: bool = True,
    report: bool = True,
    con: duckdb.DuckDBPyConnection | None = None,
    instance: dg.DagsterInstance | None = None,
) -> RunOutcome:
    """Evaluate rules and/or write the report for one ISO week (the `weekly_report` job). `con` and
    `instance`: the caller's warehouse connection (the weeks' start is read through it) and Dagster instance."""
    partition_key = week_to_partition(week)
    weeks_from = None
    if con is not None:
        weeks_from = history_start(load_config(config_path), datetime.now(UTC).date(), con)
    d = _definitions(config_path, weeks_from)
    job = d.resolve_job_def(WEEKLY_JOB)
    assert job.partitions_def is not None
    weeks = job.partitions_def.get_partition_keys()
    if partition_key not in weeks:
        # Dagster would raise DagsterUnknownPartitionError from deep inside the run
        first, last = (partition_to_window(k).label for k in (weeks[0], weeks[-1]))
        return RunOutcome(
            success=False,
            outside=True,
            failures=[
                f"{week} is not a week wastewatch can evaluate: weeks run from {first} (history_start, "
                f"default the earliest data in the warehouse) to {last} (this week)"
            ],
        )
    selection: Sequence[dg.AssetKey] | None = None  # the whole job
    if evaluate and not report:
        selection = sorted(EVALUATE_SELECTION.resolve(d.resolve_asset_graph()))
    elif report and not evaluate:
        selection = [REPORT_KEY]
    return _execute(config_path, job, selection, partition_key, verbose, con, instance)
