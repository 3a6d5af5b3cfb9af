"""The new-files sensor on a real project folder and on an S3 source (moto's server on 127.0.0.1)."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pytest

from pipelines.definitions import defs
from pipelines.defs.ingest.assets import INGEST_TABLES
from pipelines.defs.ingest.sensors import new_files_sensor
from pipelines.defs.resources import CONFIG_ENV, WastewatchResource
from tests.helpers.config import write_config
from tests.helpers.paths import FOCUS_SAMPLE, H200, copy_into
from tests.helpers.sensor import evaluate_sensor, requested

H200_CAPTURE = H200 / "nvidia_smi_query_gpu.csv"


def test_sensor_requests_a_run_once_per_change_of_the_landing_folders(sensor_config: Path) -> None:
    first_key, cursor = requested(evaluate_sensor(sensor_config, None))

    same = evaluate_sensor(sensor_config, cursor)
    assert isinstance(same, dg.SkipReason)
    assert same.skip_message == "no change in 1 source file(s)"
    # the fingerprint is a function of the files, not of the evaluation
    assert requested(evaluate_sensor(sensor_config, None))[0] == first_key

    # a rewritten file (new modification time) is a change
    billing = sensor_config.parent / "landing" / "billing" / FOCUS_SAMPLE.name
    st = billing.stat()
    os.utime(billing, ns=(st.st_atime_ns, st.st_mtime_ns + 60_000_000_000))
    touched_key, cursor = requested(evaluate_sensor(sensor_config, cursor))
    assert touched_key != first_key

    # a new telemetry file is a change; the skip message then counts both sources' files
    copy_into(H200_CAPTURE, sensor_config.parent / "landing" / "telemetry", "h200-node_2026-11-30.csv")
    added_key, cursor = requested(evaluate_sensor(sensor_config, cursor))
    assert added_key not in (first_key, touched_key)
    again = evaluate_sensor(sensor_config, cursor)
    assert isinstance(again, dg.SkipReason) and again.skip_message == "no change in 2 source file(s)"


def test_sensor_ignores_files_the_readers_do_not_pick_up(sensor_config: Path) -> None:
    _, cursor = requested(evaluate_sensor(sensor_config, None))
    landing = sensor_config.parent / "landing" / "billing"
    (landing / "README.md").write_text("notes, not a bill\n")
    (landing / ".partial.csv").write_text("in flight\n")
    result = evaluate_sensor(sensor_config, cursor)
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
    first, cursor = requested(evaluate_sensor(config, None))
    same = evaluate_sensor(config, cursor)
    assert isinstance(same, dg.SkipReason) and same.skip_message == "no change in 1 source file(s)"
    assert not (tmp_path / "warehouse").exists() or not any((tmp_path / "warehouse").rglob("focus.csv"))

    # the same key rewritten with other bytes (same size would not matter: the ETag changes)
    body = FOCUS_SAMPLE.read_bytes().replace(b"SunBird", b"SunBirb")
    s3.put_object(Bucket=bucket, Key="billing/focus.csv", Body=body)
    rewritten, cursor = requested(evaluate_sensor(config, cursor))
    assert rewritten != first
    s3.put_object(Bucket=bucket, Key="billing/2026-12/focus.csv", Body=body)
    added, cursor = requested(evaluate_sensor(config, cursor))
    assert added not in (first, rewritten)

    (tmp_path / "down").mkdir()
    down = write_config(
        tmp_path / "down",
        f"""
        sources:
          - {{name: remote, kind: focus, uri: 's3://{bucket}/billing/', endpoint_url: 'http://127.0.0.1:9', region: us-east-1}}
        """,
    )
    result = evaluate_sensor(down, cursor)
    assert isinstance(result, dg.SkipReason), result
    assert "remote could not be listed" in (result.skip_message or "")


def test_sensor_reads_the_config_from_the_environment(
    sensor_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFIG_ENV, str(sensor_config))
    key, _ = requested(evaluate_sensor(None, None))
    assert key == requested(evaluate_sensor(sensor_config, None))[0]


def test_sensor_skips_with_the_reason_when_the_config_is_missing_or_invalid(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "wastewatch.yaml"
    result = evaluate_sensor(missing, None)
    assert isinstance(result, dg.SkipReason)
    message = result.skip_message or ""
    assert message.startswith(f"{missing}: configuration file not found"), message

    # a typo in the file: the reason names the file, the line and the key (and no run is requested)
    broken = write_config(tmp_path, "warehouse: w.duckdb\nsorces: []\n")
    result = evaluate_sensor(broken, "some-cursor")
    assert isinstance(result, dg.SkipReason)
    message = result.skip_message or ""
    assert message.startswith(f"{broken}:2:") and "sorces" in message and "unknown key" in message, message


def test_the_sensors_run_is_the_clis_ingest_less_the_tables_no_source_writes(sensor_config: Path) -> None:
    definitions = defs()
    resource = WastewatchResource(config_path=str(sensor_config))
    with dg.build_sensor_context(
        resources={"wastewatch": resource}, repository_def=definitions.get_repository_def()
    ) as context:
        result = new_files_sensor(context)
    assert isinstance(result, dg.SensorResult)
    [request] = result.run_requests or []
    job_assets = definitions.resolve_job_def("nightly_ingest").asset_layer.selected_asset_keys
    fed = {dg.AssetKey("billing_line_items"), dg.AssetKey("gpu_samples")}  # focus and nvidia_smi
    assert set(request.asset_selection or ()) == job_assets - {dg.AssetKey(t) for t in INGEST_TABLES} | fed
