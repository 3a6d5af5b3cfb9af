"""`wastewatch demo`'s storage-growth plant (expected.json COST004): acme-ckpt-vision grows 40 % a month against
its 10 % budget, and the pipeline's COST004 finding holds the planted growth, prefixes and amount at stake,
as attention (never counted as waste)."""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_the_growing_checkpoint_bucket_is_found_with_the_planted_growth_and_amount(
    demo_dir: tuple[Path, str],
) -> None:
    directory, _ = demo_dir
    planted = json.loads((directory / "expected.json").read_text())["report_week"]["rules"]["COST004"]
    with (directory / "reports" / "2026-W48" / "findings.csv").open(newline="", encoding="utf-8") as f:
        found = [r for r in csv.DictReader(f) if r["rule_id"] == "COST004"]
    [finding] = found
    evidence = json.loads(finding["evidence"])
    assert finding["resource_id"] == planted["resource_id"]
    assert finding["status"] == "waste" and finding["currency"] == "USD"
    assert finding["attention"] == "true" and finding["counted"] == "false"  # never in a waste total
    assert abs(Decimal(finding["estimated_waste"]) - Decimal(str(planted["amount_at_stake"]))) <= Decimal(
        "0.01"
    )
    assert (evidence["first_date"], evidence["last_date"]) == (planted["first_date"], planted["last_date"])
    assert (evidence["bytes_first"], evidence["bytes_last"]) == (
        planted["bytes_first"],
        planted["bytes_last"],
    )
    assert evidence["growth_pct_per_month"] == pytest.approx(planted["growth_pct_per_month"], abs=0.01)
    assert evidence["over_budget_monthly_cost"] == pytest.approx(
        planted["over_budget_monthly_cost"], abs=0.01
    )
    assert [g["prefix"] for g in evidence["grew_most"]] == planted["grew_most"]
    assert "grew 40.0 % a month" in finding["reason"] and "budget of 10 % a month" in finding["reason"]
