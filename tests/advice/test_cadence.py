"""ADV003 checkpoint-cadence advice on a small warehouse of hand-made rows: the measured MTBF (job-hours per
failed run, with its exact Poisson interval), δ (train-log save lines, else the utilisation dip around the
checkpoint objects' writes), the current interval (checkpoint objects' times), the Young/Daly optimum and both
sides' money a week, each against the hand computation; the inputs missing give insufficient_data naming them,
never 0 as if measured."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.advice.cadence import ADVISOR, CadenceParams, poisson_interval
from rules import Window
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.mart_rows import load_given

WEEK = Window.iso_week("2026-W48")
MON = WEEK.start
RATE = 10.0  # effective cost of a GPU-hour
GIB = 1024**3


def _job(job_id: int, name: str, start: datetime, hours: int, host: str) -> dict[str, Any]:
    return {
        "job_id": str(job_id), "job_name": name, "team": "nlp", "project": "llm", "started_at": start,
        "ended_at": start + timedelta(hours=hours), "nodes": 1, "gpu_hours": 8 * hours,
        "cost": 8 * hours * RATE, "currency": "USD", "resource_ids": ["i-a"], "hosts": [host],
    }  # fmt: skip


def _checkpoint(job_id: int, step: int, written: datetime) -> dict[str, Any]:
    return {
        "store": "s3", "bucket": "ckpt", "run_prefix": f"run-{job_id}", "run_id": f"run-{job_id}", "step": step,
        "step_written": written, "last_modified": written, "run_job_ids": [str(job_id)],
        "storage_class": "STANDARD", "size_bytes": 100 * GIB, "price_per_gb_month": 0.023, "currency": "USD",
    }  # fmt: skip


def _warehouse(tmp_path: Path, empty_marts: Path) -> duckdb.DuckDBPyConnection:
    """pretrain-a: four 24-hour 8-GPU runs (two FAILED), a checkpoint every 6 hours, 360 s to save (log);
    tuned-d: three runs, one FAILED, a checkpoint every 4 hours and no log, the GPUs idle 3 minutes at each
    write; finetune-b: three runs that never failed; eval-c: three runs, one failed, no checkpoint, no log."""
    jobs, ckpts, raw, saves, samples = [], [], [], [], []

    def run(job_id: int, name: str, start: datetime, hours: int, state: str, host: str) -> None:
        jobs.append({**_job(job_id, name, start, hours, host), "state": state})
        raw.append((str(job_id), name, state, start, start + timedelta(hours=hours), host))

    for n in range(4):
        start = MON + timedelta(days=n)
        run(100 + n, f"pretrain-a-{100 + n}", start, 24, "FAILED" if n < 2 else "COMPLETED", "gpu-a")
        for k in (1, 2, 3):
            ckpts.append(_checkpoint(100 + n, k, start + timedelta(hours=6 * k)))
            saves.append((str(100 + n), start + timedelta(hours=6 * k), 360.0))
    for n in range(3):
        start = MON + timedelta(days=n, hours=1)
        run(400 + n, f"tuned-d-{400 + n}", start, 12, "NODE_FAIL" if n == 0 else "COMPLETED", f"gpu-d{n}")
        for k in (1, 2):
            written = start + timedelta(hours=4 * k)
            ckpts.append({**_checkpoint(400 + n, k, written), "size_bytes": 0})
            for gpu in (0, 1):  # a sample a minute from 10 minutes before to 10 after; 0 % for 3 minutes
                for m in range(-10, 11):
                    util = 0.0 if m in (0, 1, 2) else 95.0
                    samples.append((f"gpu-d{n}", gpu, written + timedelta(minutes=m), util))
    for n in range(3):
        run(200 + n, f"finetune-b-{200 + n}", MON + timedelta(days=n, hours=2), 10, "COMPLETED", "gpu-b")
        ckpts += [_checkpoint(200 + n, k, MON + timedelta(days=n, hours=2 + 3 * k)) for k in (1, 2)]
    for n in range(3):
        run(
            300 + n,
            f"eval-c-{300 + n}",
            MON + timedelta(days=n, hours=3),
            6,
            "FAILED" if n else "COMPLETED",
            "gpu-c",
        )
    con = open_copy(empty_marts, tmp_path / "w.duckdb")
    load_given(
        con,
        {
            "resources": [{"resource_id": "i-a", "instance_type": "p5.48xlarge", "pricing_basis": "bill"}],
            "jobs_enriched": jobs,
            "storage_checkpoints": ckpts,
        },
        {},
    )
    for job_id, name, state, start, end, host in raw:
        con.execute(
            "insert into jobs (job_id, scheduler, job_name, state, started_at, ended_at, gpus_requested, hosts, "
            "source, x_source_file, x_file_id) values ($id, 'slurm', $n, $st, $s, $e, 8, [$h], 'slurm', 'a.txt', 'f')",
            {"id": job_id, "n": name, "st": state, "s": start, "e": end, "h": host},
        )
    for i, (job_id, ts, seconds) in enumerate(saves):
        con.execute(
            "insert into train_steps (ts, job_id, event, save_s, source, x_source_file, x_file_id, x_line) "
            "values ($ts, $j, 'checkpoint', $s, 'log', 'train.log', 'g', $i)",
            {"ts": ts, "j": job_id, "s": seconds, "i": i + 1},
        )
    for host, gpu, ts, util in samples:
        con.execute(
            "insert into gpu_samples (ts, host, gpu_index, util_pct, source, x_source_file, x_file_id, x_sample_date) "
            "values ($ts, $h, $g, $u, 'smi', 's.csv', 's', $ts::date)",
            {"ts": ts, "h": host, "g": gpu, "u": util},
        )
    return con


@pytest.fixture
def items(tmp_path: Path, empty_marts: Path) -> dict[str, dict[str, Any]]:
    con = _warehouse(tmp_path, empty_marts)
    try:
        found = ADVISOR.rows(con, WEEK, CadenceParams(), datetime(2026, 12, 1))
    finally:
        con.close()
    return {i["resource_id"].split("@")[0]: {**i, "evidence": json.loads(i["evidence"])} for i in found}


def _week(hours: float, mtbf: float, delta_h: float, tau_now: float, stored_week: float) -> dict[str, float]:
    """The hand computation of docs/advice.md's ADV003 table, for 8 GPUs at RATE and a 15-minute restart."""
    opt = math.sqrt(2 * delta_h * mtbf)
    fails = hours / mtbf

    def side(tau: float, storage: float) -> tuple[float, float, float]:
        return fails * (tau / 2 + 0.25) * 8 * RATE, hours / tau * delta_h * 8 * RATE, storage

    now, best = side(tau_now, stored_week), side(opt, stored_week * tau_now / opt)
    return {"optimum": opt, "now": sum(now), "optimal": sum(best), "lost_now": now[0], "stalls_now": now[1],
            "lost_opt": best[0], "stalls_opt": best[1], "storage_opt": best[2]}  # fmt: skip


