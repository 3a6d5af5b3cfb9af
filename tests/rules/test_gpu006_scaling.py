"""GPU006's measure and its place among the GPU rules.

`job_scaling` is built here from training logs read by the real `train_log` reader (JSON lines with a
configuration record per run, as a trainer that logs its arguments writes them) and jobs read by
`jobs_csv`: runs of one configuration are compared by per-GPU throughput whatever their data-parallel
degree, the best smaller run is the baseline, and a run without a configuration or without a smaller run
of its own configuration says what it lacks. Then a 16-GPU job that both scales badly (GPU006) and runs
at a low MFU (GPU005) is split between the two rules with no GPU-hour priced twice, under every threshold
setting of the precedence tests.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.warehouse import rows
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse, open_copy
from tests.helpers.gpu_precedence import SETTINGS, WEEK, check_no_double_counting, gpu_params
from tests.helpers.mart_rows import load_given
from tests.helpers.marts import build_only

START = datetime(2026, 11, 24)
LINE_S = 60
PARAMS = 7e9
# job id: (GPUs, tokens/s per GPU, configuration record or None, start hour)
RUNS: dict[str, tuple[int, float, dict[str, Any] | None, int]] = {
    "1": (8, 3000.0, {"model": "llm-7b", "tp": 8, "pp": 1, "dp": 1, "global_batch": 512}, 0),
    "2": (8, 2500.0, {"model": "llm-7b", "tp": 8, "pp": 1, "dp": 1, "global_batch": 512}, 1),
    "3": (64, 1500.0, {"model": "llm-7b", "tp": 8, "pp": 1, "dp": 8, "global_batch": 512}, 2),
    "4": (64, 1500.0, {"model": "llm-7b", "tp": 4, "pp": 1, "dp": 16, "global_batch": 512}, 3),
    "5": (64, 1500.0, None, 4),
}


def _log(job_id: str, gpus: int, per_gpu: float, config: dict[str, Any] | None, hour: int) -> str:
    t0 = START + timedelta(hours=hour)
    out = []
    if config is not None:
        out.append({"ts": f"{t0:%Y-%m-%dT%H:%M:%SZ}", "job_id": job_id, "seq_len": 4096, **config})
    for k in range(1, 7):
        out.append({
            "ts": f"{t0 + timedelta(seconds=LINE_S * k):%Y-%m-%dT%H:%M:%SZ}", "job_id": job_id, "step": k,
            "tokens": per_gpu * gpus * LINE_S, "params": PARAMS, "gpus": gpus, "seq_len": 4096,
        })  # fmt: skip
    return "\n".join(json.dumps(r) for r in out) + "\n"


@pytest.fixture(scope="module")
def scaling(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("scaling")
    (root / "landing" / "train").mkdir(parents=True)
    (root / "landing" / "jobs").mkdir(parents=True)
    jobs = ["job_id,job_name,state,started_at,ended_at,gpus_requested,gpu_type,hosts"]
    for job_id, (gpus, per_gpu, config, hour) in RUNS.items():
        (root / "landing" / "train" / f"run-{job_id}.jsonl").write_text(
            _log(job_id, gpus, per_gpu, config, hour), encoding="utf-8"
        )
        s, e = START + timedelta(hours=hour), START + timedelta(hours=hour, minutes=30)
        jobs.append(
            f"{job_id},llm-7b-{gpus},COMPLETED,{s:%Y-%m-%dT%H:%M:%SZ},{e:%Y-%m-%dT%H:%M:%SZ},{gpus},H100,gpu-{job_id}"
        )
    (root / "landing" / "jobs" / "jobs.csv").write_text("\n".join(jobs) + "\n", encoding="utf-8")
    config = load_config(
        write_config(
            root,
            """
            sources:
              - {name: jobs, kind: jobs_csv, uri: landing/jobs/jobs.csv}
              - {name: steps, kind: train_log, uri: landing/train/}
            """,
        )
    )
    con = new_warehouse(config.warehouse_path)
    try:
        report = ingest(con, config)
        assert not report.rejected, [o.error for o in report.rejected]
        build_only(con, "job_scaling")
        return {r["job_id"]: r for r in rows(con, "select * from job_scaling")}
    finally:
        con.close()


def test_runs_of_one_configuration_are_compared_whatever_their_data_parallel_degree(
    scaling: dict[str, dict[str, Any]],
) -> None:
    big = scaling["3"]
    assert big["layout"] == "tp=8,pp=1"  # dp=8 left out: job 1 ran the same layout at dp=1
    assert big["config_key"] == "model=llm-7b params=7e+09 batch=512 seq=4096 layout=tp=8,pp=1 gpu=H100"
    assert big["config_key"] == scaling["1"]["config_key"] == scaling["2"]["config_key"]
    assert big["gpu_count"] == 64 and big["tokens_per_gpu_s"] == pytest.approx(1500)
    # the best smaller run is the baseline (job 1 at 3,000 tokens/s per GPU, not job 2 at 2,500)
    assert (big["baseline_job_id"], big["baseline_gpu_count"]) == ("1", 8)
    assert big["efficiency"] == pytest.approx(0.5) and big["excess_share"] == pytest.approx(0.5)
    assert big["lacks"] is None


def test_a_run_without_a_comparable_smaller_run_says_what_it_lacks(
    scaling: dict[str, dict[str, Any]],
) -> None:
    # job 4's layout (tp=4) was never run smaller; jobs 1 and 2 are the smallest of theirs
    for job_id in ("1", "2", "4"):
        assert scaling[job_id]["efficiency"] is None
        assert scaling[job_id]["lacks"] == "no smaller run of the same configuration", job_id
    # job 5's log prints no configuration: it is compared with nothing
    assert scaling["5"]["config_key"] is None and scaling["5"]["efficiency"] is None
    assert scaling["5"]["lacks"].startswith("its training log gives no model configuration")


# A 16-GPU job on two 8×H100 instances (80.00 an hour) for 10 h, at half the per-GPU throughput of an 8-GPU
# run of its configuration (GPU006) and at 12 % MFU against the 25 % floor (GPU005).
COST = 80.0
MIXED: dict[str, Any] = {
    "resources": [{"resource_id": "i-1"}, {"resource_id": "i-2"}],
    "jobs_enriched": [
        {"job_id": "52400", "started_at": "2026-11-24T00:00", "ended_at": "2026-11-24T10:00",
         "gpus_requested": 16, "resource_ids": ["i-1", "i-2"]},
    ],
    "cost_hourly": [
        {"resource_id": rid, "from": "2026-11-24T00:00", "to": "2026-11-24T10:00", "effective_cost": COST}
        for rid in ("i-1", "i-2")
    ],
    "gpu_job_hours": [
        {"resource_id": rid, "job_id": "52400", "gpus": 8, "from": "2026-11-24T00:00", "to": "2026-11-24T10:00",
         "util_mean": 90.0, "util_p95": 98, "util_stddev": 4, "power_mean_w": 600}
        for rid in ("i-1", "i-2")
    ],
    "job_mfu": [
        {"job_key": "slurm/52400", "job_id": "52400", "scheduler": "slurm", "state": "COMPLETED",
         "started_at": "2026-11-24T00:00", "ended_at": "2026-11-24T10:00", "intervals": 600, "params": 7e9,
         "gpus": 16, "gpu_model": "H100", "peak_dense_tflops": 989.4, "mfu": 0.12, "power_share": 0.86,
         "util_mean": 90},
    ],
    "job_mfu_hourly": [{"job_key": "slurm/52400", "hour": "2026-11-24T00:00", "logged_s": 36000, "mfu": 0.12}],
    "job_scaling": [
        {"job_key": "slurm/52400", "job_id": "52400", "configured": True, "config_key": "model=llm-7b",
         "gpu_count": 16, "tokens_per_gpu_s": 1500, "baseline_job_key": "slurm/52300", "baseline_job_id": "52300",
         "baseline_gpu_count": 8, "baseline_tokens_per_gpu_s": 3000, "efficiency": 0.5, "excess_share": 0.5},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory, empty_marts: Path) -> duckdb.DuckDBPyConnection:
    con = open_copy(empty_marts, tmp_path_factory.mktemp("gpu006-mixed") / "wastewatch.duckdb")
    load_given(con, MIXED, {})
    yield con
    con.close()


def test_gpu006_takes_the_hours_beyond_linear_scaling_and_gpu005_the_shortfall_of_the_rest(
    mixed: duckdb.DuckDBPyConnection,
) -> None:
    waste = check_no_double_counting(mixed, WEEK, gpu_params({}))
    per_gpu_hour = COST / 8
    # 16 × (1 - 0.5) = 8 GPUs beyond linear scaling for 10 h, whole
    assert float(waste["GPU006"]) == pytest.approx(8 * 10 * per_gpu_hour, abs=0.01)
    # the other 8 GPUs for 10 h at the MFU shortfall (1 - 0.12 / 0.25)
    assert float(waste["GPU005"]) == pytest.approx(8 * 10 * per_gpu_hour * (1 - 0.12 / 0.25), abs=0.01)
    assert {r: float(v) for r, v in waste.items() if r not in ("GPU005", "GPU006")} == {
        "GPU001": 0, "GPU002": 0, "GPU003": 0, "GPU004": 0,
    }  # fmt: skip


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_no_gpu_hour_of_the_badly_scaling_job_is_priced_twice(
    mixed: duckdb.DuckDBPyConnection, setting: str
) -> None:
    overrides = {
        line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip()
        for line in SETTINGS[setting].splitlines()
    }
    params = gpu_params({rule: yaml.safe_load(value) for rule, value in overrides.items()})
    waste = check_no_double_counting(mixed, WEEK, params)
    assert float(sum(waste.values())) <= 2 * 10 * COST
