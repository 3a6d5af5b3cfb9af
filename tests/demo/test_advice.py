"""`wastewatch demo` end to end for the advice: the steady floor of on-demand p4d hosts gets the commitment
expected.json prices to the cent, the checkpointing pre-training job type is spot-safe and the dev box's job
type without checkpoints is spot-unsafe; none of it reaches the week's waste or spend."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.warehouse import connect, rows

pytestmark = pytest.mark.e2e


def _advice(directory: Path, kind: str) -> dict[str, dict]:
    """The week's advice of one kind by subject (a job type can have spot and checkpoint advice both)."""
    con = connect(directory / "warehouse" / "wastewatch.published.duckdb", read_only=True)
    try:
        found = rows(con, "select * from advice where week_start = '2026-11-23' and kind = $k", {"k": kind})
    finally:
        con.close()
    return {r["resource_id"]: {**r, "evidence": json.loads(r["evidence"])} for r in found}


def test_the_planted_floor_gets_the_expected_commitment(demo_dir: tuple[Path, str]) -> None:
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text())["advice"]["commitment"]
    commitments = _advice(directory, "commitment")
    assert sorted(commitments) == [e["resource_id"] for e in expected] == ["AWS/us-east-1/p4d"]
    [want] = expected
    got = commitments[want["resource_id"]]
    ev = got["evidence"]
    assert got["status"] == want["status"] == "recommended"
    assert (ev["hours"], ev["floor_instances"], ev["floor_gpus"]) == (
        want["hours"], want["floor_instances"], want["floor_gpus"],
    )  # fmt: skip
    assert ev["on_demand_rate"] == pytest.approx(want["on_demand_rate"])
    assert (ev["discount"], ev["discount_source"]) == (want["discount"], want["discount_source"])
    assert round(Decimal(str(ev["commitment_per_hour"])), 2) == Decimal(str(want["commitment_per_hour"]))
    assert abs(got["estimated_saving"] - Decimal(str(want["weekly_saving"]))) < Decimal("0.005")
    assert ev["risk_weeks"] == want["risk_weeks"]


def test_the_spot_safe_and_unsafe_job_types(demo_dir: tuple[Path, str]) -> None:
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text())["advice"]["spot"]
    advice = _advice(directory, "spot")
    for label in ("safe", "unsafe"):
        want = expected[label]
        got = advice[want["resource_id"]]
        assert got["kind"] == "spot" and got["status"] == want["status"], label
        assert (got["evidence"]["runs"], got["evidence"]["runs_with_checkpoints"]) == (
            want["runs"], want["runs_with_checkpoints"],
        ), label  # fmt: skip
    assert (
        expected["safe"]["status"] == "recommended"
        and advice[expected["safe"]["resource_id"]]["estimated_saving"] > 0
    )
    unsafe = advice[expected["unsafe"]["resource_id"]]
    assert expected["unsafe"]["runs_with_checkpoints"] == 0 and unsafe["estimated_saving"] == 0
    assert "wrote no checkpoint" in unsafe["reason"]


def test_the_report_lists_the_advice_apart_from_waste_and_spend(demo_dir: tuple[Path, str]) -> None:
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text())
    md = (directory / "reports" / "2026-W48" / "report-full.md").read_text()
    section = md.split("## Actions and advice", 1)[1].split("\n## ", 1)[0]
    cadence = [v for k, v in expected["advice"]["checkpoint"].items() if k != "formula"]
    for item in [*expected["advice"]["commitment"], *expected["advice"]["spot"].values(), *cadence]:
        assert item["resource_id"] in section
    assert "never added to waste or spend" in section
    # the headline's spend is the bill's, planted to the cent, with no advice in it
    assert f"{expected['report_week']['spend']:,.2f}" in md.split("## Actions and advice", 1)[0]


def test_the_checkpoint_cadence_plants_are_priced_as_expected(demo_dir: tuple[Path, str]) -> None:
    """ADV003: the pre-training type saving every 10 minutes should save less often, the fine-tuning type
    saving every 12 hours with every other run preempted more often; each figure as expected.json has it."""
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text())["advice"]["checkpoint"]
    advice = _advice(directory, "checkpoint")
    for label, direction in (("frequent_saves", "less often"), ("rare_saves", "more often")):
        want = expected[label]
        got = advice[want["resource_id"]]
        ev = got["evidence"]
        assert got["kind"] == "checkpoint" and got["status"] == want["status"] == "recommended", label
        assert (ev["runs"], ev["failures"], ev["gpus"]) == (want["runs"], want["failures"], want["gpus"]), (
            label
        )
        assert ev["write_seconds_from"] == "train log save lines" and ev["storage_now"] == 0, label
        for key in ("job_hours", "mtbf_hours", "write_seconds", "interval_hours", "optimum_hours"):
            assert ev[key] == pytest.approx(want[key], abs=1e-5), (label, key)
        for key in ("lost_work_now", "write_stalls_now", "lost_work_optimal", "write_stalls_optimal"):
            assert abs(Decimal(str(ev[key])) - Decimal(str(want[key]))) <= Decimal("0.005"), (label, key)
        assert abs(got["estimated_saving"] - Decimal(str(want["weekly_saving"]))) <= Decimal("0.005"), label
        assert direction in got["reason"], label