def test_a_type_saving_too_rarely_for_its_failures_is_recommended_with_both_sides_to_the_cent(
    items: dict[str, dict[str, Any]],
) -> None:
    a = items["pretrain-a"]
    e = a["evidence"]
    assert a["status"] == "recommended" and a["resource_id"] == "pretrain-a@AWS/us-east-1/p5"
    # 2 failed runs in 4 x 24 job-hours: MTBF 48 h; the count's exact 95 % interval is 0.242 to 7.225 failures
    assert (e["failures"], e["failure_job_hours"], e["mtbf_hours"]) == (2, 96, 48)
    low, high = poisson_interval(2)
    assert (round(low, 4), round(high, 4)) == (0.2422, 7.2247)
    assert e["mtbf_hours_low"] == pytest.approx(96 / high) and e["mtbf_hours_high"] == pytest.approx(96 / low)
    assert (e["write_seconds"], e["write_seconds_from"], e["write_seconds_measurements"]) == (
        360, "train log save lines", 12,
    )  # fmt: skip
    # checkpoints at +6, +12 and +18 h of each run: 18 h from the start over 3 checkpoints
    assert (e["interval_hours"], e["interval_from"], e["interval_gaps"]) == (
        6,
        "checkpoint objects' write times",
        12,
    )
    # twelve 100 GiB checkpoints at 0.023 a GB-month: 27.60 a month, 27.60 x 7 / 30.44 a week
    stored_week = 12 * 100 * 0.023 * 7 / 30.44
    want = _week(96, 48, 0.1, 6, stored_week)
    assert e["optimum_hours"] == pytest.approx(math.sqrt(9.6))  # √(2 x 0.1 h x 48 h) = 3.10 h
    assert (e["job_hours_per_week"], e["gpus"], e["cost_per_gpu_hour"], e["failures_per_week"]) == (
        96,
        8,
        10,
        2,
    )
    # now: 2 failures x (3 h + 0.25 h) x 8 GPUs x 10 = 520.00; 16 saves x 0.1 h x 80 = 128.00; storage 6.35
    assert (round(e["lost_work_now"], 2), round(e["write_stalls_now"], 2)) == (520.00, 128.00)
    assert round(e["storage_now"], 2) == round(stored_week, 2) == 6.35
    assert round(e["total_now"], 2) == round(want["now"], 2) == 654.35
    assert (round(e["lost_work_optimal"], 2), round(e["write_stalls_optimal"], 2)) == (
        round(want["lost_opt"], 2), round(want["stalls_opt"], 2),
    )  # fmt: skip
    assert round(e["storage_optimal"], 2) == round(want["storage_opt"], 2)
    assert round(e["total_optimal"], 2) == round(want["optimal"], 2)
    assert abs(a["estimated_saving"] - Decimal(str(round(want["now"] - want["optimal"], 2)))) <= Decimal(
        "0.005"
    )
    assert "saves every 6.0 h" in a["reason"] and "the optimum is every 3.1 h" in a["reason"]
    assert "more often" in a["reason"] and "√(2·δ·MTBF)" in a["basis"]


