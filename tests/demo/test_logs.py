"""`wastewatch demo` end to end for STO005: the SageMaker training jobs' log group, created without a retention
(the landed `describe-log-groups` listings and the bill's CloudWatch Logs storage lines), three September
runs' TensorBoard event files and profiler traces, and three Thanos TSDB blocks nobody expired, in the scratch
bucket's S3 inventory, are found with the planted dollars; the EKS group that keeps 14 days and the Thanos block
of last week are not, and no byte STO005 prices is priced by another storage rule."""

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


def test_the_log_group_without_retention_and_the_old_event_files_are_found_to_the_cent(
    demo_dir: tuple[Path, str],
) -> None:
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text())["report_week"]["rules"]["STO005"]
    found = {f["resource_id"]: f for f in _findings(directory, "STO005")}
    [group] = expected["log_groups"]
    files = expected["log_files"]
    blocks = expected["metric_blocks"]
    # the 14-day EKS group is within the limit
    assert set(found) == {group["resource_id"], files["resource_id"], blocks["resource_id"]}
    g = found[group["resource_id"]]
    assert g["status"] == "waste" and g["team"] == "nlp" and g["resource_type"] == "log group"
    assert abs(Decimal(g["estimated_waste"]) - Decimal(str(group["waste"]))) < Decimal("0.005")
    ev = g["evidence"]
    assert ev["retention_in_days"] is None and ev["ingestion_basis"] == "growth"
    assert ev["stored_bytes"] == group["stored_bytes"]
    assert ev["daily_ingested_bytes"] == group["daily_ingested_bytes"] == 10 * 1024**3
    assert ev["excess_bytes"] == pytest.approx(group["excess_bytes"], abs=1)
    assert ev["storage_cost"] == pytest.approx(
        group["storage_cost"], abs=0.01
    )  # expected.json rounds to the cent
    assert ev["usage_types"] == ["USE1-TimedStorage-ByteHrs"]
    assert "forever (no retention set)" in g["reason"] and "(growth of its stored bytes)" in g["reason"]
    f = found[files["resource_id"]]
    assert f["status"] == "waste" and f["resource_type"] == "training logs"
    assert (f["evidence"]["objects"], f["evidence"]["bytes"]) == (files["objects"], files["bytes"])
    assert abs(Decimal(f["estimated_waste"]) - Decimal(str(files["waste"]))) < Decimal("0.005")
    b = found[blocks["resource_id"]]
    assert b["status"] == "waste" and b["resource_type"] == "metric blocks"
    ev = b["evidence"]
    assert (
        (ev["blocks"], ev["newer_blocks"], ev["objects"], ev["bytes"])
        == (
            blocks["blocks"],
            blocks["newer_blocks"],
            blocks["objects"],
            blocks["bytes"],
        )
        == (3, 1, 9, 3 * (13 * 1024**3 + 2048))
    )
    assert (
        ev["oldest_block"] == blocks["oldest_block"] and ev["oldest_block_made_at"] == "2026-08-31T02:00:00Z"
    )
    assert abs(Decimal(b["estimated_waste"]) - Decimal(str(blocks["waste"]))) < Decimal("0.005")
    total = sum(Decimal(x["estimated_waste"]) for x in found.values())
    assert abs(total - Decimal(str(expected["waste"]))) <= Decimal("0.01")


def test_no_byte_sto005_prices_is_priced_by_another_storage_rule(demo_dir: tuple[Path, str]) -> None:
    directory, _ = demo_dir
    others = [f for rid in ("STO001", "STO002", "STO003", "STO004") for f in _findings(directory, rid)]
    assert not [
        f
        for f in others
        if any(s in f["resource_id"] for s in ("tensorboard", "log-group", "thanos"))
        or "thanos/" in json.dumps(f["evidence"])
    ]
    [files] = [f for f in _findings(directory, "STO005") if f["resource_type"] == "training logs"]
    assert all(x["folder"].startswith("tensorboard/") for x in files["evidence"]["folders"])


def test_the_log_group_is_on_its_teams_page_and_the_untagged_files_on_the_untagged_page(
    demo_dir: tuple[Path, str],
) -> None:
    directory, _ = demo_dir
    teams = directory / "reports" / "2026-W48" / "teams"
    [nlp] = teams.glob("nlp-*.html")
    assert "STO005" in (text := nlp.read_text(encoding="utf-8")) and "/aws/sagemaker/TrainingJobs" in text
    assert "acme-scratch" in (teams / "untagged.html").read_text(encoding="utf-8")
    assert not [p for p in teams.glob("vision-*.html") if "STO005" in p.read_text(encoding="utf-8")]
