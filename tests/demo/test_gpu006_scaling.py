"""GPU006 on `wastewatch demo` (one week, 2026-W48) against the plant expected.json states.

nlp's 2-node run (16 × H100) logs the same tokens per second as its single-node run on gpu-h100-08 (8 ×
H100) of the same model configuration: half the per-GPU throughput (pipelines/demo/scaling.py). GPU006
prices 8 of its 16 GPUs for its time in the week; the family's other runs of the week log nothing and are
`insufficient_data`, never 0 waste. The rules run once, in the demo's own pipeline; this reads its findings.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.warehouse import connect, rows


@pytest.fixture(scope="module")
def demo(demo_dir: tuple[Path, str]) -> Iterator[tuple[duckdb.DuckDBPyConnection, dict[str, Any]]]:
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text(encoding="utf-8"))
    con = connect(load_config(directory / "wastewatch.yaml").published_path, read_only=True)
    yield con, expected["report_week"]["rules"]["GPU006"]
    con.close()


def _findings(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    found = rows(
        con,
        "select * from findings where rule_id = 'GPU006' and week_start = '2026-11-23' order by resource_id",
    )
    return {f["job_id"]: {**f, "evidence": json.loads(f["evidence"])} for f in found}


def test_the_2_node_run_at_half_the_per_gpu_throughput_is_priced_to_the_cent(
    demo: tuple[duckdb.DuckDBPyConnection, dict[str, Any]],
) -> None:
    con, plant = demo
    found = _findings(con)
    f = found[str(plant["job_id"])]
    assert f["status"] == "waste" and f["team"] == "nlp"
    assert f["evidence"]["baseline_job_id"] == str(plant["baseline_job_id"])
    assert (f["evidence"]["gpus"], f["evidence"]["baseline_gpus"]) == (16, 8)
    assert f["evidence"]["efficiency"] == pytest.approx(plant["efficiency"], abs=1e-4) == 0.5
    # 8 of the 16 GPUs for the run's time in the week
    assert f["evidence"]["priced_gpu_hours"] == pytest.approx(plant["gpu_hours"] / 2, abs=1e-3)
    assert float(f["estimated_waste"]) == pytest.approx(plant["waste"], abs=0.01)
    assert "at 50% of the per-GPU throughput of job" in f["reason"]
    # the baseline is on fewer than min_gpus GPUs: a baseline, never judged itself
    assert str(plant["baseline_job_id"]) not in found


def test_the_familys_runs_without_a_training_log_are_insufficient_data(
    demo: tuple[duckdb.DuckDBPyConnection, dict[str, Any]],
) -> None:
    con, plant = demo
    found = _findings(con)
    unjudged = {k: f for k, f in found.items() if f["status"] == "insufficient_data"}
    assert sorted(unjudged) == sorted(str(j) for j in plant["insufficient_data"]) != []
    for f in unjudged.values():
        assert float(f["estimated_waste"]) == 0 and f["evidence"]["lacks"] == "no training log"
    assert set(found) == set(unjudged) | {str(plant["job_id"])}
