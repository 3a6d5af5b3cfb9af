"""GPU005 on the H200 capture: its train log's measured MFU finds the low-efficiency phases, and the rule
prices only the GPU-time GPU002 and GPU003 leave unpriced.

With every rule's short-window params (tests/helpers/h200_capture.py) the two low phases are GPU002's
(job-003, the tiny model: steady 28 % util) and GPU003's (job-002, the input-starved one): GPU005 reports
them with their MFU, floor and cause and adds no money. With GPU003 at its own default runtime threshold
(30 minutes: it judges no job of a 6-minute capture) the stalled job's time is no one's, and GPU005 prices
it at its shortfall below the floor.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from tests.helpers.gpu_precedence import check_no_double_counting, gpu_params
from tests.helpers.h200_capture import SHORT, WEEK, findings

HOUR_COST = 10.60  # the capture's 1-GPU instance-hour (tests/helpers/h200_capture.py BILLING)
STALLED_S = 56.565  # job-002's slice: 01:44:59.925 to 01:45:56.490


def _by_job(found: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f["job_id"]: f for f in found}


def test_the_low_mfu_phases_are_found_and_left_to_the_rules_that_price_them(
    h200: duckdb.DuckDBPyConnection,
) -> None:
    found = _by_job(findings(h200, "GPU005", SHORT["GPU005"]))
    assert set(found) == {"job-002", "job-003"}  # job-001 (0.48) and the failed job-005 are not low
    stalled, tiny = found["job-002"], found["job-003"]
    assert stalled["status"] == tiny["status"] == "suspect"
    assert float(stalled["estimated_waste"]) == float(tiny["estimated_waste"]) == 0
    assert stalled["evidence"]["claimed_by"] == ["GPU003"] and tiny["evidence"]["claimed_by"] == ["GPU002"]
    assert stalled["evidence"]["mfu"] == pytest.approx(0.137, abs=0.001)
    assert stalled["evidence"]["cause"] == "input_stalls"
    assert tiny["evidence"]["cause"] == "low_power"
    assert (
        "trained its 941M-parameter model at 13.7% MFU (median of 73 log intervals on 1×H200; floor 25%)"
        in stalled["reason"]
    )
    assert "likeliest cause: input stalls (73% of the wall clock outside training steps)" in stalled["reason"]
    assert "its GPU-hours are priced by GPU003, so GPU005 adds nothing." in stalled["reason"]
    assert "likeliest cause: low power (206 W, 29% of the power limit)" in tiny["reason"]


def test_time_no_other_rule_prices_is_priced_at_the_shortfall_below_the_floor(
    h200: duckdb.DuckDBPyConnection,
) -> None:
    # GPU003 at its default 30-minute runtime judges nothing here; GPU005 knows it from the same params
    overrides = {**SHORT, "GPU003": {}}
    found = _by_job(findings(h200, "GPU005", overrides["GPU005"], overrides))
    stalled = found["job-002"]
    assert stalled["status"] == "waste"
    mfu = stalled["evidence"]["mfu"]
    assert float(stalled["estimated_waste"]) == pytest.approx(
        HOUR_COST * STALLED_S / 3600 * (1 - mfu / 0.25), abs=0.0005
    )
    assert "the shortfall, 45% of 0.9 GPU-minutes, cost USD 0.08." in stalled["reason"]
    assert found["job-003"]["status"] == "suspect"  # still GPU002's
    params = gpu_params(overrides)
    waste = check_no_double_counting(h200, WEEK, params)
    assert waste["GPU003"] == 0 and waste["GPU005"] > 0


def test_a_team_floor_and_a_size_floor_change_what_is_low(h200: duckdb.DuckDBPyConnection) -> None:
    short = SHORT["GPU005"]
    # the capture's team is research (its host's billing tags): a floor of 0.10 clears the stalled job
    by_team = _by_job(
        findings(h200, "GPU005", {**short, "team_floors": [{"team": "research", "floor": 0.10}]})
    )
    assert set(by_team) == {"job-003"}
    # models under 100M parameters held to 2 %: the tiny model clears it, the 940M ones keep 25 %
    by_size = _by_job(
        findings(h200, "GPU005", {**short, "size_floors": [{"min_params": 0, "floor": 0.02},
                                                          {"min_params": 1e8, "floor": 0.25}]})
    )  # fmt: skip
    assert set(by_size) == {"job-002"}
    assert by_size["job-002"]["evidence"]["floor"] == 0.25
    # and 0.5 makes the well-fed job low too
    assert "job-001" in _by_job(findings(h200, "GPU005", {**short, "floor": 0.5}))
