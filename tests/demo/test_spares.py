"""The demo's hot spares (pipelines/demo/spares.py): three idle 8 x H100 hosts on the research team's contract,
named by the config's `spares:` (policy share 8 %): two fit within the policy, the third takes the pool beyond
it. The report's spare capacity (rpt_weekly_spare_capacity) equals expected.json's to the cent, the excess is
an attention line and never waste, and no GPU rule prices a spare's hour.

expected.json's formulas: spare GPU-hours = 3 x 8 x 168; spare cost = those x 2.10 USD; fleet = 27 hosts x 8
x 168 + the scaling-test pool's 8 hosts x 8 x 24 (its rental day); excess = spare - 0.08 x fleet GPU-hours,
priced at the spares' own cost per GPU-hour.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.report.collect import _params, _query
from pipelines.warehouse import connect, rows
from tests.helpers.report import W48

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def demo(demo_dir: tuple[Path, str]) -> Iterator[tuple[duckdb.DuckDBPyConnection, dict[str, Any], Path]]:
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text(encoding="utf-8"))
    config = load_config(directory / "wastewatch.yaml")
    con = connect(config.published_path, read_only=True)
    yield con, expected, directory
    con.close()


def test_the_spare_capacity_and_its_excess_are_expected_jsons(demo: tuple[Any, dict[str, Any], Path]) -> None:
    con, expected, directory = demo
    plant = expected["report_week"]["spare_capacity"]
    fleet = 27 * 8 * 168 + 8 * 8 * 24
    assert plant["spare_gpu_hours"] == 3 * 8 * 168 and plant["fleet_gpu_hours"] == fleet
    # two spares fit within the 8 % policy, the third takes the pool beyond it
    assert 2 * 8 * 168 <= 0.08 * fleet < 3 * 8 * 168
    assert plant["excess_gpu_hours"] == pytest.approx(3 * 8 * 168 - 0.08 * fleet)
    assert plant["spare_cost"] == pytest.approx(3 * 8 * 168 * 2.10)
    [row] = _query(con, "rpt_weekly_spare_capacity", _params(W48, load_config(directory / "wastewatch.yaml")))
    assert row["currency"] == plant["currency"] == "USD" and row["spare_hosts"] == 3
    assert row["spare_gpu_hours"] == pytest.approx(plant["spare_gpu_hours"])
    assert row["fleet_gpu_hours"] == pytest.approx(plant["fleet_gpu_hours"])
    assert row["policy_share"] == plant["policy_share"] == 0.08
    assert row["excess_gpu_hours"] == pytest.approx(plant["excess_gpu_hours"])
    assert abs(row["spare_cost"] - Decimal(str(plant["spare_cost"]))) <= Decimal("0.005")
    assert abs(row["excess_cost"] - Decimal(str(plant["excess_cost"]))) <= Decimal("0.005")


def test_no_gpu_rule_prices_a_spares_hour_and_the_excess_is_attention(
    demo: tuple[Any, dict[str, Any], Path],
) -> None:
    con, expected, directory = demo
    plant = expected["report_week"]["spare_capacity"]
    found = rows(
        con,
        "select rule_id, resource_id from findings where week_start = $w and resource_id like 'host:rent-spare-%'",
        {"w": W48.start.date()},
    )
    assert found == []
    md = (directory / "reports" / "2026-W48" / "report-full.md").read_text(encoding="utf-8")
    excess = f"USD {Decimal(str(plant['excess_cost'])):,.2f}"
    assert (
        f"- **Spares beyond policy:** hot spares held {100 * plant['spare_share']:.1f} % of the fleet's GPU-hours "
        "against a policy of 8.0 %" in md
    )
    assert excess in md.split("## Needs attention (not waste)", 1)[1].split("\n## ", 1)[0]
    assert "### Spare capacity" in md
