"""Telemetry, job and host files that are not UTF-8 are rejected as such, as billing files are: a UTF-16
export and a Latin-1 byte get "not UTF-8 text" with the byte order mark or the byte's offset and line,
never DuckDB's bare "CSV Error on Line: 1", a JSON parser's "Expecting value" or a wrong field count.
(Found by the property tests in tests/ingest/fuzz/.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.warehouse import connect
from tests.helpers.config import write_config
from tests.helpers.paths import FIXTURES, H200

CASES = {
    "metrics_csv": (FIXTURES / "telemetry" / "metrics_csv" / "vm-export_2026-11-30.csv", "{columns: {ts: time, host: node, gpu_uuid: uuid, gpu_index: gpu, metric: name, value: val}}"),
    "jobs_csv": (H200 / "phases.csv", "{columns: {started_at: start_ts, ended_at: end_ts, state: exit_status}, host: h200-node, gpus: 1}"),
    "hosts_csv": (FIXTURES / "resources" / "cmdb_hosts.csv", "{columns: {instance_id: aws_id}}"),
    "slurm_sacct": (FIXTURES / "jobs" / "sacct_cluster_a.txt", "{}"),
    "k8s_pods": (FIXTURES / "jobs" / "k8s_pods.json", "{}"),
    "prometheus_json": (FIXTURES / "telemetry" / "prometheus" / "query_range_2026-11-30T0142.json", "{}"),
    "dcgm": (FIXTURES / "telemetry" / "dcgm" / "gpu-node-d_v1-names.txt", "{}"),
}  # fmt: skip


def _reject(tmp_path: Path, kind: str, data: bytes) -> str:
    src, options = CASES[kind]
    folder = tmp_path / "in"
    folder.mkdir()
    good = folder / f"good{src.suffix}"
    shutil.copyfile(src, good)
    bad = folder / f"bad{src.suffix}"
    bad.write_bytes(data)
    write_config(tmp_path, f"sources:\n  - {{name: src, kind: {kind}, uri: in/, options: {options}}}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = connect(config.warehouse_path)
    try:
        report = ingest(con, config)
    finally:
        con.close()
    by_name = {Path(o.uri).name: o for o in report.outcomes}
    assert by_name[good.name].status == "loaded", report.summary()  # the other file still loads
    assert by_name[bad.name].status == "rejected", report.summary()
    return by_name[bad.name].error or ""


@pytest.mark.parametrize("kind", CASES)
def test_a_utf16_file_is_rejected_as_not_utf8(tmp_path: Path, kind: str) -> None:
    text = CASES[kind][0].read_text(encoding="utf-8")
    error = _reject(tmp_path, kind, text.encode("utf-16"))
    assert error == (
        f"{tmp_path / 'in' / ('bad' + CASES[kind][0].suffix)}:1: not UTF-8 text: UTF-16 (byte order mark FF FE "
        "at byte 0); save or export the file as UTF-8"
    )


def test_a_latin1_byte_in_json_is_named_with_its_offset_and_line(tmp_path: Path) -> None:
    text = CASES["k8s_pods"][0].read_text(encoding="utf-8")
    at = text.index('"name"')
    data = text[:at].encode() + b'"\xe9' + text[at + 1 :].encode()  # a Latin-1 e-acute opens a key
    error = _reject(tmp_path, "k8s_pods", data)
    line = text[:at].count("\n") + 1
    assert error.endswith(
        f"bad.json:{line}: not UTF-8 text at byte {at + 1} (0xE9): the file is in another encoding "
        "(Windows-1252 or Latin-1?); export it as UTF-8"
    ), error
