"""The GPU rules on `wastewatch demo` (one week, 2026-W48) against the amounts the demo planted.

expected.json states each plant's amount as the demo computed it from what it wrote (pipelines/demo.py
`_expected`), independently of the rule SQL: the instance's effective hourly cost x the time the job
records show x a share. A Slurm job of the demo starts 4 s after its first hour and ends 9 s before its
last one, so the job using 2 of 8 GPUs ran 71 h 59 min 47 s (USD 2,080.41 for its 6 unused GPUs, not the
2,080.51 of 72 whole hours); GPU003's idle share is that of the utilisation samples written while the job
ran (22.866 %, not the duty cycle's nominal 22.875 %). Each amount is compared to the cent: expected.json
rounds an exact decimal sum once, the findings are the rules' double-precision sums stored with 6
decimals, so the two can only differ by the rounding of a sum lying on a half cent (abs=0.01).
The planted crash on gpu-h100-09 is GPU004's (only the GPU time after the run's last checkpoint in the
demo's checkpoint bucket); so is every training job that failed at random, each listed in expected.json.
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
from tests.helpers.gpu_precedence import GPU_RULES, check_no_double_counting

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
    assert float(f["estimated_waste"]) == pytest.approx(plant["waste"], abs=0.01)
    assert plant["job_hours"] == pytest.approx(72 - 13 / 3600)  # sacct Start +4 s, End -9 s
    assert f["team"] == "nlp"


def test_gpu003_finds_the_input_starved_job(demo: tuple[Any, dict[str, Any], Path]) -> None:
    con, expected, _ = demo
    (f,) = findings(con, "GPU003")
    plant = expected["GPU003"]
    assert f["job_id"] == str(plant["job_id"]) and f["evidence"]["hosts"] == [plant["host"]]
    assert f["evidence"]["starved_gpus"] == 8
    assert f["evidence"]["util_mean_pct"] == pytest.approx(plant["util_mean_pct"], abs=0.01)
    assert plant["util_mean_pct"] == pytest.approx(22.875, abs=0.3)  # the duty cycle's nominal mean
    assert f["evidence"]["idle_sample_share"] == pytest.approx(0.75, abs=0.01)
    assert float(f["estimated_waste"]) == pytest.approx(plant["waste"], abs=0.01)


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
    # ... which is what the demo planted (expected.json's GPU004 crash)
    plant = expected["GPU004"]["crash"]
    assert crash["job_id"] == str(plant["job_id"])
    assert crash["evidence"]["last_checkpoint_at"] == plant["last_checkpoint_at"]
    assert crash["evidence"]["lost_gpu_hours"] == pytest.approx(plant["lost_gpu_hours"], abs=1.5e-4)
    assert float(crash["estimated_waste"]) == pytest.approx(plant["waste"], abs=0.01)


def test_gpu004_finds_every_failed_job_the_demo_lists_and_nothing_else(
    demo: tuple[Any, dict[str, Any], Path],
) -> None:
    """The random failures (~6 % of the training jobs longer than 8 h) are in expected.json too."""
    con, expected, _ = demo
    planted = {str(j["job_id"]): j for j in expected["GPU004"]["failed_jobs"]}
    assert [j["planted"] for j in planted.values()].count("crash") == 1
    assert "random failure" in {j["planted"] for j in planted.values()}  # seed 7 fails some at random
    found = {f["job_id"]: f for f in findings(con, "GPU004")}
    assert sorted(found) == sorted(planted)
    for job_id, f in found.items():
        plant = planted[job_id]
        assert f["status"] == "waste" and f["evidence"]["state"] == "FAILED", job_id
        assert f["evidence"]["hosts"] == plant["hosts"], job_id
        assert (f["evidence"]["started_at"], f["evidence"]["ended_at"]) == (
            plant["started_at"],
            plant["ended_at"],
        ), job_id
        assert f["evidence"]["last_checkpoint_at"] == plant["last_checkpoint_at"], job_id
        assert f["evidence"]["lost_gpu_hours"] == pytest.approx(plant["lost_gpu_hours"], abs=1.5e-4), job_id
        assert float(f["estimated_waste"]) == pytest.approx(plant["waste"], abs=0.01), job_id
    total = sum(float(f["estimated_waste"]) for f in found.values())
    assert total == pytest.approx(expected["GPU004"]["waste"], abs=0.01)


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
    # a rule with no waste has no stored finding
    assert {k: float(v) for k, v in waste.items() if v} == pytest.approx(stored, abs=0.01)
