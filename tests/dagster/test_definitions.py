"""The Dagster code location's definitions: its asset graph (against a snapshot), pools, checks, jobs,
schedules and sensor, loaded as `dagster dev` loads them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
import yaml

from pipelines.config import load_config
from pipelines.definitions import defs
from pipelines.defs.checks import sql_checks
from pipelines.defs.ingest.assets import INGEST_TABLES, fed_tables
from pipelines.defs.jobs import nightly_assets
from pipelines.defs.resources import WastewatchResource
from pipelines.ingest import ingest
from pipelines.instance import INSTANCE_YAML
from pipelines.transform import nothing_new
from pipelines.transform.publish import publish
from pipelines.warehouse import connect
from rules import Window
from tests.helpers.asset_graph import (
    SNAPSHOT,
    UPDATE_COMMAND,
    UPDATE_ENV,
    asset_graph,
    job_steps,
    read_snapshot,
    snapshot_assets,
    snapshot_job,
    write_snapshot,
)
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FOCUS_SAMPLE, REPO, copy_into

FINDINGS_GPU001 = "findings/gpu001_idle_gpu_instance"


@pytest.fixture(scope="module")
def definitions(tmp_path_factory: pytest.TempPathFactory) -> dg.Definitions:
    # the weeks start at history_start: a config with one, as a deployment has (read when defs() runs)
    config = write_config(tmp_path_factory.mktemp("config"), "history_start: 2023-01-02\n")
    return _built_for(config)


def _asset_defs(d: dg.Definitions) -> list[dg.AssetsDefinition]:
    return [a for a in d.assets or [] if isinstance(a, dg.AssetsDefinition)]


LOAD_WITH_WARNINGS_AS_ERRORS = textwrap.dedent(
    """
    import warnings

    warnings.simplefilter("error", DeprecationWarning)
    warnings.simplefilter("error", PendingDeprecationWarning)
    import dagster as dg

    # Dagster's own lifecycle warnings (public top-level exports in 1.13)
    for name in ("BetaWarning", "PreviewWarning", "SupersessionWarning", "ConfigArgumentWarning"):
        warnings.simplefilter("error", getattr(dg, name))

    # import every module ourselves: `load_from_defs_folder` silences Dagster's warnings while it imports
    import importlib
    import pkgutil

    import pipelines.defs

    for module in pkgutil.walk_packages(pipelines.defs.__path__, "pipelines.defs."):
        importlib.import_module(module.name)
    import pipelines.runner
    from pipelines.definitions import defs

    d = defs()
    dg.Definitions.validate_loadable(d)
    d.resolve_asset_graph()
    jobs = d.resolve_all_job_defs()
    for s in d.schedules or []:
        d.resolve_schedule_def(s.name)
    for s in d.sensors or []:
        d.resolve_sensor_def(s.name)
    print("loaded", len(list(d.resolve_all_asset_specs())), "assets", sorted(j.name for j in jobs))
    """
)


def test_definitions_load_with_deprecation_beta_and_preview_warnings_as_errors() -> None:
    # a fresh interpreter, so module-level decorators run under the filters (pytest has imported them)
    assert all(
        issubclass(getattr(dg, n), Warning)
        for n in ("BetaWarning", "PreviewWarning", "SupersessionWarning", "ConfigArgumentWarning")
    )
    proc = subprocess.run(
        [sys.executable, "-c", LOAD_WITH_WARNINGS_AS_ERRORS],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"},
    )
    assert proc.returncode == 0, proc.stderr
    expected = f"loaded {len(snapshot_assets())} assets ['__ASSET_JOB', 'daily_alert', 'nightly_ingest', 'weekly_report']"
    assert proc.stdout.strip() == expected, proc.stdout + proc.stderr


def test_asset_graph_snapshot(definitions: dg.Definitions) -> None:
    """The asset graph, checks, jobs, schedules and sensors equal tests/dagster/snapshots/asset_graph.json.

    The snapshot is derived from the real `pipelines.definitions.defs()` (tests/helpers/asset_graph.py):
    each asset's group, dependencies and partitions, each asset check and whether it blocks, each job's
    assets, each schedule and sensor. Adding or rewiring an asset (a rule, a mart) changes that file and
    nothing else in the tests; after a deliberate change write it again and review its diff:

        WASTEWATCH_UPDATE_SNAPSHOT=1 pytest tests/dagster/test_definitions.py -k snapshot
    """
    graph = asset_graph(definitions)
    if os.environ.get(UPDATE_ENV) == "1":
        write_snapshot(graph)
    assert graph == read_snapshot(), (
        f"the code location differs from {SNAPSHOT}: if intended, {UPDATE_COMMAND}"
    )
    specs = {s.key.to_user_string(): s for s in definitions.resolve_all_asset_specs()}
    # the weekly assets are partitioned by ISO week starting Monday; the FOCUS export by billing period
    partitioned = sorted(k for k, s in specs.items() if s.partitions_def is not None)
    assert partitioned == sorted([*snapshot_job("weekly_report"), "exports/focus"])
    monthly = specs["exports/focus"].partitions_def
    assert isinstance(monthly, dg.MonthlyPartitionsDefinition)
    assert monthly.get_partition_keys(current_time=datetime(2026, 12, 2, tzinfo=UTC))[-2:] == [
        "2026-11",
        "2026-12",
    ]
    weekly = specs[FINDINGS_GPU001].partitions_def
    assert isinstance(weekly, dg.WeeklyPartitionsDefinition)
    keys = weekly.get_partition_keys(current_time=datetime(2026, 12, 2, tzinfo=UTC))
    assert keys[0] == "2023-01-02" and "2026-11-23" in keys
    assert all(datetime.strptime(k, "%Y-%m-%d").weekday() == 0 for k in keys)


def test_without_config_or_data_the_weeks_are_the_current_one_and_the_schedule_skips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no wastewatch.yaml here, so no warehouse and no data
    monkeypatch.delenv("WASTEWATCH_CONFIG", raising=False)
    d = defs()
    weekly = {s.key.to_user_string(): s for s in d.resolve_all_asset_specs()}[FINDINGS_GPU001].partitions_def
    assert isinstance(weekly, dg.TimeWindowPartitionsDefinition)
    now = datetime.now(UTC)
    this_week = Window.containing(now.date()).start
    assert weekly.get_partition_keys(current_time=now) == [this_week.strftime("%Y-%m-%d")]
    # Monday's tick for last week: nothing to report on, a skip saying why (not a Dagster error)
    schedule = d.resolve_schedule_def("weekly_report_schedule")
    with dg.build_schedule_context(
        scheduled_execution_time=this_week.replace(hour=6, tzinfo=UTC), repository_def=d.get_repository_def()
    ) as context:
        data = schedule.evaluate_tick(context)
    assert not data.run_requests
    assert data.skip_message is not None and "no data before" in data.skip_message


def test_the_weeks_start_at_history_start_read_when_the_definitions_are_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a Wednesday in 2020: the weeks start on its Monday; the config is read when defs() runs, not at import
    config = write_config(tmp_path, "history_start: 2020-03-04\n")
    monkeypatch.setenv("WASTEWATCH_CONFIG", str(config))
    for d in (defs(), _built_for(config)):
        specs = {s.key.to_user_string(): s for s in d.resolve_all_asset_specs()}
        for key in (FINDINGS_GPU001, "reports/weekly_report"):
            weekly = specs[key].partitions_def
            assert isinstance(weekly, dg.TimeWindowPartitionsDefinition)
            keys = weekly.get_partition_keys(current_time=datetime(2026, 12, 2, tzinfo=UTC))
            assert keys[0] == "2020-03-02" and keys[-1] == "2026-11-30" and "2023-01-02" in keys
            assert all(datetime.strptime(k, "%Y-%m-%d").weekday() == 0 for k in keys)


def _built_for(config: Path) -> dg.Definitions:
    from pipelines.defs.partitions import definitions_for

    with definitions_for(config):
        return defs()


def test_every_asset_writing_the_warehouse_runs_in_the_warehouse_pool(definitions: dg.Definitions) -> None:
    pools = {}
    for a in _asset_defs(definitions):
        for spec in a.specs:
            if "duckdb" in spec.kinds:  # writes (or publishes) the DuckDB warehouse
                pools[spec.key.to_user_string()] = a.op.pool
    assert sorted(pools) == snapshot_assets()
    assert set(pools.values()) == {"warehouse"}
    # ... and the instance settings the CLI and `make dev` write hold that pool to one run at a time
    instance = yaml.safe_load(INSTANCE_YAML)
    assert instance["concurrency"]["pools"]["default_limit"] == 1


def test_asset_checks_guard_ingestion_and_reconciliation(definitions: dg.Definitions) -> None:
    checks = {
        (spec.asset_key.to_user_string(), spec.name): spec.blocking
        for a in _asset_defs(definitions)
        for spec in a.check_specs
    }
    assert checks == {
        ("billing_line_items", "no_rejected_files"): False,
        ("billing_line_items", "sources_fresh"): False,
        ("billing_line_items", "billing_reconciled"): True,  # ledger = file = table, per file and period
        ("billing_line_items", "tag_coverage"): False,
        ("billing_line_items", "focus_conformance"): False,  # warns: providers' exports often break FOCUS
        ("gpu_samples", "no_rejected_files"): False,
        ("gpu_samples", "sources_fresh"): False,
        ("gpu_hourly_stats", "no_rejected_files"): False,
        ("gpu_hourly_stats", "sources_fresh"): False,
        ("jobs", "no_rejected_files"): False,
        ("jobs", "sources_fresh"): False,
        ("inventory_hosts", "no_rejected_files"): False,
        ("inventory_hosts", "sources_fresh"): False,
        ("log_groups", "no_rejected_files"): False,
        ("log_groups", "sources_fresh"): False,
        ("storage_objects", "no_rejected_files"): False,
        ("storage_objects", "sources_fresh"): False,
        ("train_steps", "no_rejected_files"): False,
        ("train_steps", "sources_fresh"): False,
        ("cost_hourly", "reconciles_with_billing"): True,  # a broken reconciliation stops the marts
        ("showback", "reconciles_with_billing"): True,  # a cent lost or added stops the report
    }


def test_every_sql_check_file_is_attached_to_the_asset_it_names(definitions: dg.Definitions) -> None:
    attached = {
        (spec.asset_key.to_user_string(), spec.name, spec.blocking)
        for a in _asset_defs(definitions)
        for spec in a.check_specs
    }
    files = {(c.asset, c.name, c.blocking) for c in sql_checks()}
    assert files and files <= attached


def test_jobs_run_in_process_over_the_right_assets(definitions: dg.Definitions) -> None:
    all_assets = _asset_defs(definitions)
    selections = {job.name: job_steps(job, all_assets) for job in definitions.jobs or []}
    assert selections == read_snapshot()["jobs"]
    for name in ("nightly_ingest", "weekly_report", "daily_alert"):
        job = definitions.resolve_job_def(name)
        assert job.executor_def.name == dg.in_process_executor.name == "in_process"
    assert definitions.resolve_job_def("nightly_ingest").partitions_def is None
    assert isinstance(
        definitions.resolve_job_def("weekly_report").partitions_def, dg.WeeklyPartitionsDefinition
    )


def _evaluate(
    definitions: dg.Definitions, name: str, at: datetime, config: Path | None = None
) -> dg.ScheduleExecutionData:
    schedule = definitions.resolve_schedule_def(name)
    resources = {"wastewatch": WastewatchResource(config_path=str(config or ""))}
    with dg.build_schedule_context(
        scheduled_execution_time=at, repository_def=definitions.get_repository_def(), resources=resources
    ) as context:
        return schedule.evaluate_tick(context)


def _tick(
    definitions: dg.Definitions, name: str, at: datetime, config: Path | None = None
) -> list[dg.RunRequest]:
    data = _evaluate(definitions, name, at, config)
    assert data.skip_message is None
    return list(data.run_requests or [])


def test_nightly_ingest_schedule(definitions: dg.Definitions, tmp_path: Path) -> None:
    schedule = definitions.resolve_schedule_def("nightly_ingest_schedule")
    assert (schedule.cron_schedule, schedule.execution_timezone, schedule.job_name) == (
        "0 2 * * *",
        "UTC",
        "nightly_ingest",
    )
    night = datetime(2026, 11, 25, 2, tzinfo=UTC)
    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "billing")
    config = write_config(tmp_path, "sources:\n  - {name: focus, kind: focus, uri: landing/billing/}\n")
    [request] = _tick(definitions, "nightly_ingest_schedule", night, config)  # no warehouse yet: a run
    assert request.partition_key is None
    # the run leaves out the landed tables no configured source writes, as `wastewatch ingest` does
    job = definitions.resolve_job_def("nightly_ingest")
    unfed = {dg.AssetKey(t) for t in INGEST_TABLES} - {dg.AssetKey("billing_line_items")}
    assert request.asset_selection is not None
    assert set(request.asset_selection) == job.asset_layer.selected_asset_keys - unfed
    assert {
        dg.AssetKey("billing_line_items"),
        dg.AssetKey("cost_hourly"),
        dg.AssetKey("published_warehouse"),
    } <= set(request.asset_selection)
    # after a full run with nothing new since, the tick skips, saying why (pipelines/transform/nothing_new.py)
    loaded = load_config(config)
    con = new_warehouse(loaded.warehouse_path)
    try:
        ingest(con, loaded)
        nothing_new.record_state(con, loaded)
    finally:
        con.close()
    publish(loaded)
    data = _evaluate(definitions, "nightly_ingest_schedule", night, config)
    assert data.skip_message is not None and "nothing new since the run of" in data.skip_message
    # a new file: a run
    (tmp_path / "landing" / "billing" / "more.csv").write_text(
        FOCUS_SAMPLE.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8"
    )
    assert len(_tick(definitions, "nightly_ingest_schedule", night, config)) == 1


def test_a_nightly_ingest_runs_the_landed_tables_the_sources_write_and_everything_after_them(
    definitions: dg.Definitions, tmp_path: Path
) -> None:
    job = definitions.resolve_job_def("nightly_ingest")
    config = load_config(
        write_config(
            tmp_path,
            """
            sources:
              - {name: focus, kind: focus, uri: landing/billing/}
              - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
              - {name: dcgm, kind: dcgm, uri: landing/dcgm/}
              - {name: slurm, kind: slurm_sacct, uri: landing/jobs/, enabled: false}
            """,
        )
    )
    # two kinds write gpu_samples; a disabled source is not read, so its table `jobs` has nothing to load
    assert fed_tables(config) == ("billing_line_items", "gpu_samples")
    selected = nightly_assets(job, config)
    assert selected is not None
    left_out = job.asset_layer.selected_asset_keys - set(selected)
    assert left_out == {
        dg.AssetKey(t) for t in INGEST_TABLES if t not in ("billing_line_items", "gpu_samples")
    }
    # every mart, the retention and the publish stay: the marts read the empty tables the schema created
    assert {
        dg.AssetKey("gpu_hours"),
        dg.AssetKey("jobs_enriched"),
        dg.AssetKey("published_warehouse"),
    } <= set(selected)


@pytest.mark.parametrize(
    ("tick", "week_that_ended"),
    [
        (datetime(2026, 11, 30, 6, tzinfo=UTC), "2026-11-23"),  # 2026-W48
        (datetime(2027, 1, 4, 6, tzinfo=UTC), "2026-12-28"),  # 2026-W53: 2026 has 53 ISO weeks
    ],
)
def test_weekly_report_schedule_reports_the_week_that_just_ended(
    definitions: dg.Definitions, tick: datetime, week_that_ended: str
) -> None:
    schedule = definitions.resolve_schedule_def("weekly_report_schedule")
    # Monday 06:00 UTC (test_dagster_dev.py checks the next tick after Wednesday 2026-11-25 on the webserver)
    assert (schedule.cron_schedule, schedule.execution_timezone, schedule.job_name) == (
        "0 6 * * 1",
        "UTC",
        "weekly_report",
    )
    [request] = _tick(definitions, "weekly_report_schedule", tick)
    # not the week that started six hours ago: its data is not in yet
    assert request.partition_key == week_that_ended


def test_new_files_sensor_is_defined_stopped_for_the_ingest_job(definitions: dg.Definitions) -> None:
    sensor = definitions.resolve_sensor_def("new_files_sensor")
    assert sensor.job_name == "nightly_ingest"
    # a fresh `dagster dev` must not start ingesting on its own
    assert sensor.default_status == dg.DefaultSensorStatus.STOPPED
    assert [s.name for s in definitions.sensors or []] == ["new_files_sensor"]


def test_workspace_yaml_loads_the_module_pyproject_names() -> None:
    workspace = yaml.safe_load((REPO / "workspace.yaml").read_text())
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    [entry] = workspace["load_from"]
    module = entry["python_module"]
    assert module["module_name"] == pyproject["tool"]["dg"]["project"]["code_location_target_module"]
    assert module["module_name"] == "pipelines.definitions"
    assert module["location_name"] == pyproject["tool"]["dg"]["project"]["code_location_name"] == "wastewatch"


def test_the_marts_step_builds_each_mart_after_the_marts_it_reads() -> None:
    from pipelines.defs.transform.assets import mart_deps
    from pipelines.marts.registry import MARTS
    from pipelines.transform.build import build_order

    order = build_order()
    assert sorted(order) == sorted(MARTS)
    for position, name in enumerate(order):
        assert all(order.index(dep) < position for dep in mart_deps(name) if dep in MARTS), name
    assert order.index("cost_hourly") < order.index("gpu_billed_hours") < order.index("gpu_job_spans")


def test_a_selection_of_some_marts_builds_only_those(tmp_path: Path) -> None:
    """The landed tables and the marts are one step each; a run of part of the job builds only its part."""
    from pipelines.runner import _definitions
    from pipelines.warehouse import table_exists

    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "billing")
    config = write_config(tmp_path, "sources:\n  - {name: focus, kind: focus, uri: landing/billing/}\n")
    job = _definitions(config).resolve_job_def("nightly_ingest")
    wanted = [dg.AssetKey("billing_line_items"), dg.AssetKey("cost_hourly")]
    result = job.execute_in_process(asset_selection=wanted, instance=dg.DagsterInstance.ephemeral())
    assert result.success
    built = sorted(e.asset_key.to_user_string() for e in result.get_asset_materialization_events())
    assert built == ["billing_line_items", "cost_hourly"]
    steps = sorted({e.step_key for e in result.all_events if e.step_key})
    assert steps == ["landed_tables", "marts"]
    checks = sorted(
        (e.asset_key.to_user_string(), e.check_name) for e in result.get_asset_check_evaluations()
    )
    assert ("cost_hourly", "reconciles_with_billing") in checks
    assert all(asset in ("billing_line_items", "cost_hourly") for asset, _ in checks)
    con = connect(load_config(config).warehouse_path, read_only=True)
    try:
        assert table_exists(con, "cost_hourly") and not table_exists(con, "gpu_hours")
        assert con.execute("select count(*) from billing_line_items").fetchone() == (1000,)
    finally:
        con.close()
