"""Money is never counted twice across the GPU rules (every rule that reads gpu_claims): a GPU-hour is priced
by at most one.

Every GPU rule's query.sql names what it prices in a `priced_units` CTE (resource, hour, the part of the
hour, the GPU or NULL for the whole instance, the money). These tests run that CTE of every rule on a
week where every rule has something to claim, side by side in the same hours, under several threshold
settings given the way users give them (wastewatch.yaml `rules:`, so the precedence thresholds reach the
later rules through their `config_params`), and check that no unit is priced twice, that no resource-hour
is priced above its cost, that each rule's findings add up to its units, and that the GPU rules' waste
together never exceeds the GPU spend.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import Config, load_config
from rules import get_rule
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.gpu_precedence import GPU_RULES, SETTINGS, WEEK, check_no_double_counting
from tests.helpers.mart_rows import load_given

COST = 98.32  # an 8-GPU instance-hour

# A week in which every rule has a claim, several of them on the same instance and hours:
#   i-1 (8 GPUs): Mon 00-06 job 101 FAILED at 80 % (GPU004); 06-12 no job, telemetry idle (GPU001, also
#       "after the last job" but observed); 12-20 job 102 uses 2 of 8 GPUs (GPU002), with 16-18 all
#       idle (GPU001 if >= 2 h); 20-Tue 04 job 103 input-starved at 22.9 % in bursts (GPU003), its GPU 7
#       unused (GPU002); Tue 04-12 no telemetry, no job (GPU004 zombie; GPU001 insufficient data).
#   i-2 (1 H200): Mon 00-08 job 201 tiny model, 12 % mean / 20 % p95 at 2 GB (GPU002 MIG fit), but a
#       bursty 12 % too (GPU003's pattern but p95 below GPU002's bound); 08-10 idle (GPU001).
#   i-3 (8 GPUs): Mon 08-10 job 301 FAILED, 10-12 idle telemetry (GPU001), 12-14 job 302 FAILED, 14-16
#       no telemetry, no job (GPU004 zombie). Jobs 101, 301 and 302 are llm-pretrain failing three times
#       in 8 hours on two instances: one GPU004 crash loop, priced once.
SCENARIO: dict[str, Any] = {
    "resources": [
        {"resource_id": "i-1", "host": "gpu-a"},
        {"resource_id": "i-2", "host": "gpu-b", "gpu_model": "H200", "gpu_count": 1, "instance_type": None},
        {"resource_id": "i-3", "host": "gpu-c"},
    ],
    "jobs_enriched": [
        {"job_id": "101", "job_name": "llm-pretrain", "state": "FAILED", "started_at": "2026-11-23T00:00",
         "ended_at": "2026-11-23T06:00", "resource_ids": ["i-1"]},
        {"job_id": "301", "job_name": "llm-pretrain", "state": "FAILED", "started_at": "2026-11-23T08:00",
         "ended_at": "2026-11-23T10:00", "resource_ids": ["i-3"]},
        {"job_id": "302", "job_name": "llm-pretrain", "state": "FAILED", "started_at": "2026-11-23T12:00",
         "ended_at": "2026-11-23T14:00", "resource_ids": ["i-3"]},
        {"job_id": "102", "started_at": "2026-11-23T12:00", "ended_at": "2026-11-23T20:00", "resource_ids": ["i-1"]},
        {"job_id": "103", "started_at": "2026-11-23T20:00", "ended_at": "2026-11-24T04:00", "resource_ids": ["i-1"]},
        {"job_id": "201", "started_at": "2026-11-23T00:00", "ended_at": "2026-11-23T08:00", "resource_ids": ["i-2"]},
    ],
    "cost_hourly": [
        {"resource_id": "i-1", "from": "2026-11-23T00:00", "to": "2026-11-24T12:00", "effective_cost": COST},
        {"resource_id": "i-2", "from": "2026-11-23T00:00", "to": "2026-11-23T10:00", "effective_cost": 10.60},
        {"resource_id": "i-3", "from": "2026-11-23T08:00", "to": "2026-11-23T16:00", "effective_cost": COST},
    ],
    "gpu_job_hours": [
        {"resource_id": "i-1", "job_id": "101", "gpus": 8, "from": "2026-11-23T00:00", "to": "2026-11-23T06:00",
         "util_mean": 80.0, "util_p95": 97},
        {"resource_id": "i-1", "gpus": 8, "from": "2026-11-23T06:00", "to": "2026-11-23T12:00", "util_mean": 0.5},
        {"resource_id": "i-1", "job_id": "102", "gpus": [0, 1], "from": "2026-11-23T12:00", "to": "2026-11-23T16:00",
         "util_mean": 85.0, "util_p95": 97},
        {"resource_id": "i-1", "job_id": "102", "gpus": [0, 1], "from": "2026-11-23T16:00", "to": "2026-11-23T18:00",
         "util_mean": 0.0},
        {"resource_id": "i-1", "job_id": "102", "gpus": [0, 1], "from": "2026-11-23T18:00", "to": "2026-11-23T20:00",
         "util_mean": 85.0, "util_p95": 97},
        {"resource_id": "i-1", "job_id": "102", "gpus": [2, 3, 4, 5, 6, 7], "from": "2026-11-23T12:00",
         "to": "2026-11-23T20:00", "util_mean": 0.0},
        {"resource_id": "i-1", "job_id": "103", "gpus": 7, "from": "2026-11-23T20:00", "to": "2026-11-24T04:00",
         "util_mean": 22.9, "util_stddev": 37.2, "util_p95": 93, "power_mean_w": 140, "power_limit_w": 400},
        {"resource_id": "i-1", "job_id": "103", "gpus": [7], "from": "2026-11-23T20:00", "to": "2026-11-24T04:00",
         "util_mean": 0.0},
        {"resource_id": "i-2", "job_id": "201", "gpus": 1, "from": "2026-11-23T00:00", "to": "2026-11-23T08:00",
         "util_mean": 12.0, "util_stddev": 30, "util_p95": 20, "mem_used_mean_mib": 2048, "mem_total_mib": 143771,
         "power_mean_w": 150},
        {"resource_id": "i-2", "gpus": 1, "from": "2026-11-23T08:00", "to": "2026-11-23T10:00", "util_mean": 0.0,
         "mem_total_mib": 143771},
        {"resource_id": "i-3", "job_id": "301", "gpus": 8, "from": "2026-11-23T08:00", "to": "2026-11-23T10:00",
         "util_mean": 90.0, "util_p95": 98},
        {"resource_id": "i-3", "gpus": 8, "from": "2026-11-23T10:00", "to": "2026-11-23T12:00", "util_mean": 0.0},
        {"resource_id": "i-3", "job_id": "302", "gpus": 8, "from": "2026-11-23T12:00", "to": "2026-11-23T14:00",
         "util_mean": 90.0, "util_p95": 98},
    ],
}  # fmt: skip


def _config(tmp_path: Path, overrides: str) -> Config:
    body = "sources: []\n" + (f"rules:\n  {overrides}\n" if overrides else "")
    return load_config(write_config(tmp_path, body))


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory, empty_marts: Path) -> duckdb.DuckDBPyConnection:
    con = open_copy(empty_marts, tmp_path_factory.mktemp("precedence") / "wastewatch.duckdb")
    load_given(con, SCENARIO, {})
    yield con
    con.close()


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_no_gpu_hour_is_priced_twice(
    scenario: duckdb.DuckDBPyConnection, tmp_path: Path, setting: str
) -> None:
    config = _config(tmp_path, SETTINGS[setting])
    params = {r: get_rule(r).make_params(config.rule_overrides(r), config) for r in GPU_RULES}
    waste = check_no_double_counting(scenario, WEEK, params)
    assert sum(waste.values()) > 0


def test_the_mixed_week_is_split_as_documented(scenario: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    """With the default thresholds each claim goes where docs/gpu.md says."""
    config = _config(tmp_path, "")
    params = {r: get_rule(r).make_params(config.rule_overrides(r), config) for r in GPU_RULES}
    waste = check_no_double_counting(scenario, WEEK, params)
    per_gpu_hour = COST / 8
    expected = {
        # i-1 Mon 06-12 and 16-18 idle (6 h + 2 h), i-2 08-10 (2 h at 10.60), i-3 10-12 (2 h)
        "GPU001": 8 * COST + 2 * 10.60 + 2 * COST,
        # job 102: 6 unused GPUs for the 6 hours some GPU worked; job 103: GPU 7 for 8 h;
        # job 201: a 2g slice (p95 20 % x 1.2 -> 2 of 7 compute slices) fits: 5/7 of 8 h x 10.60
        "GPU002": 6 * 6 * per_gpu_hour + 8 * per_gpu_hour + 8 * 10.60 * 5 / 7,
        # job 103's 7 starved GPUs for 8 h at their idle share
        "GPU003": 7 * 8 * per_gpu_hour * (1 - 0.229),
        # the llm-pretrain loop: job 101's 6 h on 8 GPUs and jobs 301 and 302's 2 h each; the 8 zombie
        # hours of i-1 Tue 04-12 and the 2 of i-3 Mon 14-16
        "GPU004": (6 + 2 + 2) * COST + 8 * COST + 2 * COST,
    }
    for rule_id, amount in expected.items():
        assert float(waste[rule_id]) == pytest.approx(amount, abs=0.02), rule_id


def test_the_crash_loop_is_one_finding_priced_once(scenario: duckdb.DuckDBPyConnection) -> None:
    """llm-pretrain's three failures are one GPU004 finding; its attempts have none of their own."""
    frame = get_rule("GPU004").evaluate(scenario, WEEK, detected_at=datetime(2026, 12, 7))
    found = {f["resource_id"]: f for f in frame.to_dicts()}
    assert sorted(found) == ["crash-loop:slurm/llm-pretrain", "i-1", "i-3"]
    loop = found["crash-loop:slurm/llm-pretrain"]
    assert float(loop["estimated_waste"]) == pytest.approx(10 * COST, abs=0.01)
    assert "failed 3 times in 8.0 hours (jobs 101, 301, 302)" in loop["reason"]
    attempts = json.loads(loop["evidence"])["attempt_list"]
    assert [(a["job_key"], a["cost"]) for a in attempts] == [
        ("slurm/101", pytest.approx(6 * COST, abs=0.01)),
        ("slurm/301", pytest.approx(2 * COST, abs=0.01)),
        ("slurm/302", pytest.approx(2 * COST, abs=0.01)),
    ]


def test_priced_units_helper_reads_the_final_select_of_every_gpu_rule() -> None:
    for rule_id in GPU_RULES:
        rule = get_rule(rule_id)
        assert rule.query is not None
        text = rule.query.read_text(encoding="utf-8")
        assert re.search(r"^priced_units as \($", text, flags=re.M), f"{rule_id} has no priced_units CTE"
        assert [line for line in text.splitlines() if line.startswith("select")], rule_id
