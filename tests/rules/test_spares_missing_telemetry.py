"""A hot spare's hours without telemetry (issue 44's acceptance: inputs missing are a status, never 0 waste).

A spare is judged from its GPUs' telemetry: an hour in which no job ran on it is the `spare` claim's (a policy
cost, never waste). An hour billed with no telemetry cannot say whether a job ran, so it is no spare hour: the
no-telemetry claim comes first and GPU001 says `insufficient_data` naming the hours it could not judge, at 0
waste; the spare capacity counts only the hours telemetry saw idle. The other new levers' missing inputs are
proven where they are: GPU006 without a training log (tests/fixtures/rules/GPU006.yml), ADV003 without train
logs or checkpoint objects (tests/advice/test_cadence.py), COST004 without two inventories
(tests/fixtures/rules/COST004.yml).

s-9 (host gpu-spare-9, 8 GPUs, USD 80 an hour) is billed Monday 00:00-12:00; its telemetry covers 10:00-12:00
only, every GPU at 0 %.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import parse_config
from pipelines.report.collect import _params, _query
from pipelines.transform.spares import write_spares
from rules import get_rule
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.gpu_precedence import WEEK, check_no_double_counting, claims_of, gpu_params
from tests.helpers.mart_rows import load_given

GIVEN: dict[str, Any] = {
    "resources": [{"resource_id": "s-9", "host": "gpu-spare-9"}],
    "cost_hourly": [
        {"resource_id": "s-9", "from": "2026-11-23T00:00", "to": "2026-11-23T12:00", "effective_cost": 80.0}
    ],
    "gpu_job_hours": [
        {
            "resource_id": "s-9",
            "gpus": 8,
            "from": "2026-11-23T10:00",
            "to": "2026-11-23T12:00",
            "util_mean": 0.0,
        }
    ],
}


@pytest.fixture
def week(tmp_path: Path, empty_marts: Path) -> Any:
    config = parse_config(
        'sources: []\nspares: {match: {host: "gpu-spare-*"}, policy_share: 0.05}\n',
        tmp_path / "wastewatch.yaml",
    )
    con = open_copy(empty_marts, tmp_path / "wastewatch.duckdb")
    write_spares(con, config)
    load_given(con, GIVEN, {})  # builds gpu_claims from the rows and spare_pools
    yield con, config
    con.close()


def test_a_spares_hours_without_telemetry_are_insufficient_data_never_spare_nor_zero_waste(
    week: tuple[duckdb.DuckDBPyConnection, Any],
) -> None:
    con, config = week
    winners = {
        (c["slice_start"].hour, str(c["claimed_by"]))
        for c in claims_of(con, get_rule("GPU001"), WEEK, gpu_params({})["GPU001"])
    }
    assert {w for h, w in winners if h < 10} == {"GPU004"}  # the no-telemetry claim, ahead of `spare`
    assert {w for h, w in winners if h >= 10} == {"spare"}
    rule = get_rule("GPU001")
    found = rule.evaluate(con, WEEK, gpu_params({})["GPU001"], detected_at=datetime(2026, 12, 7)).to_dicts()
    [f] = [r for r in found if r["resource_id"] == "s-9"]
    assert f["status"] == "insufficient_data" and float(f["estimated_waste"]) == 0
    assert json.loads(f["evidence"])["hours_without_telemetry"] == 10 and "telemetry" in f["reason"]
    # no GPU rule prices any of its hours; the spare capacity has the 2 idle hours telemetry saw, no more
    assert all(v == 0 for v in check_no_double_counting(con, WEEK, gpu_params({})).values())
    [row] = _query(con, "rpt_weekly_spare_capacity", _params(WEEK, config))
    assert row["spare_gpu_hours"] == pytest.approx(2 * 8) and float(row["spare_cost"]) == pytest.approx(160)
