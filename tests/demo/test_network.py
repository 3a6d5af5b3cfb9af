"""`wastewatch demo` end to end for NET001: the jobs in us-east-1 reading the Ireland copy of laion (the bill's
EU-USE1-AWS-Out-Bytes lines) are found with the planted dollars, attributed to the bucket, its dataset, the
copy already in us-east-1 and the teams whose jobs read it; the NAT gateways' internet egress is not priced."""

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


def test_transfer_from_the_ireland_copy_is_found_to_the_cent(demo_dir: tuple[Path, str]) -> None:
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text())["report_week"]["rules"]["NET001"]
    [found] = _findings(directory, "NET001")  # the NAT gateways' internet egress gets no finding
    assert found["resource_id"] == expected["resource_id"] == "acme-datasets-eu -> us-east-1"
    assert found["status"] == "waste" and found["region_id"] == expected["source_region"] == "eu-west-1"
    assert abs(Decimal(found["estimated_waste"]) - Decimal(str(expected["waste"]))) < Decimal("0.005")
    assert expected["waste"] == 112.0  # 7 days x 800 GB x USD 0.02
    ev = found["evidence"]
    assert ev["usage_types"] == [expected["usage_type"]]
    assert ev["destination_region"] == "us-east-1" and ev["quantity"] == pytest.approx(expected["gb"])
    assert ev["datasets"] == ["s3://acme-datasets-eu/datasets/laion-400m-subset/"]
    # both us-east-1 folders hold laion's bytes: the canonical copy and the scratch copy STO002 flags
    assert sorted(ev["local_copies"]) == expected["local_copies"] and ev["bytes_to_copy"] == 0
    assert sorted(ev["reader_teams"]) == expected["reader_teams"] and ev["reader_jobs"] > 0
    assert ev["bucket_team"] == "vision"
    assert "yet a copy of its data is already in us-east-1" in found["reason"]


def test_sto002_still_prices_the_ireland_copys_storage_and_never_its_transfer(
    demo_dir: tuple[Path, str],
) -> None:
    """The Ireland copy saves no transfer (no job runs in eu-west-1): it stays STO002's duplicate, and
    NET001's dollars are transfer lines only, so the two rules price different lines of the bill."""
    directory, _ = demo_dir
    sto002 = {f["resource_id"]: f for f in _findings(directory, "STO002")}
    eu = sto002["s3://acme-datasets-eu/datasets/laion-400m-subset/"]
    assert eu["status"] == "waste" and "transfer_cost" not in eu["evidence"]
