"""Telemetry from exports: Prometheus query_range JSON and long-format metrics CSV with a column mapping."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pipelines.ingest import IngestReport
from tests.helpers.ingest_run import ingest_project
from tests.helpers.paths import FIXTURES

QUERY = FIXTURES / "telemetry" / "prometheus" / "query_range_2026-11-30T0142.json"
LONG = FIXTURES / "telemetry" / "metrics_csv" / "vm-export_2026-11-30.csv"
LONG_OPTIONS = (
    "{columns: {ts: time, host: node, gpu_uuid: uuid, gpu_index: gpu, metric: name, value: val}, "
    "metrics: {gpu_mem_bytes: {column: mem_total_mib, scale: 9.5367431640625e-07}}}"
)


def _run(
    tmp_path: Path, kind: str, files: dict[str, str | Path], options: str = "{}"
) -> tuple[IngestReport, list[dict[str, Any]]]:
    sources = f"  - {{name: src, kind: {kind}, uri: in/, options: {options}}}\n"
    query = "select * from gpu_samples order by x_source_file, gpu_index, ts"
    return ingest_project(tmp_path, sources, {f"in/{n}": c for n, c in files.items()}, query)


# -- Prometheus query_range ---------------------------------------------------------------------------


def test_query_range_matrix_is_pivoted_per_gpu_and_time(tmp_path: Path) -> None:
    report, got = _run(tmp_path, "prometheus_json", {QUERY.name: QUERY})
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    assert len(got) == 8  # 2 GPUs x 4 steps
    gpu0 = [r for r in got if r["gpu_index"] == 0]
    assert [r["ts"] for r in gpu0] == [datetime(2026, 11, 30, 1, m) for m in (42, 43, 44, 45)]
    assert [r["util_pct"] for r in gpu0] == [96.0, 98.0, None, 95.0]  # a missing point is NULL, never 0
    assert [r["power_w"] for r in gpu0] == [655.012, 661.437, 649.908, None]  # "NaN"
    assert gpu0[0]["mem_total_mib"] == 61234 + 19771 and gpu0[0]["tensor_active"] == 0.512
    assert {(r["host"], r["pod"], r["namespace"], r["container"]) for r in gpu0} == {
        ("gpu-node-b", "llm-sft-3", "nlp", "train")
    }
    assert gpu0[0]["labels"] == {
        "dcgm_fi_driver_version": "550.54.15", "device": "nvidia0", "instance": "10.0.3.17:9400", "job": "dcgm-exporter",
    }  # fmt: skip
    gpu1 = [r for r in got if r["gpu_index"] == 1]
    assert {r["pod"] for r in gpu1} == {None} and [r["util_pct"] for r in gpu1] == [0.0] * 4


def test_instance_vector_and_host_fallback_to_instance(tmp_path: Path) -> None:
    doc = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "3", "UUID": "GPU-x", "instance": "10.1.2.3:9400"},
         "value": [1796002920.5, "42"]},
    ]}}  # fmt: skip
    report, got = _run(tmp_path, "prometheus_json", {"q.json": json.dumps(doc)})
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    assert [(r["ts"], r["host"], r["gpu_index"], r["util_pct"]) for r in got] == [
        (datetime(2026, 11, 30, 1, 42, 0, 500000), "10.1.2.3", 3, 42.0)
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"status": "error", "errorType": "bad_data", "error": "parse error at char 7"}',
         "bad.json: the query failed (status 'error'): parse error at char 7"),
        ('{"status": "success", "data": {"resultType": "scalar", "result": []}}',
         "bad.json: resultType 'scalar'; expected a `matrix`"),
        ('{"status": "success", "data": {"resultType": "matrix", "result": [\n  {"metric": {}, "values": [[1, "2"]\n',
         "bad.json: not a Prometheus query response: "),
    ],
)  # fmt: skip
def test_bad_responses_are_rejected_and_the_rest_loads(tmp_path: Path, text: str, problem: str) -> None:
    report, got = _run(tmp_path, "prometheus_json", {"bad.json": text, QUERY.name: QUERY})
    outcome = {Path(o.uri).name: o for o in report.outcomes}
    assert outcome[QUERY.name].status == "loaded" and len(got) == 8
    assert outcome["bad.json"].status == "rejected" and problem in (outcome["bad.json"].error or ""), outcome[
        "bad.json"
    ].error


def test_truncated_json_names_its_line(tmp_path: Path) -> None:
    text = QUERY.read_text(encoding="utf-8")
    cut = "\n".join(text.splitlines()[:40])
    report, _ = _run(tmp_path, "prometheus_json", {"cut.json": cut})
    assert report.outcomes[0].status == "rejected"
    assert "cut.json: not a Prometheus query response: Expecting" in (report.outcomes[0].error or "")
    assert "at line 40, column" in (report.outcomes[0].error or "")


# -- long-format metrics CSV --------------------------------------------------------------------------


def test_long_csv_with_a_column_mapping(tmp_path: Path) -> None:
    report, got = _run(tmp_path, "metrics_csv", {LONG.name: LONG}, LONG_OPTIONS)
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    assert [(r["ts"], r["gpu_index"], r["util_pct"], r["mem_used_mib"], r["power_w"]) for r in got] == [
        (datetime(2026, 11, 30, 1, 42), 0, 88.0, 40211.0, 301.5),
        (datetime(2026, 11, 30, 1, 43), 0, 91.0, 40215.0, None),  # empty value
        (datetime(2026, 11, 30, 1, 42), 1, 0.0, 0.0, None),  # DCGM sentinel
    ]
    assert got[0]["mem_total_mib"] == pytest.approx(42164211712 / 2**20)  # bytes scaled to MiB
    assert {(r["host"], r["gpu_uuid"][:12]) for r in got} == {
        ("gpu-node-e", "GPU-2b3c4d5e"),
        ("gpu-node-e", "GPU-6c7d8e9f"),
    }
    assert got[0]["labels"] == {"cluster": "eu-west"}  # unmapped columns identify and label the entity


def test_long_csv_default_names_epoch_times_and_fixed_host(tmp_path: Path) -> None:
    text = "timestamp,gpu_index,metric,value\n1796002920000,0,util_pct,12.5\n1796002920000,0,power_w,95\n1796002980,0,util_pct,0\n"
    report, got = _run(tmp_path, "metrics_csv", {"a.csv": text}, "{host: box-1}")
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    assert [(r["ts"], r["host"], r["util_pct"], r["power_w"]) for r in got] == [
        (datetime(2026, 11, 30, 1, 42), "box-1", 12.5, 95.0),
        (datetime(2026, 11, 30, 1, 43), "box-1", 0.0, None),
    ]


@pytest.mark.parametrize(
    ("line", "where", "problem"),
    [
        ("2026-11-31T01:42:00Z,gpu-node-e,GPU-x,0,eu-west,DCGM_FI_DEV_GPU_UTIL,1", "bad.csv:13: column 'time'",
         "expected an ISO 8601 time or epoch seconds, found '2026-11-31T01:42:00Z'"),
        ("2026-11-30T01:44:00Z,gpu-node-e,GPU-x,0,eu-west,DCGM_FI_DEV_GPU_UTIL,high", "bad.csv:13: column 'val'",
         "value 'high' is not a number"),
    ],
)  # fmt: skip
def test_long_csv_bad_values_name_line_and_column(
    tmp_path: Path, line: str, where: str, problem: str
) -> None:
    bad = LONG.read_text(encoding="utf-8") + line + "\n"
    report, got = _run(tmp_path, "metrics_csv", {"bad.csv": bad, LONG.name: LONG}, LONG_OPTIONS)
    outcome = {Path(o.uri).name: o for o in report.outcomes}
    assert outcome[LONG.name].status == "loaded" and len(got) == 3
    assert outcome["bad.csv"].status == "rejected"
    assert where in (outcome["bad.csv"].error or "") and problem in (outcome["bad.csv"].error or "")


def test_long_csv_without_a_host_is_rejected(tmp_path: Path) -> None:
    report, _ = _run(tmp_path, "metrics_csv", {"a.csv": "ts,metric,value\n2026-11-30T01:00:00Z,util_pct,1\n"})
    assert "a.csv:1: no host column and no `host` option" in (report.outcomes[0].error or "")
