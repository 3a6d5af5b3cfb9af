"""`wastewatch estimate`: the training-cost estimate, its formulas, its table of peak FLOP/s and its measurements."""

from __future__ import annotations

import csv
import json
import math
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipelines.advice.estimate import (
    CATALOG,
    DEFAULT_MTBF_GPU_HOURS,
    EstimateError,
    estimate,
    find_gpu,
    gpu_catalog,
)
from pipelines.cli import main
from pipelines.config import load_config
from pipelines.transform.build import build_marts
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse, open_copy
from tests.helpers.report import Marts

ACCEPTANCE = [
    "estimate",
    "--params",
    "7e9",
    "--tokens",
    "2e12",
    "--gpu",
    "h100",
    "--gpus",
    "512",
    "--mfu",
    "0.4",
]


def _run(*args: str, config: Path | None = None) -> tuple[int, str]:
    pre = ["--config", str(config)] if config else []
    result = CliRunner().invoke(main, [*pre, *args])
    # JSON is read from stdout alone: stderr names the config file read
    return result.exit_code, result.stdout if "--json" in args else result.output


def test_the_issue_acceptance_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no wastewatch.yaml here: nothing is measured, the price is given
    code, out = _run(*ACCEPTANCE, "--price", "2.5", "--json")
    assert code == 0, out
    e = json.loads(out)
    assert e["flops"] == pytest.approx(8.4e22, rel=1e-12)
    h100 = 989.4e12  # dense BF16 FLOP/s of an H100 SXM
    gpu_hours = 8.4e22 / (h100 * 0.4) / 3600
    assert e["gpu_hours"] == pytest.approx(gpu_hours, rel=1e-3)
    assert e["wall_hours"] == pytest.approx(gpu_hours / 512, rel=1e-3)
    assert e["compute_cost"] == pytest.approx(gpu_hours * 2.5, rel=1e-3)
    assert e["price_source"] == "given" and e["gpu"] == "H100"


def test_checkpoint_interval_is_young_daly_and_the_reserve_follows_from_it() -> None:
    e = estimate(7e9, 2e12, "h100", 512, 0.4, price=2.5, mtbf_gpu_hours=51200.0, ckpt_write_gbps=10.0)
    job_mtbf = 51200.0 / 512  # 100 h
    write_s = 7e9 * 14 / 10e9  # 9.8 s
    assert e.job_mtbf_hours == pytest.approx(job_mtbf)
    assert e.checkpoint_write_seconds == pytest.approx(write_s)
    tau = math.sqrt(2 * (write_s / 3600) * job_mtbf)
    assert e.young_daly_interval_hours == pytest.approx(tau) and e.save_interval_hours == pytest.approx(tau)
    failures = e.wall_hours / job_mtbf
    assert e.expected_failures == pytest.approx(failures)
    assert e.failure_reserve_gpu_hours == pytest.approx(failures * (tau / 2 + 10 / 60) * 512)
    assert e.saves == math.ceil(e.wall_hours / tau)
    assert e.checkpoint_overhead_gpu_hours == pytest.approx(e.saves * write_s / 3600 * 512)
    assert e.checkpoint_bytes_retained == pytest.approx(5 * 7e9 * 14)  # the last 5 kept
    assert e.total_cost == pytest.approx(
        (e.gpu_hours + e.failure_reserve_gpu_hours + e.checkpoint_overhead_gpu_hours) * 2.5 + e.storage_cost
    )


def test_a_fixed_save_interval_and_keeping_everything() -> None:
    e = estimate(1e9, 1e11, "a100", 8, 0.5, price=1.0, save_every_hours=2.0, keep=None)
    assert e.save_interval_hours == 2.0 and e.checkpoints_kept is None
    assert e.checkpoint_bytes_retained == e.checkpoint_bytes_written == e.saves * 1e9 * 14


