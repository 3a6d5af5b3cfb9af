"""Single-metric CSV files (`metrics_csv` with `options: {metric: ...}`) and the stable ids of GPUs that
have neither an index nor a UUID (host:#<ordinal>), from a per-pod trace through the marts."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.warehouse import rows
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.ingest_run import ingest_project
from tests.helpers.marts import build_only
from tests.helpers.pod_trace import DUTY_FILE, HOURS, MEMORY_FILE, PODS, sources, write_trace


def _one_file(tmp_path: Path, text: str, options: str) -> tuple[Any, list[dict[str, Any]]]:
    src = f"  - {{name: src, kind: metrics_csv, uri: in/, options: {options}}}\n"
    query = "select * from gpu_samples order by host, pod, ts"
    return ingest_project(tmp_path, src, {"in/a.csv": text}, query)


def test_a_single_metric_file_takes_its_metric_from_the_options(tmp_path: Path) -> None:
    text = "time,node,value\n2020-03-03T08:00:00Z,m1,12.5\n2020-03-03T08:01:00Z,m1,\n2020-03-03T08:02:00Z,m1,80\n"
    report, got = _one_file(tmp_path, text, "{metric: util_pct, columns: {ts: time, host: node}}")
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    assert [(r["ts"], r["host"], r["util_pct"], r["mem_used_mib"]) for r in got] == [
        (datetime(2020, 3, 3, 8, 0), "m1", 12.5, None),
        (datetime(2020, 3, 3, 8, 1), "m1", None, None),  # an empty value is missing, not 0
        (datetime(2020, 3, 3, 8, 2), "m1", 80.0, None),
    ]


def test_a_fixed_metric_can_be_one_the_source_defines_with_a_scale(tmp_path: Path) -> None:
    text = "timestamp,machine,value\n1583222400,m1,1.5\n"
    options = (
        "{metric: mem_gib, columns: {host: machine}, metrics: {mem_gib: {column: mem_used_mib, scale: 1024}}}"
    )
    report, got = _one_file(tmp_path, text, options)
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    assert [(r["ts"], r["mem_used_mib"], r["util_pct"]) for r in got] == [
        (datetime(2020, 3, 3, 8, 0), 1536.0, None)
    ]


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ("{metric: gpu_busy, host: m1}", "options.metric 'gpu_busy' is not a metric wastewatch knows"),
    ],
)
def test_a_fixed_metric_that_cannot_be_used_rejects_the_file_saying_why(
    tmp_path: Path, options: str, problem: str
) -> None:
    report, got = _one_file(tmp_path, "ts,name,value\n2020-03-03T08:00:00Z,x,1\n", options)
    [outcome] = report.outcomes
    assert outcome.status == "rejected" and got == []
    assert "a.csv" in (outcome.error or "") and problem in (outcome.error or "")


def test_a_two_digit_year_is_rejected_naming_its_line(tmp_path: Path) -> None:
    """DuckDB's cast reads `20-03-03` as the year 20; no exporter means that, so the line is unreadable."""
    text = "time,node,value\n2020-03-03T08:00:00Z,m1,12.5\n20-03-03T08:01:00Z,m1,13\n"
    report, got = _one_file(tmp_path, text, "{metric: util_pct, columns: {ts: time, host: node}}")
    [outcome] = report.outcomes
    assert outcome.status == "rejected" and got == [], report.summary()
    assert "a.csv:3" in (outcome.error or "") and "20-03-03T08:01:00Z" in (outcome.error or "")


def test_without_a_fixed_metric_a_file_without_a_metric_column_is_still_rejected(tmp_path: Path) -> None:
    report, _ = _one_file(tmp_path, "ts,value\n2020-03-03T08:00:00Z,1\n", "{host: m1}")
    assert "a.csv:1: no metric column in the header" in (report.outcomes[0].error or "")


def _gpu_hours(tmp_path: Path, source_order: str = "as written") -> list[dict[str, Any]]:
    """Ingest the pod trace (its two single-metric sources) and build the marts; gpu_hours rows."""
    write_trace(tmp_path / "trace")
    entries = sources("trace")
    if source_order == "reversed":  # memory first: a different file order into the warehouse
        duty, memory = entries.split("  - name: trace-memory")
        entries = "  - name: trace-memory" + memory + duty
    write_config(tmp_path, "sources:\n" + entries)
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        report = ingest(con, config)
        assert {o.status for o in report.outcomes} == {"loaded"}, report.summary()
        build_only(con, "gpu_hours")
        return rows(
            con,
            "select host, gpu_id, hour, samples, round(util_mean, 3) as util, round(mem_used_mean_mib, 3) as mem "
            "from gpu_hours order by host, gpu_id, hour",
        )
    finally:
        con.close()


@pytest.fixture(scope="module")
def as_written(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """gpu_hours of the pod trace ingested in the order its sources are written (the two tests below read it)."""
    return _gpu_hours(tmp_path_factory.mktemp("as-written"))


def test_gpus_without_index_or_uuid_get_host_plus_ordinal_ids_by_pod_order(
    as_written: list[dict[str, Any]],
) -> None:
    got = as_written
    by_gpu: dict[str, list[dict[str, Any]]] = {}
    for r in got:
        by_gpu.setdefault(r["gpu_id"], []).append(r)
    # one GPU per pod; ordinals follow the pods' names within each machine (ps-0 before worker-0)
    assert sorted(by_gpu) == [
        "m-0012:#0", "m-0012:#1", "m-0347:#0", "m-0981:#0", "m-0981:#1", "m-0981:#2",
    ]  # fmt: skip
    assert len(got) == len(PODS) * HOURS
    assert {len(v) for v in by_gpu.values()} == {HOURS}
    # the busy pod (m-0012 worker-0) is ordinal 0 of its machine: its hours are busy, its neighbour's idle
    assert min(r["util"] for r in by_gpu["m-0012:#0"]) > 60
    assert max(r["util"] for r in by_gpu["m-0012:#1"]) < 3
    # each hour joins the pod's two single-metric files: the same 60 instants (counted once), both means
    first = by_gpu["m-0012:#0"][0]
    assert first["samples"] == 60 and 60 < first["util"] < 95 and 20 * 1024 < first["mem"] < 30 * 1024


def test_the_ordinal_ids_are_the_same_whatever_the_file_order_and_on_a_fresh_ingest(
    as_written: list[dict[str, Any]], tmp_path: Path
) -> None:
    assert _gpu_hours(tmp_path, source_order="reversed") == as_written


def test_the_trace_files_are_single_metric(tmp_path: Path) -> None:
    write_trace(tmp_path)
    for name in (DUTY_FILE, MEMORY_FILE):
        assert (tmp_path / name).read_text(encoding="utf-8").splitlines()[0] == "timestamp,machine,pod,value"