def test_without_save_lines_the_write_time_is_the_utilisation_dip_at_each_checkpoint(
    items: dict[str, dict[str, Any]],
) -> None:
    d = items["tuned-d"]["evidence"]
    # 3 samples a minute apart below 20 % on each GPU: 180 s at each of the 6 writes
    assert (d["write_seconds"], d["write_seconds_from"], d["write_seconds_measurements"]) == (
        180, "GPU utilisation dip at the checkpoint writes", 6,
    )  # fmt: skip
    assert (d["failures"], d["mtbf_hours"], d["interval_hours"]) == (1, 36, 4)
    assert d["optimum_hours"] == pytest.approx(math.sqrt(2 * 0.05 * 36))


def test_the_floor_keeps_a_small_saving_from_being_recommended(tmp_path: Path, empty_marts: Path) -> None:
    con = _warehouse(tmp_path, empty_marts)
    try:
        found = ADVISOR.rows(con, WEEK, CadenceParams(min_weekly_saving=500), datetime(2026, 12, 1))
    finally:
        con.close()
    [a] = [i for i in found if i["resource_id"].startswith("pretrain-a@")]
    assert a["status"] == "not_recommended" and a["estimated_saving"] == 0
    assert "below the USD 500.00 floor" in a["reason"]


def test_missing_inputs_are_insufficient_data_naming_what_is_missing_never_zero(
    items: dict[str, dict[str, Any]],
) -> None:
    b, c = items["finetune-b"], items["eval-c"]
    assert b["status"] == c["status"] == "insufficient_data"
    assert b["estimated_saving"] == c["estimated_saving"] == 0
    # no failure in 30 job-hours: MTBF at least 30 / 3.689 h
    assert "no failure in 30.0 job-hours" in b["reason"] and "at least 8 h" in b["reason"]
    assert b["evidence"]["mtbf_hours"] is None and "total_now" not in b["evidence"]
    assert "no checkpoint write time" in b["reason"]  # objects, but no log and no telemetry
    assert "no current interval" not in b["reason"]
    assert "no checkpoint write time" in c["reason"] and "no current interval" in c["reason"]
    assert "no failure" not in c["reason"]


def test_one_off_and_unbilled_jobs_give_no_item(tmp_path: Path, empty_marts: Path) -> None:
    con = open_copy(empty_marts, tmp_path / "w.duckdb")
    try:
        load_given(con, {"jobs_enriched": [_job(1, "oneoff-1", MON, 5, "h")]}, {})
        assert ADVISOR.rows(con, WEEK, CadenceParams(), datetime(2026, 12, 1)) == []
    finally:
        con.close()