def test_peak_flops_table_covers_the_required_gpus_with_sources() -> None:
    models = {s.model for s in gpu_catalog()}
    assert {"A100", "H100", "H200", "B200", "MI300X", "L40S"} <= models
    for spec in gpu_catalog():
        assert spec.peak_dense_tflops > 0 and spec.precision in {"BF16", "FP16"}
        assert spec.source and spec.source_url.startswith("https://"), spec.model
    # dense, not the datasheets' "with sparsity" figures
    assert find_gpu("H100").peak_dense_tflops == 989.4
    assert find_gpu("mi300x").peak_dense_tflops == 1307.4
    assert find_gpu("NVIDIA L40S").peak_dense_tflops == 362.05
    assert find_gpu("b200").peak_dense_tflops == 2250
    with CATALOG.open(newline="", encoding="utf-8") as f:
        aliases = [a for r in csv.DictReader(f) for a in r["aliases"].split(";")]
    assert len(aliases) == len(set(aliases)), "an alias names two GPUs"
    code, out = _run("estimate", "--list-gpus")
    assert code == 0 and "MI300X" in out and "1,307.4" in out


def test_price_and_failure_rate_measured_from_the_warehouse(tmp_path: Path, empty_marts: Path) -> None:
    config_path = write_config(tmp_path, "{}\n")
    config = load_config(config_path)
    con = open_copy(empty_marts, config.warehouse_path)
    m = Marts(con)
    m.resource("i-h100", team="nlp")  # 8 GPUs at 80.00 an hour: 10.00 per GPU-hour
    start = datetime(2026, 11, 2)
    m.bill("i-h100", start, start + timedelta(days=7), 80.0)
    m.flush()
    # 200 finished 8-GPU jobs of 10 h (16,000 GPU-hours), 4 of them failed: 4,000 GPU-hours per failure
    for i in range(200):
        s = start + timedelta(hours=i)
        state = "NODE_FAIL" if i < 2 else "FAILED" if i < 4 else "CANCELLED" if i < 10 else "COMPLETED"
        con.execute(
            "insert into jobs (job_id, scheduler, state, started_at, ended_at, gpus_requested, source, "
            "x_source_file, x_file_id) values ($id, 'slurm', $st, $s, $e, 8, 'slurm', 'sacct.txt', 'f')",
            {"id": str(i), "st": state, "s": s, "e": s + timedelta(hours=10)},
        )
    con.close()
    code, out = _run(*ACCEPTANCE, "--json", config=config_path)
    assert code == 0, out
    e = json.loads(out)
    assert e["price_per_gpu_hour"] == pytest.approx(10.0)
    assert e["price_source"].startswith("measured: effective cost of 1,344 billed H100 GPU-hours")
    assert e["mtbf_gpu_hours"] == pytest.approx(4000.0)
    assert "4 failed job(s)" in e["mtbf_source"] and "16,000 GPU-hours" in e["mtbf_source"]
    code, text = _run(*ACCEPTANCE, config=config_path)
    assert code == 0 and "USD 10.00 per GPU-hour (measured" in text and "Young/Daly" in text


