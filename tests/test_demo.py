"""`wastewatch demo` end to end: planted waste is found, to the cent, by the real pipeline."""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_demo_report_matches_the_planted_idle_waste(demo_dir: tuple[Path, str]) -> None:
    directory, output = demo_dir
    expected = json.loads((directory / "expected.json").read_text())
    planted = Decimal(str(expected["report_week"]["rules"]["GPU001"]["waste"]))
    assert planted > 1000  # the dev boxes alone idle most of the week
    with (directory / "reports" / "2026-W48" / "findings.csv").open() as f:
        findings = list(csv.DictReader(f))
    found = sum(
        Decimal(r["estimated_waste"]) for r in findings if r["rule_id"] == "GPU001" and r["status"] == "waste"
    )
    assert abs(found - planted) <= planted * Decimal("0.01")
    assert f"planted USD {planted:,.2f}" in output


def test_demo_findings_name_the_planted_hosts(demo_dir: tuple[Path, str]) -> None:
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text())["report_week"]["rules"]["GPU001"]
    with (directory / "reports" / "2026-W48" / "findings.csv").open() as f:
        findings = list(csv.DictReader(f))
    gpu001 = [r for r in findings if r["rule_id"] == "GPU001"]
    hosts_with_waste = {json.loads(r["evidence"])["host"]: r for r in gpu001 if r["status"] == "waste"}
    assert set(hosts_with_waste) == set(expected["by_host"])
    for host, amount in expected["by_host"].items():
        assert Decimal(hosts_with_waste[host]["estimated_waste"]) == pytest.approx(
            Decimal(str(amount)), abs=Decimal("0.01")
        )
    # the telemetry outage is insufficient data, never "not idle" and never priced
    outage = [r for r in gpu001 if r["status"] == "insufficient_data"]
    assert [json.loads(r["evidence"])["host"] for r in outage] == [expected["insufficient_data"]["host"]]
    assert Decimal(outage[0]["estimated_waste"]) == 0
    assert (
        json.loads(outage[0]["evidence"])["hours_without_telemetry"]
        == expected["insufficient_data"]["hours_without_telemetry"]
    )


def test_demo_spend_and_landing_zone(demo_dir: tuple[Path, str]) -> None:
    directory, output = demo_dir
    expected = json.loads((directory / "expected.json").read_text())
    md = (directory / "reports" / "2026-W48" / "report.md").read_text()
    assert f"USD {Decimal(str(expected['report_week']['spend'])):,.2f}" in md
    # the landing zone holds every kind of input, and the run read them all
    assert any((directory / "landing" / "jobs" / "sacct").iterdir())
    assert (directory / "landing" / "inventory" / "acme-ckpt" / "daily" / "data").is_dir()
    assert "no reader for kind" not in output
    # every rule family has a planted amount
    assert set(expected["report_week"]["rules"]) >= {
        "GPU001",
        "GPU002",
        "GPU003",
        "STO001",
        "STO002",
        "COST001",
        "COST002",
        "COST003",
    }
