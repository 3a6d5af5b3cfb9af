"""The GPU rules on `wastewatch demo` (one week, 2026-W48) against the amounts the demo planted.

expected.json states each plant's amount by the demo's own formula (pipelines/demo.py `_expected`): whole
hours x the instance's effective hourly cost x a share. The rules price the time the telemetry and the
job records show, so two amounts differ by design, by less than 0.01 %: a Slurm job of the demo starts 4 s
after its first hour and ends 9 s before its last one (GPU002 prices the job's own 71 h 59 min 47 s), and
GPU003 prices the idle share it measured from the samples (the demo's 22.875 % is the duty cycle's
nominal mean). The planted crash on gpu-h100-09 is GPU004's (only the GPU time after the run's last
checkpoint in the demo's checkpoint bucket), checked against expected.json's GPU004 entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.warehouse import connect, rows
from rules import Window, get_rule
from tests.test_gpu_precedence import GPU_RULES, check_no_double_counting

WEEK = "2026-W48"


@pytest.fixture(scope="module")
def demo(demo_dir: tuple[Path, str]) -> Iterator[tuple[duckdb.DuckDBPyConnection, dict[str, Any], Path]]:
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text(encoding="utf-8"))
    config = load_config(directory / "wastewatch.yaml")
    con = connect(config.published_path, read_only=True)
    yield con, expected["report_week"]["rules"], directory / "wastewatch.yaml"
    con.close()


def findings(con: duckdb.DuckDBPyConnection, rule_id: str) -> list[dict[str, Any]]:
    found = rows(
        con,
        "select f.*, r.host from findings as f left join resources as r on r.resource_id = f.resource_id "
        "where f.rule_id = $r and f.week_start = '2026-11-23' order by f.resource_id",
        {"r": rule_id},
    )
    return [{**f, "evidence": json.loads(f["evidence"])} for f in found]


def test_gpu001_finds_every_planted_idle_host_to_the_cent(demo: tuple[Any, dict[str, Any], Path]) -> None:
    con, expected, _ = demo
    found = findings(con, "GPU001")
    waste = {f["host"]: float(f["estimated_waste"]) for f in found if f["status"] == "waste"}
    assert waste == pytest.approx(expected["GPU001"]["by_host"], abs=0.01)
    assert sum(waste.values()) == pytest.approx(expected["GPU001"]["waste"], abs=0.02)
    dark = expected["GPU001"]["insufficient_data"]
    (outage,) = [f for f in found if f["status"] == "insufficient_data"]
    assert outage["host"] == dark["host"]
    assert outage["evidence"]["hours_without_telemetry"] == dark["hours_without_telemetry"]
    assert float(outage["estimated_waste"]) == 0
    # the parked notebook is idle although it holds 86 % of its GPUs' memory
    (notebook,) = [f for f in found if f["host"] == "gpu-h100-06"]
    assert "while holding" in notebook["reason"] and "(86%) of GPU memory" in notebook["reason"]


def test_gpu002_finds_the_job_using_2_of_8_gpus(demo: tuple[Any, dict[str, Any], Path]) -> None:
    con, expected, _ = demo
    (f,) = findings(con, "GPU002")
    plant = expected["GPU002"]
    assert f["job_id"] == str(plant["job_id"]) and f["resource_id"] == f"slurm/{plant['job_id']}"
    assert f["evidence"]["hosts"] == [plant["host"]]
    assert (f["evidence"]["unused_gpus"], f["evidence"]["used_gpus"]) == (6, 2)
    assert f"on {plant['host']} used 2 of its 8×H100 80GB HBM3 for 72.0 h" in f["reason"]
    assert float(f["estimated_waste"]) == pytest.approx(plant["waste"], rel=1e-4)
    assert f["team"] == "nlp"


def test_gpu003_finds_the_input_starved_job(demo: tuple[Any, dict[str, Any], Path]) -> None:
    con, expected, _ = demo
    (f,) = findings(con, "GPU003")
    plant = expected["GPU003"]
    assert f["job_id"] == str(plant["job_id"]) and f["evidence"]["hosts"] == [plant["host"]]
    assert f["evidence"]["starved_gpus"] == 8
    assert f["evidence"]["util_mean_pct"] == pytest.approx(22.875, abs=0.3)
    assert f["evidence"]["idle_sample_share"] == pytest.approx(0.75, abs=0.01)
    assert float(f["estimated_waste"]) == pytest.approx(plant["waste"], rel=1e-3)


def test_gpu004_prices_the_crash_and_leaves_the_idle_hours_after_it_to_gpu001(
    demo: tuple[Any, dict[str, Any], Path],
) -> None:
    con, expected, _ = demo
    (idle,) = [f for f in findings(con, "GPU001") if f["host"] == "gpu-h100-09"]
    (stretch,) = idle["evidence"]["stretches"]
    idle_from = datetime.fromisoformat(stretch["start"].rstrip("Z"))
    failed = findings(con, "GPU004")
    assert failed and all(
        f["evidence"]["kind"] == "failed_job" for f in failed
    )  # no zombie: telemetry saw idle
    (crash,) = [
        f for f in failed
        if 0 <= (idle_from - datetime.fromisoformat(f["evidence"]["ended_at"].rstrip("Z"))).total_seconds() <= 60
    ]  # fmt: skip
    assert crash["evidence"]["hosts"] == ["gpu-h100-09"] and crash["evidence"]["state"] == "FAILED"
    assert crash["evidence"]["runtime_hours"] == pytest.approx(20, abs=0.01)
    # the run's checkpoints in the demo's checkpoint bucket: only the GPU time after the last one is lost
    assert crash["evidence"]["checkpoint_source"] == "storage inventory"
    last = datetime.fromisoformat(crash["evidence"]["last_checkpoint_at"].rstrip("Z"))
    ended = datetime.fromisoformat(crash["evidence"]["ended_at"].rstrip("Z"))
    lost_h = (ended - last).total_seconds() / 3600
    assert 0 < lost_h < 20
    assert crash["evidence"]["lost_gpu_hours"] == pytest.approx(8 * lost_h, abs=0.01)
    hourly = expected["GPU001"]["by_host"]["gpu-h100-09"] / stretch["hours"]
    assert float(crash["estimated_waste"]) == pytest.approx(lost_h * hourly, abs=0.05)
    assert "since its last checkpoint at" in crash["reason"]
    # ... which is what the demo planted (expected.json's GPU004)
    assert crash["job_id"] == str(expected["GPU004"]["job_id"])
    assert crash["evidence"]["last_checkpoint_at"].rstrip("Z") == expected["GPU004"][
        "last_checkpoint_at"
    ].rstrip("Z")
    assert float(crash["estimated_waste"]) == pytest.approx(expected["GPU004"]["waste"], abs=0.01)


def test_no_gpu_hour_of_the_demo_is_priced_twice(demo: tuple[Any, dict[str, Any], Path]) -> None:
    con, _, config_path = demo
    config = load_config(config_path)
    params = {r: get_rule(r).make_params(config.rule_overrides(r), config) for r in GPU_RULES}
    waste = check_no_double_counting(con, Window.iso_week(WEEK), params)
    stored = {
        r["rule_id"]: float(r["waste"])
        for r in rows(
            con,
            "select rule_id, sum(estimated_waste) as waste from findings where status = 'waste' "
            "and week_start = '2026-11-23' and rule_id like 'GPU%' group by 1",
        )
    }
    assert {k: float(v) for k, v in waste.items()} == pytest.approx(stored, abs=0.01)