def test_without_a_price_the_costs_are_left_out_not_guessed(tmp_path: Path) -> None:
    config_path = write_config(tmp_path, "{}\n")
    con = new_warehouse(load_config(config_path).warehouse_path)
    build_marts(con)
    con.close()
    code, out = _run(*ACCEPTANCE, "--json", config=config_path)
    e = json.loads(out)
    assert code == 0 and e["price_per_gpu_hour"] is None and e["total_cost"] is None
    assert e["mtbf_gpu_hours"] == pytest.approx(DEFAULT_MTBF_GPU_HOURS)  # no jobs: the published rate
    assert any("no price per GPU-hour" in n for n in e["notes"])
    code, text = _run(*ACCEPTANCE, config=config_path)
    assert "compute cost       –" in text and "give --price" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--params", "7e9", "--tokens", "2e12", "--gpu", "h900", "--gpus", "8"], "unknown GPU 'h900'; known: A100"),
        (["--params", "seven", "--tokens", "2e12", "--gpu", "h100", "--gpus", "8"], "'seven' is not a number"),
        (["--params", "-7e9", "--tokens", "2e12", "--gpu", "h100", "--gpus", "8"], "must be a positive number"),
        (["--params", "7e9", "--tokens", "2e12", "--gpu", "h100", "--gpus", "0"], "--gpus"),
        (["--params", "7e9", "--tokens", "2e12", "--gpu", "h100", "--gpus", "8", "--mfu", "1.5"], "--mfu"),
        (["--params", "7e9", "--gpu", "h100", "--gpus", "8"], "missing --tokens"),
    ],
)  # fmt: skip
def test_bad_inputs_are_usage_errors(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = _run("estimate", *args)
    assert code == 2 and message in out, out


def test_suffixed_counts_and_library_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = _run(
        "estimate", "--params", "7B", "--tokens", "2T", "--gpu", "H100", "--gpus", "512", "--json"
    )
    assert code == 0 and json.loads(out)["flops"] == pytest.approx(8.4e22)
    with pytest.raises(EstimateError, match="must be a share"):
        estimate(7e9, 2e12, "h100", 8, 0.0)


@pytest.fixture(scope="module")
def h200_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The H200 capture ingested with its training log: three finished 941M-parameter H200 jobs measured."""
    from pipelines.ingest import ingest
    from tests.helpers.paths import H200, copy_into

    root = tmp_path_factory.mktemp("h200-estimate")
    copy_into(H200 / "nvidia_smi_query_gpu.csv", root / "landing" / "telemetry")
    copy_into(H200 / "phases.csv", root / "landing" / "jobs")
    copy_into(H200 / "train_log.csv", root / "landing" / "train")
    path = write_config(
        root,
        """
        sources:
          - {name: smi, kind: nvidia_smi, uri: landing/telemetry/, options: {host: h200-lab}}
          - name: phases
            kind: jobs_csv
            uri: landing/jobs/phases.csv
            options:
              columns: {started_at: start_ts, ended_at: end_ts, state: exit_status, job_name: phase}
              host: h200-lab
          - {name: steps, kind: train_log, uri: landing/train/, options: {host: h200-lab}}
        """,
    )
    config = load_config(path)
    con = new_warehouse(config.warehouse_path)
    assert not ingest(con, config).rejected
    build_marts(con)
    con.close()
    return path


def test_mfu_measured_is_the_median_of_comparable_finished_jobs(h200_project: Path) -> None:
    args = [
        "estimate",
        "--params",
        "1e9",
        "--tokens",
        "1e11",
        "--gpu",
        "h200",
        "--gpus",
        "8",
        "--mfu",
        "measured",
    ]
    code, out = _run(*args, "--json", config=h200_project)
    assert code == 0, out
    e = json.loads(out)
    # job-001 (0.484), job-002 (0.137) and the failed job-005 (0.487) ran 941M parameters on an H200; the tiny
    # job-003 (19.7M) is not within 2x of 1e9
    assert e["mfu_jobs"] == 3
    assert e["mfu"] == pytest.approx(0.484, abs=0.001)
    assert e["mfu_source"].startswith("measured: median MFU of 3 finished H200 job(s)")
    assert e["gpu_hours"] == pytest.approx(6 * 1e9 * 1e11 / (989.4e12 * e["mfu"]) / 3600, rel=1e-9)
    code, text = _run(*args, config=h200_project)
    assert code == 0 and "MFU                0.48 (measured: median MFU of 3 finished H200 job(s)" in text


def test_mfu_measured_without_comparable_jobs_says_so_and_uses_the_default(h200_project: Path) -> None:
    code, out = _run(
        "estimate", "--params", "70e9", "--tokens", "1e12", "--gpu", "h200", "--gpus", "64", "--mfu", "measured",
        "--mfu-default", "0.35", "--json", config=h200_project,
    )  # fmt: skip
    assert code == 0, out
    e = json.loads(out)
    assert e["mfu"] == 0.35 and e["mfu_jobs"] == 0
    assert e["mfu_source"] == "default 0.35: no measured MFU to use"
    assert any("no finished H200 job with a parameter count within 2x of 7e+10" in n for n in e["notes"])
    code, out = _run("estimate", "--params", "7e9", "--tokens", "2e12", "--gpu", "h100", "--gpus", "8",
                     "--mfu", "lots")  # fmt: skip
    assert code == 2 and "neither a share of the peak like 0.4 nor 'measured'" in out
