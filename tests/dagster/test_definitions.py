"""The Dagster code location: definitions, schedules, the new-files sensor, real runs and `dagster dev`.

Everything runs for real: the definitions are loaded as `dagster dev` loads them, the sensor reads a real
project folder, the jobs materialise real DuckDB files from the real H200 capture, and `dagster dev`
serves its UI and GraphQL API on a free local port.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml

from pipelines.config import load_config
from pipelines.definitions import defs
from pipelines.defs.ingest.sensors import new_files_sensor
from pipelines.defs.resources import CONFIG_ENV, WastewatchResource
from pipelines.runner import RunOutcome, run_ingest, run_weekly
from tests.helpers.config import write_config
from tests.helpers.dagster_dev import DagsterDev, group_members
from tests.helpers.paths import FOCUS_SAMPLE, H200, REPO, copy_into

H200_CAPTURE = H200 / "nvidia_smi_query_gpu.csv"
FINDINGS_GPU001 = "findings/gpu001_idle_gpu_instance"
FINDINGS_GPU = [
    "findings/gpu002_overprovisioned_job",
    "findings/gpu003_input_starved_job",
    "findings/gpu004_failed_job_and_zombie",
]
FINDINGS_COST = [
    "findings/cost001_unattributed_spend",
    "findings/cost002_budget_overrun",
    "findings/cost003_spend_anomaly",
]
FINDINGS_STO = [
    "findings/sto001_orphaned_checkpoint",
    "findings/sto002_duplicate_dataset",
    "findings/sto003_cold_checkpoint_tiering",
    "findings/sto004_incomplete_multipart_upload",
]
STORAGE_MARTS = [
    "storage_checkpoints",
    "storage_dataset_matches",
    "storage_datasets",
    "storage_incomplete_uploads",
    "storage_objects_current",
    "storage_prices",
]
ALL_ASSETS = [
    "billing_line_items",
    "cost_hourly",
    "findings/cost001_unattributed_spend",
    "findings/cost002_budget_overrun",
    "findings/cost003_spend_anomaly",
    "findings/gpu001_idle_gpu_instance",
    "findings/gpu002_overprovisioned_job",
    "findings/gpu003_input_starved_job",
    "findings/gpu004_failed_job_and_zombie",
    *FINDINGS_STO,
    "gpu_hours",
    "gpu_job_hours",
    "gpu_samples",
    "inventory_hosts",
    "jobs",
    "jobs_enriched",
    "published_warehouse",
    "reports/weekly_report",
    "resources",
    *STORAGE_MARTS[:4],
    "storage_objects",
    *STORAGE_MARTS[4:],
]


@pytest.fixture(scope="module")
def definitions() -> dg.Definitions:
    return defs()


def _asset_defs(d: dg.Definitions) -> list[dg.AssetsDefinition]:
    return [a for a in d.assets or [] if isinstance(a, dg.AssetsDefinition)]


# --- 1. the definitions -----------------------------------------------------------------------------

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
    expected = "loaded 29 assets ['__ASSET_JOB', 'nightly_ingest', 'weekly_report']"
    assert proc.stdout.strip() == expected, proc.stdout + proc.stderr


def test_asset_graph_snapshot(definitions: dg.Definitions) -> None:
    specs = {s.key.to_user_string(): s for s in definitions.resolve_all_asset_specs()}
    assert sorted(specs) == ALL_ASSETS
    assert {k: s.group_name for k, s in specs.items()} == {
        "billing_line_items": "ingest",
        "gpu_samples": "ingest",
        "jobs": "ingest",
        "inventory_hosts": "ingest",
        "storage_objects": "ingest",
        **dict.fromkeys(STORAGE_MARTS, "transform"),
        "resources": "transform",
        "cost_hourly": "transform",
        "gpu_hours": "transform",
        "gpu_job_hours": "transform",
        "jobs_enriched": "transform",
        FINDINGS_GPU001: "rules",
        **dict.fromkeys(FINDINGS_GPU, "rules"),
        **dict.fromkeys(FINDINGS_COST, "rules"),
        **dict.fromkeys(FINDINGS_STO, "rules"),
        "reports/weekly_report": "reports",
        "published_warehouse": "reports",
    }
    deps = {k: sorted(d.asset_key.to_user_string() for d in s.deps) for k, s in specs.items()}
    assert deps == {
        "billing_line_items": [],
        "gpu_samples": [],
        "jobs": [],
        "inventory_hosts": [],
        "storage_objects": [],
        "storage_objects_current": ["storage_objects"],
        "storage_prices": ["billing_line_items", "resources", "storage_objects_current"],
        "storage_checkpoints": ["jobs", "storage_objects_current", "storage_prices"],
        "storage_datasets": ["resources", "storage_objects_current", "storage_prices"],
        "storage_dataset_matches": ["storage_objects_current", "storage_prices"],
        "storage_incomplete_uploads": ["storage_objects", "storage_prices"],
        FINDINGS_STO[0]: ["storage_checkpoints"],
        FINDINGS_STO[1]: ["storage_dataset_matches", "storage_datasets"],
        FINDINGS_STO[2]: ["storage_checkpoints", "storage_prices"],
        FINDINGS_STO[3]: ["storage_incomplete_uploads"],
        "resources": ["billing_line_items", "gpu_samples", "inventory_hosts", "jobs"],
        "cost_hourly": ["billing_line_items"],
        "gpu_hours": ["gpu_job_hours"],
        "gpu_job_hours": [
            "billing_line_items",
            "cost_hourly",
            "gpu_samples",
            "inventory_hosts",
            "jobs",
            "resources",
        ],
        "jobs_enriched": [
            "billing_line_items",
            "gpu_job_hours",
            "gpu_samples",
            "inventory_hosts",
            "jobs",
            "resources",
        ],
        FINDINGS_GPU001: ["cost_hourly", "gpu_job_hours", "resources"],
        **dict.fromkeys(FINDINGS_GPU[:2], ["cost_hourly", "gpu_job_hours", "jobs_enriched", "resources"]),
        FINDINGS_GPU[2]: [
            "cost_hourly",
            "gpu_job_hours",
            "jobs_enriched",
            "resources",
            "storage_checkpoints",
        ],
        FINDINGS_COST[0]: ["cost_hourly", "jobs_enriched", "resources"],
        FINDINGS_COST[1]: ["cost_hourly"],
        FINDINGS_COST[2]: ["cost_hourly"],
        "reports/weekly_report": sorted(
            [
                "cost_hourly",
                "gpu_hours",
                "resources",
                FINDINGS_GPU001,
                *FINDINGS_GPU,
                *FINDINGS_COST,
                *FINDINGS_STO,
            ]
        ),
        "published_warehouse": sorted(
            ["cost_hourly", "gpu_hours", "gpu_job_hours", "jobs_enriched", "resources", *STORAGE_MARTS]
        ),
    }
    # only the weekly assets are partitioned, by ISO week starting Monday
    partitioned = sorted(k for k, s in specs.items() if s.partitions_def is not None)
    assert partitioned == sorted(
        [FINDINGS_GPU001, *FINDINGS_GPU, *FINDINGS_COST, *FINDINGS_STO, "reports/weekly_report"]
    )
    weekly = specs[FINDINGS_GPU001].partitions_def
    assert isinstance(weekly, dg.WeeklyPartitionsDefinition)
    keys = weekly.get_partition_keys(current_time=datetime(2026, 12, 2, tzinfo=UTC))
    assert keys[0] == "2023-01-02" and "2026-11-23" in keys
    assert all(datetime.strptime(k, "%Y-%m-%d").weekday() == 0 for k in keys)


def test_every_asset_writing_the_warehouse_runs_in_the_warehouse_pool(definitions: dg.Definitions) -> None:
    pools = {}
    for a in _asset_defs(definitions):
        for spec in a.specs:
            if "duckdb" in spec.kinds:  # writes (or publishes) the DuckDB warehouse
                pools[spec.key.to_user_string()] = a.op.pool
    assert sorted(pools) == ALL_ASSETS
    assert set(pools.values()) == {"warehouse"}
    # ... and the instance settings hold that pool to one run at a time
    instance = yaml.safe_load((REPO / "dagster.yaml").read_text())
    assert instance["concurrency"]["pools"]["default_limit"] == 1


def test_asset_checks_guard_ingestion_and_reconciliation(definitions: dg.Definitions) -> None:
    checks = {
        (spec.asset_key.to_user_string(), spec.name): spec.blocking
        for a in _asset_defs(definitions)
        for spec in a.check_specs
    }
    assert checks == {
        ("billing_line_items", "no_rejected_files"): False,
        ("billing_line_items", "billing_reconciled"): True,  # ledger = file = table, per file and period
        ("billing_line_items", "tag_coverage"): False,
        ("gpu_samples", "no_rejected_files"): False,
        ("jobs", "no_rejected_files"): False,
        ("inventory_hosts", "no_rejected_files"): False,
        ("storage_objects", "no_rejected_files"): False,
        ("cost_hourly", "reconciles_with_billing"): True,  # a broken reconciliation stops the marts
    }


def test_jobs_run_in_process_over_the_right_assets(definitions: dg.Definitions) -> None:
    all_assets = _asset_defs(definitions)
    selections = {
        job.name: sorted(k.to_user_string() for k in job.selection.resolve(all_assets))
        for job in definitions.jobs or []
    }
    assert selections == {
        "nightly_ingest": [
            "billing_line_items",
            "cost_hourly",
            "gpu_hours",
            "gpu_job_hours",
            "gpu_samples",
            "inventory_hosts",
            "jobs",
            "jobs_enriched",
            "published_warehouse",
            "resources",
            *STORAGE_MARTS[:4],
            "storage_objects",
            *STORAGE_MARTS[4:],
        ],
        "weekly_report": sorted(
            [FINDINGS_GPU001, *FINDINGS_GPU, *FINDINGS_COST, *FINDINGS_STO, "reports/weekly_report"]
        ),
    }
    for name in ("nightly_ingest", "weekly_report"):
        job = definitions.resolve_job_def(name)
        assert job.executor_def.name == dg.in_process_executor.name == "in_process"
    assert definitions.resolve_job_def("nightly_ingest").partitions_def is None
    assert isinstance(
        definitions.resolve_job_def("weekly_report").partitions_def, dg.WeeklyPartitionsDefinition
    )


def _tick(definitions: dg.Definitions, name: str, at: datetime) -> list[dg.RunRequest]:
    schedule = definitions.resolve_schedule_def(name)
    with dg.build_schedule_context(
        scheduled_execution_time=at, repository_def=definitions.get_repository_def()
    ) as context:
        data = schedule.evaluate_tick(context)
    assert data.skip_message is None
    return list(data.run_requests or [])


def test_nightly_ingest_schedule(definitions: dg.Definitions) -> None:
    schedule = definitions.resolve_schedule_def("nightly_ingest_schedule")
    assert (schedule.cron_schedule, schedule.execution_timezone, schedule.job_name) == (
        "0 2 * * *",
        "UTC",
        "nightly_ingest",
    )
    [request] = _tick(definitions, "nightly_ingest_schedule", datetime(2026, 11, 25, 2, tzinfo=UTC))
    assert request.partition_key is None


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
    # Monday 06:00 UTC (the next tick after Wednesday 2026-11-25 is checked on the running webserver below)
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


# --- 2. the new-files sensor ------------------------------------------------------------------------


@pytest.fixture
def sensor_config(tmp_path: Path) -> Path:
    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "billing")
    (tmp_path / "landing" / "telemetry").mkdir(parents=True)
    return write_config(
        tmp_path,
        """
        sources:
          - {name: focus, kind: focus, uri: landing/billing/}
          - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
        """,
    )


def _evaluate_sensor(config_path: Path | None, cursor: str | None) -> dg.SensorResult | dg.SkipReason:
    resource = WastewatchResource(config_path=str(config_path) if config_path else "")
    context = dg.build_sensor_context(cursor=cursor, resources={"wastewatch": resource})
    return new_files_sensor(context)


def _requested(result: dg.SensorResult | dg.SkipReason) -> tuple[str, str]:
    assert isinstance(result, dg.SensorResult), result
    [request] = result.run_requests or []
    assert request.tags == {"wastewatch/trigger": "new-files"}
    assert request.partition_key is None
    assert request.run_key and request.run_key == result.cursor
    return request.run_key, result.cursor


def test_sensor_requests_a_run_once_per_change_of_the_landing_folders(sensor_config: Path) -> None:
    first_key, cursor = _requested(_evaluate_sensor(sensor_config, None))

    same = _evaluate_sensor(sensor_config, cursor)
    assert isinstance(same, dg.SkipReason)
    assert same.skip_message == "no change in 1 source file(s)"
    # the fingerprint is a function of the files, not of the evaluation
    assert _requested(_evaluate_sensor(sensor_config, None))[0] == first_key

    # a rewritten file (new modification time) is a change
    billing = sensor_config.parent / "landing" / "billing" / FOCUS_SAMPLE.name
    st = billing.stat()
    os.utime(billing, ns=(st.st_atime_ns, st.st_mtime_ns + 60_000_000_000))
    touched_key, cursor = _requested(_evaluate_sensor(sensor_config, cursor))
    assert touched_key != first_key

    # a new telemetry file is a change; the skip message then counts both sources' files
    copy_into(H200_CAPTURE, sensor_config.parent / "landing" / "telemetry", "h200-node_2026-11-30.csv")
    added_key, cursor = _requested(_evaluate_sensor(sensor_config, cursor))
    assert added_key not in (first_key, touched_key)
    again = _evaluate_sensor(sensor_config, cursor)
    assert isinstance(again, dg.SkipReason) and again.skip_message == "no change in 2 source file(s)"


def test_sensor_ignores_files_the_readers_do_not_pick_up(sensor_config: Path) -> None:
    _, cursor = _requested(_evaluate_sensor(sensor_config, None))
    landing = sensor_config.parent / "landing" / "billing"
    (landing / "README.md").write_text("notes, not a bill\n")
    (landing / ".partial.csv").write_text("in flight\n")
    result = _evaluate_sensor(sensor_config, cursor)
    assert isinstance(result, dg.SkipReason), result


def test_sensor_watches_s3_sources_by_key_size_and_etag(tmp_path: Path, s3_server: str) -> None:
    """An s3:// source is listed (moto's server on 127.0.0.1; nothing downloaded): a new or rewritten
    object requests a run once; an unreachable endpoint is a skip with the reason, not a change."""
    import uuid

    import boto3

    bucket = f"sensor-{uuid.uuid4().hex[:8]}"
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="billing/focus.csv", Body=FOCUS_SAMPLE.read_bytes())
    s3.put_object(Bucket=bucket, Key="billing/notes.md", Body=b"not a bill")
    config = write_config(
        tmp_path,
        f"""
        sources:
          - {{name: remote, kind: focus, uri: 's3://{bucket}/billing/', endpoint_url: '{s3_server}', region: us-east-1}}
        """,
    )
    first, cursor = _requested(_evaluate_sensor(config, None))
    same = _evaluate_sensor(config, cursor)
    assert isinstance(same, dg.SkipReason) and same.skip_message == "no change in 1 source file(s)"
    assert not (tmp_path / "warehouse").exists() or not any((tmp_path / "warehouse").rglob("focus.csv"))

    # the same key rewritten with other bytes (same size would not matter: the ETag changes)
    body = FOCUS_SAMPLE.read_bytes().replace(b"SunBird", b"SunBirb")
    s3.put_object(Bucket=bucket, Key="billing/focus.csv", Body=body)
    rewritten, cursor = _requested(_evaluate_sensor(config, cursor))
    assert rewritten != first
    s3.put_object(Bucket=bucket, Key="billing/2026-12/focus.csv", Body=body)
    added, cursor = _requested(_evaluate_sensor(config, cursor))
    assert added not in (first, rewritten)

    (tmp_path / "down").mkdir()
    down = write_config(
        tmp_path / "down",
        f"""
        sources:
          - {{name: remote, kind: focus, uri: 's3://{bucket}/billing/', endpoint_url: 'http://127.0.0.1:9', region: us-east-1}}
        """,
    )
    result = _evaluate_sensor(down, cursor)
    assert isinstance(result, dg.SkipReason), result
    assert "remote could not be listed" in (result.skip_message or "")


def test_sensor_reads_the_config_from_the_environment(
    sensor_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFIG_ENV, str(sensor_config))
    key, _ = _requested(_evaluate_sensor(None, None))
    assert key == _requested(_evaluate_sensor(sensor_config, None))[0]


def test_sensor_skips_with_the_reason_when_the_config_is_missing_or_invalid(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "wastewatch.yaml"
    result = _evaluate_sensor(missing, None)
    assert isinstance(result, dg.SkipReason)
    message = result.skip_message or ""
    assert message.startswith(f"{missing}: configuration file not found"), message

    # a typo in the file: the reason names the file, the line and the key (and no run is requested)
    broken = write_config(tmp_path, "warehouse: w.duckdb\nsorces: []\n")
    result = _evaluate_sensor(broken, "some-cursor")
    assert isinstance(result, dg.SkipReason)
    message = result.skip_message or ""
    assert message.startswith(f"{broken}:2:") and "sorces" in message and "unknown key" in message, message


# --- 3. real materialisation ------------------------------------------------------------------------

FOCUS_COLUMNS = [
    "BillingAccountId", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart",
    "ChargePeriodEnd", "ChargeCategory", "ChargeFrequency", "BilledCost", "EffectiveCost", "ListCost",
    "ConsumedQuantity", "ConsumedUnit", "ProviderName", "ResourceId", "ResourceName", "ResourceType",
    "ServiceCategory", "ServiceName", "RegionId", "SubAccountId", "SkuPriceDetails", "Tags",
]  # fmt: skip


@dataclass(frozen=True)
class Instance:
    resource_id: str
    host: str
    instance_type: str
    billed: Decimal  # per hour
    effective: Decimal  # per hour (a savings plan: less than billed)


# the same real capture stands for both hosts: an 8-GPU p5e reports 1 GPU, a 1-GPU p5 reports its one
P5E = Instance("i-0e200000000000001", "h200-node", "p5e.48xlarge", Decimal("40.00"), Decimal("32.00"))
P5 = Instance("i-0e200000000000002", "h200-solo", "p5.4xlarge", Decimal("6.00"), Decimal("5.00"))
BILLED_FROM = datetime(2026, 11, 29, 22)  # Sunday 22:00 UTC: 2 hours in 2026-W48, 3 hours in 2026-W49
BILLED_HOURS = 5


def write_focus_csv(path: Path, instances: list[Instance], start: datetime, hours: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, FOCUS_COLUMNS)
        w.writeheader()
        for inst in instances:
            for h in range(hours):
                s = start + timedelta(hours=h)
                w.writerow(
                    {
                        "BillingAccountId": "111122223333",
                        "BillingCurrency": "USD",
                        "BillingPeriodStart": "2026-11-01 00:00:00",
                        "BillingPeriodEnd": "2026-12-01 00:00:00",
                        "ChargePeriodStart": f"{s:%Y-%m-%d %H:%M:%S}",
                        "ChargePeriodEnd": f"{s + timedelta(hours=1):%Y-%m-%d %H:%M:%S}",
                        "ChargeCategory": "Usage",
                        "ChargeFrequency": "Usage-Based",
                        "BilledCost": f"{inst.billed:.6f}",
                        "EffectiveCost": f"{inst.effective:.6f}",
                        "ListCost": f"{inst.billed * Decimal('1.1'):.6f}",
                        "ConsumedQuantity": "1",
                        "ConsumedUnit": "Hours",
                        "ProviderName": "AWS",
                        "ResourceId": inst.resource_id,
                        "ResourceName": "",
                        "ResourceType": "Instance",
                        "ServiceCategory": "Compute",
                        "ServiceName": "Amazon Elastic Compute Cloud",
                        "RegionId": "us-east-1",
                        "SubAccountId": "444455556666",
                        "SkuPriceDetails": json.dumps({"InstanceType": inst.instance_type}),
                        "Tags": json.dumps({"hostname": inst.host, "team": "nlp"}),
                    }
                )


def _capture_stats() -> tuple[int, float, float]:
    """Samples, mean utilisation (%) and covered span (s) of the real capture, read independently."""
    with H200_CAPTURE.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, skipinitialspace=True))
    utils = [float(r["utilization.gpu [%]"].split()[0]) for r in rows]
    ts = [datetime.strptime(r["timestamp"], "%Y/%m/%d %H:%M:%S.%f") for r in rows]
    assert {t.strftime("%Y-%m-%d %H") for t in ts} == {"2026-11-30 01"}  # one clock hour of 2026-W49
    return len(rows), sum(utils) / len(utils), (ts[-1] - ts[0]).total_seconds()


def make_gpu_project(root: Path) -> Path:
    landing = root / "landing"
    copy_into(H200_CAPTURE, landing / "telemetry", f"{P5E.host}_2026-11-30.csv")
    copy_into(H200_CAPTURE, landing / "telemetry", f"{P5.host}_2026-11-30.csv")
    write_focus_csv(landing / "billing" / "focus_2026-11.csv", [P5E, P5], BILLED_FROM, BILLED_HOURS)
    # the capture covers ~6 minutes of one hour: observe an hour from 5 % coverage on
    return write_config(
        root,
        """
        sources:
          - {name: focus, kind: focus, uri: landing/billing/}
          - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
        rules:
          GPU001: {min_coverage: 0.05}
        """,
    )


@dataclass
class Materialised:
    config_path: Path
    ingest: RunOutcome
    w48: RunOutcome
    w49: RunOutcome


@pytest.fixture(scope="module")
def materialised(tmp_path_factory: pytest.TempPathFactory) -> Materialised:
    config_path = make_gpu_project(tmp_path_factory.mktemp("gpu_project"))
    ingest = run_ingest(config_path)
    w48 = run_weekly(config_path, "2026-W48")
    w49 = run_weekly(config_path, "2026-W49")
    return Materialised(config_path, ingest, w48, w49)


def _picked(metadata: dict[str, object], expected: dict[str, object]) -> dict[str, object]:
    """The entries of `metadata` that `expected` names (assets may add more metadata over time)."""
    return {k: metadata.get(k, "<missing>") for k in expected}


def test_ingest_run_reports_what_it_loaded(materialised: Materialised) -> None:
    out = materialised.ingest
    assert out.success and out.failures == []
    assert sorted(out.metadata) == [
        "billing_line_items",
        "cost_hourly",
        "gpu_hours",
        "gpu_job_hours",
        "gpu_samples",
        "inventory_hosts",
        "jobs",
        "jobs_enriched",
        "published_warehouse",
        "resources",
        *STORAGE_MARTS[:4],
        "storage_objects",
        *STORAGE_MARTS[4:],
    ]
    lines = 2 * BILLED_HOURS
    billed = float(BILLED_HOURS * (P5E.billed + P5.billed))
    effective = float(BILLED_HOURS * (P5E.effective + P5.effective))
    expected_billing = {
        "files_loaded": 1,
        "files_unchanged": 0,
        "files_rejected": 0,
        "rows_loaded": lines,
        "dagster/row_count": lines,
        "billed_cost_USD": billed,
        "effective_cost_USD": effective,
    }
    assert _picked(out.metadata["billing_line_items"], expected_billing) == expected_billing
    samples, mean_util, span_s = _capture_stats()
    expected_samples = {
        "files_loaded": 2,
        "files_unchanged": 0,
        "files_rejected": 0,
        "rows_loaded": 2 * samples,
        "dagster/row_count": 2 * samples,
    }
    assert _picked(out.metadata["gpu_samples"], expected_samples) == expected_samples
    # hourly lines stay one row per resource-hour; the money is all there
    expected_hourly = {"dagster/row_count": lines, "effective_cost_USD": effective}
    assert _picked(out.metadata["cost_hourly"], expected_hourly) == expected_hourly
    # both hosts matched their bill through the `hostname` tag; the catalogue says 8 + 1 GPUs
    expected_resources = {
        "dagster/row_count": 2,
        "gpu_resources": 2,
        "gpus": 9,
        "telemetry_hosts_without_bill": 0,
    }
    assert _picked(out.metadata["resources"], expected_resources) == expected_resources
    gpu_hours = out.metadata["gpu_hours"]
    assert gpu_hours["dagster/row_count"] == 2  # one GPU x one hour per host
    assert gpu_hours["gpu_hours_without_billed_resource"] == 0
    assert gpu_hours["mean_util_pct"] == pytest.approx(mean_util, abs=0.01)
    assert gpu_hours["mean_coverage"] == pytest.approx(span_s / 3600, abs=0.002)


def test_ingest_publishes_a_read_only_copy(materialised: Materialised) -> None:
    config = load_config(materialised.config_path)
    meta = materialised.ingest.metadata["published_warehouse"]
    assert meta["path"] == str(config.published_path)
    assert config.published_path != config.warehouse_path
    # the weekly run published again afterwards, so the file now holds the findings too
    with duckdb.connect(str(config.published_path), read_only=True) as con:
        assert con.execute("select count(*) from billing_line_items").fetchone() == (2 * BILLED_HOURS,)
        assert con.execute("select count(*) from resources where gpu_count > 0").fetchone() == (2,)
        weeks = con.execute(
            "select week_start::varchar, count(*) from findings where rule_id = 'GPU001' group by 1 order by 1"
        ).fetchall()
        assert weeks == [("2026-11-23", 2), ("2026-11-30", 2)]
        with pytest.raises(duckdb.Error):
            con.execute("create table t (x int)")


def _findings(config_path: Path, week_start: str) -> dict[str, dict[str, object]]:
    config = load_config(config_path)
    with duckdb.connect(str(config.published_path), read_only=True) as con:
        rows = con.execute(
            "select resource_id, status, reason, evidence, estimated_waste, team, params "
            "from findings where rule_id = 'GPU001' and week_start = $w::date",
            {"w": week_start},
        ).fetchall()
    return {
        r[0]: {
            "status": r[1],
            "reason": r[2],
            "evidence": json.loads(r[3]),
            "estimated_waste": r[4],
            "team": r[5],
            "params": json.loads(r[6]),
        }
        for r in rows
    }


def test_weekly_run_of_a_week_without_telemetry_reports_insufficient_data(materialised: Materialised) -> None:
    out = materialised.w48
    assert out.success and out.failures == []
    assert sorted(out.metadata) == sorted(
        [FINDINGS_GPU001, *FINDINGS_GPU, *FINDINGS_COST, *FINDINGS_STO, "reports/weekly_report"]
    )
    findings = out.metadata[FINDINGS_GPU001]
    assert findings["week"] == "2026-W48"
    assert (findings["findings"], findings["waste_findings"]) == (2, 0)
    # the override from wastewatch.yaml reached the rule; the rest are the defaults
    assert findings["params"] == {
        "max_util_pct": 5.0,
        "min_idle_hours": 2,
        "min_coverage": 0.05,
        "max_power_pct": 35.0,
        "max_mem_util_pct": 10.0,
    }
    assert "insufficient_data" in findings["preview"]

    # only Sunday 22:00 and 23:00 are in 2026-W48 (the other 3 billed hours are the next week's)
    found = _findings(materialised.config_path, "2026-11-23")
    assert sorted(found) == [P5E.resource_id, P5.resource_id]
    for inst in (P5E, P5):
        f = found[inst.resource_id]
        assert f["status"] == "insufficient_data" and f["estimated_waste"] == 0 and f["team"] == "nlp"
        assert f["evidence"]["billed_hours"] == 2 and f["evidence"]["hours_without_telemetry"] == 2
        assert f["reason"].startswith(f"2 of 2 billed hours of {inst.instance_type} {inst.resource_id}")
        assert f"USD {2 * inst.effective:.2f}" in f["reason"]  # priced at the effective cost

    report = out.metadata["reports/weekly_report"]
    assert report["week"] == "2026-W48" and report["findings"] >= 2  # GPU001's two, plus attention findings
    assert report["spend_USD"] == float(2 * (P5E.effective + P5.effective))
    assert report["waste_USD"] == 0.0
    week_dir = load_config(materialised.config_path).reports_path / "2026-W48"
    assert report["report_html"] == str(week_dir / "report.html")
    assert report["report_md"] == str(week_dir / "report.md")
    for name in ("report.html", "report.md", "findings.csv", "findings.parquet"):
        assert (week_dir / name).stat().st_size > 0, name
    with (week_dir / "findings.csv").open(newline="", encoding="utf-8") as f:
        gpu001 = [r["resource_id"] for r in csv.DictReader(f) if r["rule_id"] == "GPU001"]
        assert sorted(gpu001) == [P5E.resource_id, P5.resource_id]


def test_an_eight_gpu_instance_reporting_one_gpu_is_insufficient_data_not_busy(
    materialised: Materialised,
) -> None:
    out = materialised.w49
    assert out.success and out.failures == []
    assert out.metadata[FINDINGS_GPU001]["week"] == "2026-W49"
    assert out.metadata["reports/weekly_report"]["spend_USD"] == float(3 * (P5E.effective + P5.effective))
    found = _findings(materialised.config_path, "2026-11-30")

    # p5e.48xlarge: 8 GPUs billed, the capture shows 1, so even the observed hour is not observed enough
    p5e = found[P5E.resource_id]
    assert p5e["status"] == "insufficient_data" and p5e["estimated_waste"] == 0
    assert p5e["evidence"]["gpu_count"] == 8
    assert (p5e["evidence"]["billed_hours"], p5e["evidence"]["hours_without_telemetry"]) == (3, 3)
    assert p5e["reason"].startswith(
        f"3 of 3 billed hours of p5e.48xlarge {P5E.resource_id} (h200-node, 8×H200)"
    )

    # p5.4xlarge: its one GPU is observed at 01:00 and busy (~29 % mean), the 2 other hours have no data
    p5 = found[P5.resource_id]
    assert p5["status"] == "insufficient_data" and p5["estimated_waste"] == 0
    assert p5["evidence"]["gpu_count"] == 1 and p5["evidence"]["idle_hours"] == 0
    assert (p5["evidence"]["billed_hours"], p5["evidence"]["hours_without_telemetry"]) == (3, 2)
    assert p5["reason"].startswith(f"2 of 3 billed hours of p5.4xlarge {P5.resource_id}")
    assert f"USD {2 * P5.effective:.2f}" in p5["reason"]


@pytest.mark.parametrize("week", ["2099-W01", "2022-W50"])
def test_a_week_outside_the_partitions_is_a_failed_outcome_not_a_dagster_error(
    tmp_path: Path, week: str
) -> None:
    config_path = make_gpu_project(tmp_path)
    out = run_weekly(config_path, week)
    assert not out.success and out.metadata == {}
    [failure] = out.failures
    assert failure.startswith(f"{week} is not a week wastewatch can evaluate: weeks run from 2023-W01 to ")
    assert not (tmp_path / "reports").exists()  # nothing ran


def _ingest_job_result(config_path: Path) -> dg.ExecuteInProcessResult:
    job = defs().resolve_job_def("nightly_ingest")
    return job.execute_in_process(
        resources={"wastewatch": WastewatchResource(config_path=str(config_path))}, raise_on_error=False
    )


def test_ingest_job_again_loads_nothing_and_its_checks_pass(materialised: Materialised) -> None:
    # the `nightly_ingest` job itself (as the schedule and the sensor launch it), over the same project
    result = _ingest_job_result(materialised.config_path)
    assert result.success
    checks = {
        (e.asset_key.to_user_string(), e.check_name): (e.passed, {k: v.value for k, v in e.metadata.items()})
        for e in result.get_asset_check_evaluations()
    }
    effective = BILLED_HOURS * (P5E.effective + P5.effective)
    assert checks == {
        ("billing_line_items", "no_rejected_files"): (True, {"files_rejected": 0}),
        ("billing_line_items", "billing_reconciled"): (
            True,
            {"files_checked": 1, "periods_checked": 1, "mismatches": 0},
        ),
        ("billing_line_items", "tag_coverage"): (True, {"USD": f"100.0% of {effective:,.2f} has a team"}),
        ("gpu_samples", "no_rejected_files"): (True, {"files_rejected": 0}),
        ("jobs", "no_rejected_files"): (True, {"files_rejected": 0}),
        ("inventory_hosts", "no_rejected_files"): (True, {"files_rejected": 0}),
        ("storage_objects", "no_rejected_files"): (True, {"files_rejected": 0}),
        ("cost_hourly", "reconciles_with_billing"): (
            True,
            {"USD": f"lines {effective:.6f} / hourly {effective:.6f}"},
        ),
    }
    meta = {
        e.materialization.asset_key.to_user_string(): {
            k: v.value for k, v in e.materialization.metadata.items()
        }
        for e in result.get_asset_materialization_events()
        if e.materialization
    }
    assert meta["billing_line_items"]["files_unchanged"] == 1
    assert meta["billing_line_items"]["files_loaded"] == meta["billing_line_items"]["rows_loaded"] == 0
    assert meta["billing_line_items"]["dagster/row_count"] == 2 * BILLED_HOURS
    assert (meta["gpu_samples"]["files_unchanged"], meta["gpu_samples"]["rows_loaded"]) == (2, 0)


def test_a_rejected_file_fails_its_check_but_not_the_run(tmp_path: Path) -> None:
    config_path = make_gpu_project(tmp_path)
    bad = tmp_path / "landing" / "billing" / "focus_bad.csv"
    write_focus_csv(bad, [P5E], BILLED_FROM, 2)
    bad.write_text(bad.read_text().replace(",40.000000,", ",forty,", 1))

    result = _ingest_job_result(config_path)
    assert result.success  # the check warns; the other files load and the marts are built
    evaluations = {
        (e.asset_key.to_user_string(), e.check_name): e for e in result.get_asset_check_evaluations()
    }
    rejected = evaluations[("billing_line_items", "no_rejected_files")]
    assert not rejected.passed and rejected.severity == dg.AssetCheckSeverity.WARN
    assert rejected.metadata["files_rejected"].value == 1
    assert evaluations[("gpu_samples", "no_rejected_files")].passed
    assert evaluations[("cost_hourly", "reconciles_with_billing")].passed

    [billing] = [
        e.materialization
        for e in result.get_asset_materialization_events()
        if e.materialization and e.materialization.asset_key == dg.AssetKey("billing_line_items")
    ]
    assert billing.metadata["files_loaded"].value == 1
    assert billing.metadata["files_rejected"].value == 1
    assert billing.metadata["dagster/row_count"].value == 2 * BILLED_HOURS  # nothing of the bad file
    message = billing.metadata["rejected"].value
    assert "focus_bad.csv" in message and "forty" in message


# --- 4. `dagster dev` -------------------------------------------------------------------------------

DEV_QUERY = """
query Wastewatch($cursor: Float) {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError { __typename ... on PythonError { message } }
      }
    }
  }
  assetNodes { assetKey { path } groupName isPartitioned }
  repositoriesOrError {
    ... on RepositoryConnection {
      nodes {
        name
        location { name }
        jobs { name }
        sensors { name sensorState { status } }
        schedules { name cronSchedule executionTimezone }
      }
    }
  }
  scheduleOrError(scheduleSelector: {
    repositoryName: "__repository__", repositoryLocationName: "wastewatch",
    scheduleName: "weekly_report_schedule"
  }) {
    __typename
    ... on Schedule {
      futureTicks(cursor: $cursor, limit: 1) {
        results {
          timestamp
          evaluationResult { runRequests { runKey tags { key value } } skipReason error { message } }
        }
      }
    }
  }
}
"""

SENSOR_DRY_RUN = """
mutation {
  sensorDryRun(
    selectorData: {repositoryName: "__repository__", repositoryLocationName: "wastewatch",
                   sensorName: "new_files_sensor"},
    cursor: null
  ) {
    __typename
    ... on DryRunInstigationTick {
      evaluationResult { runRequests { runKey tags { key value } } skipReason cursor error { message } }
    }
    ... on PythonError { message }
  }
}
"""


@pytest.mark.e2e
def test_dagster_dev_serves_the_code_location(tmp_path: Path, sensor_config: Path) -> None:
    dev = DagsterDev(tmp_path / "dev", env={CONFIG_ENV: str(sensor_config)})
    pgid = None
    try:
        with dev:
            assert dev.process is not None
            pgid = dev.process.pid
            info = dev.wait_ready(timeout=60)
            assert info["dagster_version"] == dg.__version__

            status, content_type, page = dev.get("/")
            assert status == 200 and content_type.startswith("text/html") and "<html" in page

            cursor = datetime(2026, 11, 25, tzinfo=UTC).timestamp()
            data = dev.graphql(DEV_QUERY, {"cursor": cursor})
            [location] = data["workspaceOrError"]["locationEntries"]
            assert (location["name"], location["loadStatus"]) == ("wastewatch", "LOADED")
            assert location["locationOrLoadError"]["__typename"] == "RepositoryLocation", location

            nodes = {"/".join(n["assetKey"]["path"]): n for n in data["assetNodes"]}
            assert sorted(nodes) == ALL_ASSETS
            assert nodes["billing_line_items"]["groupName"] == "ingest"
            assert nodes[FINDINGS_GPU001]["isPartitioned"] is True

            [repo] = data["repositoriesOrError"]["nodes"]
            assert repo["location"]["name"] == "wastewatch"
            assert {j["name"] for j in repo["jobs"]} >= {"nightly_ingest", "weekly_report"}
            assert repo["sensors"] == [{"name": "new_files_sensor", "sensorState": {"status": "STOPPED"}}]
            assert sorted(
                (s["name"], s["cronSchedule"], s["executionTimezone"]) for s in repo["schedules"]
            ) == [
                ("nightly_ingest_schedule", "0 2 * * *", "UTC"),
                ("weekly_report_schedule", "0 6 * * 1", "UTC"),
            ]

            # Dagster's own cron iteration: after Wednesday 2026-11-25 comes Monday 2026-11-30 06:00 UTC,
            # and that tick asks for the week that just ended
            [tick] = data["scheduleOrError"]["futureTicks"]["results"]
            assert datetime.fromtimestamp(tick["timestamp"], UTC) == datetime(2026, 11, 30, 6, tzinfo=UTC)
            evaluation = tick["evaluationResult"]
            assert evaluation["error"] is None and evaluation["skipReason"] is None
            [request] = evaluation["runRequests"]
            assert {t["key"]: t["value"] for t in request["tags"]}["dagster/partition"] == "2026-11-23"

            # the code server finds the project through $WASTEWATCH_CONFIG
            dry = dev.graphql(SENSOR_DRY_RUN)["sensorDryRun"]
            assert dry["__typename"] == "DryRunInstigationTick", dry
            result = dry["evaluationResult"]
            assert result["error"] is None, result["error"]
            [sensor_request] = result["runRequests"]
            assert (
                sensor_request["runKey"]
                == result["cursor"]
                == _requested(_evaluate_sensor(sensor_config, None))[0]
            )
    finally:
        dev.stop()
        if pgid is not None:
            assert group_members(pgid) == [], "dagster dev left processes behind"

    log = dev.log
    assert f"Serving dagster-webserver on http://127.0.0.1:{dev.port}" in log
    assert "Traceback" not in log, log
    # warnings the log attributes to our code (deprecation warnings are switched on for these processes)
    ours = [
        line
        for line in log.splitlines()
        if re.search(r"deprecat|BetaWarning|PreviewWarning|SupersessionWarning", line, re.IGNORECASE)
        and re.search(rf"{re.escape(str(REPO))}/(pipelines|rules)/", line)
    ]
    assert ours == [], "\n".join(ours)
