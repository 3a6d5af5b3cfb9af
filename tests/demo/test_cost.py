"""The demo's planted attention items (expected.json COST001-COST003) against the attention rules.

The session demo is one week (2026-W48). COST001, COST003 and the report's budget burn come from the
pipeline's own output. COST002 is also evaluated here with the demo config's `budgets:` handed to the rule
(through `Rule.config_params`, as the pipeline does). COST003 needs 3 comparable earlier days by default;
the planted spike is on the Thursday of the demo's week, after three ordinary weekdays.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.warehouse import connect
from rules import Window, get_rule

pytestmark = pytest.mark.e2e

W48 = Window.iso_week("2026-W48")


@pytest.fixture(scope="module")
def demo(demo_dir: tuple[Path, str]) -> dict[str, Any]:
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text())["report_week"]["rules"]
    with (directory / "reports" / "2026-W48" / "findings.csv").open(newline="", encoding="utf-8") as f:
        findings = list(csv.DictReader(f))
    return {"dir": directory, "expected": expected, "findings": findings}


@pytest.fixture(scope="module")
def published(demo: dict[str, Any]) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(demo["dir"] / "warehouse" / "wastewatch.published.duckdb", read_only=True)
    yield con
    con.close()


def _rows(demo: dict[str, Any], rule_id: str) -> list[dict[str, str]]:
    return [r for r in demo["findings"] if r["rule_id"] == rule_id]


def test_cost001_lists_all_untagged_spend_gpu_first_never_as_waste(demo: dict[str, Any]) -> None:
    planted = demo["expected"]["COST001"]
    found = _rows(demo, "COST001")
    total = sum(Decimal(r["estimated_waste"]) for r in found)
    assert total == pytest.approx(Decimal(str(planted["spend"])), abs=Decimal("0.02"))
    gpu = [r for r in found if json.loads(r["evidence"])["gpu"]]
    assert sum(Decimal(r["estimated_waste"]) for r in gpu) == pytest.approx(
        Decimal(str(planted["gpu_spend"])), abs=Decimal("0.01")
    )
    # the untagged host, the scratch bucket and the support fee are each named
    evidence = {r["resource_id"]: json.loads(r["evidence"]) for r in found}
    assert [e["host"] for e in evidence.values() if e["gpu"]] == ["gpu-a100-08"]
    assert "acme-scratch" in evidence and "service:AWS Support (Business)" in evidence
    assert all(r["attention"] == "true" and r["counted"] == "false" for r in found)


def test_cost001_suggests_the_owner_from_the_hosts_slurm_jobs(demo: dict[str, Any]) -> None:
    [host] = [r for r in _rows(demo, "COST001") if json.loads(r["evidence"])["gpu"]]
    evidence = json.loads(host["evidence"])
    assert (
        evidence["suggested_team"] == "speech"
    )  # expected.json: "suggested owner: speech, from its Slurm jobs"
    assert "job(s) ran on it" in evidence["suggestion_basis"]
    assert "suggested owner: team speech" in host["reason"]


def test_cost002_month_to_date_and_overruns_match_the_plant(
    demo: dict[str, Any], published: duckdb.DuckDBPyConnection
) -> None:
    planted = demo["expected"]["COST002"]
    config = load_config(demo["dir"] / "wastewatch.yaml")
    rule = get_rule("COST002")
    frame = rule.evaluate(published, W48, rule.make_params(config.rule_overrides(rule.id), config))
    found = {r["resource_id"]: r for r in frame.iter_rows(named=True)}
    over = {team for team, mtd in planted["month_to_date_by_team"].items() if mtd > planted["budgets"][team]}
    assert {k.removeprefix("budget:team:") for k, r in found.items() if r["status"] == "waste"} >= over
    for team, mtd in planted["month_to_date_by_team"].items():
        key = f"budget:team:{team}"
        if key in found:
            assert json.loads(found[key]["evidence"])["month_to_date"] == pytest.approx(mtd, abs=0.01)
    # the report's budget burn shows every budget, over or not, with the same month-to-date
    md = (demo["dir"] / "reports" / "2026-W48" / "report-full.md").read_text(encoding="utf-8")
    for team, mtd in planted["month_to_date_by_team"].items():
        assert (
            f"| team {team} | USD {Decimal(str(mtd)):,.2f} | {Decimal(planted['budgets'][team]):,.2f} |" in md
        )


def test_cost003_finds_the_planted_spike(demo: dict[str, Any]) -> None:
    """The spike is on the report week's Thursday: even the one-week demo has 3 earlier weekdays as baseline.
    The scaling-test pool's rental day (Tuesday) is the research team's contract spend spike, named too."""
    planted = demo["expected"]["COST003"]
    found = _rows(demo, "COST003")
    spikes = {r["team"]: r for r in found if r["status"] == "waste"}
    pool = planted["scaling_pool_day"]
    assert set(spikes) == {planted["team"], pool["team"]}
    assert spikes[pool["team"]]["resource_id"] == f"{pool['team']} / {pool['service']} (USD)"
    assert Decimal(spikes[pool["team"]]["estimated_waste"]) == pytest.approx(
        Decimal(str(pool["excess"])), abs=Decimal("0.01")
    )
    assert [d["day"] for d in json.loads(spikes[pool["team"]]["evidence"])["days"]] == [pool["day"]]
    spike = spikes[planted["team"]]
    assert spike["team"] == planted["team"]
    assert spike["resource_id"] == f"{planted['team']} / {planted['service']} (USD)"
    assert Decimal(spike["estimated_waste"]) == pytest.approx(
        Decimal(str(planted["excess"])), abs=Decimal("0.01")
    )
    [day] = json.loads(spike["evidence"])["days"]
    assert day["day"] == planted["day"]
