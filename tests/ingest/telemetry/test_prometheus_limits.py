"""Bounded reads of the `prometheus` source (pipelines/net/limits.py): a server that drips its answer fails the
source once `timeout` has passed, an answer larger than `max_response_mb` fails it before it is read whole;
either way one line names the source, the URL and the option to raise, and the other sources still load."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import load_config
from pipelines.ingest import IngestReport, ingest
from pipelines.lock import holds, writer_lock
from pipelines.warehouse import rows
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.slow_peer import slow_peer

ONE_HOUR = "start: '2026-11-30T00:00:00Z', end: '2026-11-30T01:00:00Z', range_end: inclusive"
JOBS = (
    "job_id,user,team,state,started_at,ended_at,hosts,gpus,gpu_indices,tags\n"
    "j1,ann,nlp,COMPLETED,2026-11-30 01:20:00,2026-11-30 02:20:00,gpu-node-b,1,,\n"
)
LABELS = {"Hostname": "gpu-node-z", "UUID": "GPU-z", "gpu": "0", "modelName": "NVIDIA H200"}
NO_SPLIT = {"/api/v1/label/instance/values": b'{"status":"success","data":[]}'}
DRIP_S = 0.2  # per byte: the answer below takes over two minutes to arrive whole


def _matrix(series: int, label_bytes: int = 0) -> bytes:
    """A query_range answer of `series` series (each padded by `label_bytes` of label text)."""
    result = [
        {
            "metric": {**LABELS, "ww_stat": "samples", "pad": "x" * label_bytes, "i": str(i)},
            "values": [[1795999199.999, "60"]],
        }
        for i in range(series)
    ]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()


def _ingest(project: Path, sources: str) -> tuple[IngestReport, float, list[dict[str, object]]]:
    project.mkdir(exist_ok=True)
    (project / "jobs").mkdir(exist_ok=True)
    (project / "jobs" / "jobs.csv").write_text(JOBS, encoding="utf-8")
    write_config(project, "sources:\n  - {name: slurm, kind: jobs_csv, uri: jobs/}\n" + sources)
    config = load_config(project / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        started = time.monotonic()
        report = ingest(con, config)
        return report, time.monotonic() - started, rows(con, "select job_id from jobs")
    finally:
        con.close()


def _dripped() -> bytes:
    body = _matrix(1, label_bytes=600)
    assert len(body) * DRIP_S > 120
    return body


def test_a_dripping_answer_fails_the_source_at_its_timeout_and_the_others_load(tmp_path: Path) -> None:
    """One byte every 0.2 s: 1 s of `timeout` ends it (an answer that was arriving is not retried)."""
    with slow_peer(_dripped(), interval=DRIP_S, fast=NO_SPLIT) as peer:
        opts = f"{{{ONE_HOUR}, timeout: 1, retries: 3, backoff: 0}}"
        report, took, jobs = _ingest(
            tmp_path / "p", f"  - {{name: prom, kind: prometheus, uri: '{peer.url}', options: {opts}}}\n"
        )
    assert report.failures == [
        f"source 'prom': {peer.url}/api/v1/query_range: the answer did not arrive whole within timeout = 1 s; "
        "raise the source's `timeout` option, or lower hours_per_query or series_per_query to split the "
        "query (query_range 2026-11-30 00:00..2026-11-30 01:00 UTC)"
    ]
    assert 1.0 <= took < 30.0, took  # the answer alone would take two minutes (a loaded machine's margin)
    assert [p.split("?")[0] for p in peer.paths] == ["/api/v1/label/instance/values", "/api/v1/query_range"]
    assert jobs == [{"job_id": "j1"}]  # the other source loaded


def test_an_answer_larger_than_max_response_mb_fails_the_source_and_one_under_it_loads(
    tmp_path: Path,
) -> None:
    big = _matrix(3, label_bytes=1 << 20)  # ~3 MB
    assert 3 << 20 < len(big) < 4 << 20
    with slow_peer(big, fast=NO_SPLIT) as peer:
        source = f"  - {{name: prom, kind: prometheus, uri: '{peer.url}', options: {{{ONE_HOUR}, max_response_mb: %s}}}}\n"
        report, took, jobs = _ingest(tmp_path / "small", source % 1)
        assert report.failures == [
            f"source 'prom': {peer.url}/api/v1/query_range: the answer is larger than max_response_mb = 1 MB; "
            "raise the source's `max_response_mb` option, or lower hours_per_query or series_per_query to "
            "split the query (query_range 2026-11-30 00:00..2026-11-30 01:00 UTC)"
        ]
        assert jobs == [{"job_id": "j1"}] and took < 30.0  # a slow peer read to its end would take minutes
        report, _, _ = _ingest(tmp_path / "large", source % 4)
    assert not report.failures and not report.rejected, report.summary()


def test_a_label_values_answer_is_bounded_too_and_says_nothing_of_splitting(tmp_path: Path) -> None:
    with slow_peer(b'{"status":"success","data":["' + b"h" * (2 << 20) + b'"]}') as peer:
        opts = f"{{{ONE_HOUR}, max_response_mb: 1}}"
        report, _, _ = _ingest(
            tmp_path / "p", f"  - {{name: prom, kind: prometheus, uri: '{peer.url}', options: {opts}}}\n"
        )
    assert report.failures == [
        f"source 'prom': {peer.url}/api/v1/label/instance/values: the answer is larger than "
        "max_response_mb = 1 MB; raise the source's `max_response_mb` option (label values of 'instance')"
    ]


@pytest.mark.e2e  # the whole `wastewatch ingest` (its Dagster run and the marts)
def test_ingest_against_a_dripping_server_is_one_line_exit_1_and_frees_the_warehouse(tmp_path: Path) -> None:
    """The command, as cron runs it: bounded in time, one error line without the credentials, the local
    source loaded, and the warehouse lock free for the next writer."""
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "jobs.csv").write_text(JOBS, encoding="utf-8")
    with slow_peer(_dripped(), interval=DRIP_S, fast=NO_SPLIT) as peer:
        url = peer.url.replace("http://", "http://ww:s3cret-drip-41@")
        write_config(
            tmp_path,
            f"""
            warehouse: wh/w.duckdb
            sources:
              - {{name: slurm, kind: jobs_csv, uri: jobs/}}
              - {{name: prom, kind: prometheus, uri: '{url}', options: {{{ONE_HOUR}, timeout: 1}}}}
            """,
        )
        started = time.monotonic()
        result = CliRunner().invoke(main, ["--config", str(tmp_path / "wastewatch.yaml"), "ingest"])
        took = time.monotonic() - started
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 1, result.output
    assert errors == [
        f"error: source 'prom': {peer.url}/api/v1/query_range: the answer did not arrive whole within "
        "timeout = 1 s; raise the source's `timeout` option, or lower hours_per_query or series_per_query "
        "to split the query (query_range 2026-11-30 00:00..2026-11-30 01:00 UTC)"
    ], result.output
    assert "s3cret-drip-41" not in result.output
    # 1 s of waiting plus the command's own work (slow on a loaded machine), not the drip's two minutes
    assert took < 60, took
    warehouse = tmp_path / "wh" / "w.duckdb"
    assert not holds(warehouse)
    with writer_lock(warehouse, wait=0):  # free: taken at once by the next writer
        pass
    con = new_warehouse(warehouse)
    try:
        assert rows(con, "select job_id from jobs") == [{"job_id": "j1"}]
    finally:
        con.close()
