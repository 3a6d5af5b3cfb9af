"""ADV002 spot advice on marts: a job type that checkpoints every 2 hours is recommended with the saving the
formula gives; one without checkpoints never is, and says why; a one-off job is not a job type."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pipelines.advice import get_advisor, run_advisor
from pipelines.config import load_config
from rules import Window
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.mart_rows import load_given

WEEK = Window.iso_week("2026-W48")
MON = WEEK.start
RATE = 98.32 / 8  # the bill's on-demand price of a p5 GPU-hour


def _job(job_id: int, name: str, start: datetime, hours: int = 12) -> dict[str, Any]:
    return {
        "job_id": str(job_id), "job_name": name, "team": "nlp", "project": "llm", "started_at": start,
        "ended_at": start + timedelta(hours=hours), "nodes": 1, "gpu_hours": 8 * hours,
        "cost": round(8 * hours * RATE, 6), "currency": "USD", "resource_ids": ["i-a"],
    }  # fmt: skip


def _checkpoint(job_id: int, step: int, written: datetime) -> dict[str, Any]:
    return {
        "store": "s3", "bucket": "ckpt", "run_prefix": f"run-{job_id}", "run_id": f"run-{job_id}", "step": step,
        "step_written": written, "last_modified": written, "run_job_ids": [str(job_id)],
    }  # fmt: skip


def _given() -> dict[str, Any]:
    jobs, ckpts = [], []
    for n in range(3):  # pretrain-train: three 12-hour runs, a checkpoint every 2 hours
        start = MON + timedelta(days=n)
        jobs.append(_job(100 + n, f"pretrain-train-{100 + n}", start))
        ckpts += [_checkpoint(100 + n, k, start + timedelta(hours=2 * k)) for k in range(1, 6)]
        # the last step is written after the job ended: it saves nothing of this run's work
        ckpts.append(_checkpoint(100 + n, 6, start + timedelta(hours=12, minutes=5)))
    for n in range(3):  # notebook-dev: no checkpoints
        jobs.append(_job(200 + n, f"notebook-dev-{200 + n}", MON + timedelta(days=n, hours=13), hours=8))
    jobs.append(_job(300, "oneoff-eval-300", MON + timedelta(days=4)))  # one run: not a recurring type
    return {
        "resources": [{"resource_id": "i-a", "instance_type": "p5.48xlarge", "pricing_basis": "bill"}],
        "gpu_purchase_hours": [
            {
                "provider": "AWS",
                "region_id": "us-east-1",
                "instance_type": "p5.48xlarge",
                "instance_family": "p5",
                "hour": MON,
                "purchase": "on_demand",
                "gpu_count": 8,
                "currency": "USD",
                "instance_hours": 1,
                "gpu_hours": 8,
                "list_cost": 98.32,
                "effective_cost": 98.32,
                "resources": 1,
            }
        ],  # fmt: skip
        "jobs_enriched": jobs,
        "storage_checkpoints": ckpts,
    }


def _advise(tmp_path: Path, empty_marts: Path, settings: str = "{}") -> dict[str, dict[str, Any]]:
    con = open_copy(empty_marts, tmp_path / "w.duckdb")
    write_config(tmp_path, f"advice:\n  spot: {settings}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    try:
        load_given(con, _given(), {})
        _, items = run_advisor(con, config, get_advisor("spot"), WEEK, datetime(2026, 12, 1))
    finally:
        con.close()
    return {i["resource_id"].split("@")[0]: i for i in items}


def test_a_checkpointing_job_type_is_recommended_with_its_expected_loss(
    tmp_path: Path, empty_marts: Path
) -> None:
    items = _advise(tmp_path, empty_marts)
    assert set(items) == {"pretrain-train", "notebook-dev"}  # the one-off job is no job type
    safe = items["pretrain-train"]
    e = json.loads(safe["evidence"])
    assert safe["status"] == "recommended" and safe["resource_id"] == "pretrain-train@AWS/us-east-1/p5"
    assert (e["runs"], e["runs_with_checkpoints"]) == (3, 3)
    # gaps of 2 h from the start to the end: sum(g^2) / (2 sum(g)) = 6 x 4 / 24 = 1 h lost per interruption
    assert e["expected_loss_hours"] == pytest.approx(1.0)
    # 0.005 per instance-hour x 36 instance-hours x (1 h + 15 min) x 8 GPUs
    assert e["rework_gpu_hours"] == pytest.approx(1.8)
    assert (e["spot_discount"], e["discount_source"]) == (0.5, "catalogue")
    now = 3 * round(96 * RATE, 6)
    saving = now - (288 + 1.8) * RATE * 0.5
    assert e["lookback_saving"] == pytest.approx(saving)
    assert e["span_hours"] == 168  # from the first run's start to the week's end
    assert safe["estimated_saving"] == Decimal(str(round(saving, 6)))
    assert "digiterialabs.com" in safe["basis"] and "never recommended" in safe["basis"]
    assert safe["team"] == "nlp" and "interruption(s) expected" in safe["risk"]
    assert e["commitment_share"] == 0 and "under a commitment" not in safe["risk"]


def test_spot_for_committed_hours_names_the_commitment_left_unused(tmp_path: Path, empty_marts: Path) -> None:
    given = _given()
    given["gpu_purchase_hours"].append(
        {**given["gpu_purchase_hours"][0], "purchase": "commitment", "instance_hours": 3, "gpu_hours": 24,
         "list_cost": 294.96, "effective_cost": 206.472}
    )  # fmt: skip
    con = open_copy(empty_marts, tmp_path / "w.duckdb")
    write_config(tmp_path, "")
    try:
        load_given(con, given, {})
        _, items = run_advisor(con, load_config(tmp_path / "wastewatch.yaml"), get_advisor("spot"), WEEK)
    finally:
        con.close()
    [safe] = [i for i in items if i["resource_id"].startswith("pretrain-train@")]
    assert json.loads(safe["evidence"])["commitment_share"] == 0.75  # 3 of 4 instance-hours
    assert "75% of p5's hours in us-east-1 run under a commitment" in safe["risk"]


def test_a_job_type_without_checkpoints_is_never_recommended_and_says_why(
    tmp_path: Path, empty_marts: Path
) -> None:
    unsafe = _advise(tmp_path, empty_marts, "{spot_discounts: {p5: 0.9}, interruption_rate: 0}")[
        "notebook-dev"
    ]
    assert unsafe["status"] == "not_recommended" and unsafe["estimated_saving"] == 0
    assert "3 of 3 runs wrote no checkpoint" in unsafe["reason"] and "never moved to spot" in unsafe["reason"]
    e = json.loads(unsafe["evidence"])
    assert (e["runs_with_checkpoints"], e["expected_loss_hours"]) == (0, pytest.approx(4.0))  # half of 8 h


def test_a_high_interruption_rate_outweighs_the_discount(tmp_path: Path, empty_marts: Path) -> None:
    safe = _advise(tmp_path, empty_marts, "{interruption_rate: 1.0}")["pretrain-train"]
    e = json.loads(safe["evidence"])
    assert e["rework_gpu_hours"] == pytest.approx(360.0)  # 1 x 36 x 1.25 x 8
    assert safe["status"] == "not_recommended" and "outweighs the 50% spot discount" in safe["reason"]
    assert safe["estimated_saving"] == 0
