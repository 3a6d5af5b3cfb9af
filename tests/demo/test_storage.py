"""`wastewatch demo` end to end for storage: the planted checkpoints of failed runs and the dataset copied into
three buckets are found with the planted bytes and dollars (expected.json), and nothing else is flagged."""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def _findings(directory: Path, rule_id: str) -> list[dict]:
    with (directory / "reports" / "2026-W48" / "findings.csv").open() as f:
        return [
            {**r, "evidence": json.loads(r["evidence"])} for r in csv.DictReader(f) if r["rule_id"] == rule_id
        ]


def _expected(directory: Path) -> dict:
    return json.loads((directory / "expected.json").read_text())["report_week"]["rules"]


def test_checkpoints_of_failed_runs_are_found_with_the_planted_bytes_and_dollars(
    demo_dir: tuple[Path, str],
) -> None:
    directory, _ = demo_dir
    expected = _expected(directory)["STO001"]
    found = _findings(directory, "STO001")
    failed = [f for f in found if f["evidence"]["category"] == "failed"]
    assert sorted(f["evidence"]["run_id"] for f in failed) == sorted(
        r["run_id"] for r in expected["failed"]["runs"]
    )
    assert sorted(f["job_id"] for f in failed) == sorted(str(r["job_id"]) for r in expected["failed"]["runs"])
    assert sum(f["evidence"]["bytes"] for f in failed) == expected["failed"]["bytes"]
    waste = sum(Decimal(f["estimated_waste"]) for f in failed)
    assert abs(waste - Decimal(str(expected["failed"]["waste"]))) <= Decimal("0.01")
    assert all(f["status"] == "waste" and f["evidence"]["price_source"] == "bill" for f in failed)
    for f in failed:  # priced from the bill: acme-ckpt's storage lines, USD 0.023 per GB-month
        assert f["evidence"]["by_storage_class"][0]["price_per_gb_month"] == pytest.approx(0.023, abs=1e-6)
        weekly = f["evidence"]["bytes"] / 1024**3 * 0.023 * 7 / 30.44
        assert float(f["estimated_waste"]) == pytest.approx(weekly, abs=1e-4)
        assert f["evidence"]["monthly_cost"] == pytest.approx(weekly * 30.44 / 7, abs=0.01)
    # the finished runs keep their last 3 checkpoints: the rest are superseded, as the demo counted them
    superseded = [f for f in found if f["evidence"]["category"] == "superseded"]
    assert sum(f["evidence"]["bytes"] for f in superseded) == expected["superseded"]["bytes"]
    total = sum(Decimal(f["estimated_waste"]) for f in found)
    assert abs(total - Decimal(str(expected["waste"]))) <= Decimal("0.02")
    # every run is known to the scheduler: nothing else
    assert {f["evidence"]["category"] for f in found} == {"failed", "superseded"}
    assert all(f["resource_id"].startswith("s3://acme-ckpt/") for f in found)


def test_the_dataset_copied_into_three_buckets_is_two_redundant_copies(demo_dir: tuple[Path, str]) -> None:
    directory, _ = demo_dir
    expected = _expected(directory)["STO002"]
    found = _findings(directory, "STO002")
    assert sorted(f["resource_id"] for f in found) == sorted(expected["copies"])
    assert all(f["status"] == "waste" for f in found)
    assert {f["evidence"]["canonical"] for f in found} == {expected["canonical"]}
    assert [f["evidence"]["bytes_copied"] for f in found] == [expected["bytes_per_copy"]] * 2
    waste = sum(Decimal(f["estimated_waste"]) for f in found)
    assert abs(waste - Decimal(str(expected["waste"]))) <= Decimal("0.01")
    eu = next(f for f in found if "acme-datasets-eu" in f["resource_id"])
    assert eu["region_id"] == "eu-west-1" and "cross-region transfer" in eu["reason"]


def test_nothing_else_in_the_demo_buckets_is_flagged(demo_dir: tuple[Path, str]) -> None:
    directory, _ = demo_dir
    assert _findings(directory, "STO003") == []  # every checkpoint is younger than 30 days
    assert _findings(directory, "STO004") == []  # inventories list no uploads
    everything = [f for rid in ("STO001", "STO002") for f in _findings(directory, rid)]
    assert not [f for f in everything if "acme-scratch/tmp" in f["resource_id"]]
    assert not [f for f in everything if f["status"] != "waste"]
