"""ADV001 commitment advice on a real CUR 2.0 bill: the floor of on-demand instances, the discount the bill's
Savings Plan shows, the saving, the week below the floor as the risk; and advice never reaches waste or spend."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipelines.advice import get_advisor, run_advisor
from pipelines.config import Config, load_config
from pipelines.errors import ConfigError
from pipelines.ingest import ingest
from pipelines.report.collect import collect_report
from pipelines.transform.build import build_marts
from pipelines.warehouse import connect, rows
from rules import Window
from tests.helpers.billing_exports import csv_bytes, line
from tests.helpers.config import write_config

WEEK = Window.iso_week("2026-W48")
START = WEEK.start - timedelta(weeks=1)  # 2026-W47: two weeks of hours
DIP = range(WEEK.start.hour + 30, WEEK.start.hour + 50)  # 20 hours of W48 with one p5 instance, not three


def _bill() -> list[dict[str, str]]:
    out = []
    for h in range(2 * 168):
        hour = START + timedelta(hours=h)
        in_dip = h - 168 in DIP
        for i in range(1 if in_dip else 3):  # p5 on demand: 3 instances, 1 during the dip
            out.append(line(f"i-p5-od{i}", hour, "98.32", instance_type="p5.48xlarge"))
        # p5 under a Savings Plan: the bill shows 30% off (68.824 of 98.32)
        out.append(
            line(
                "i-p5-sp", hour, "98.32", kind="SavingsPlanCoveredUsage", sp_effective="68.824",
                instance_type="p5.48xlarge",
            )
        )  # fmt: skip
        if h >= 168:  # p4d only in the second week: no steady floor
            out.append(line("i-p4d-0", hour, "21.96"))
        if h < 24:  # a p5 on spot for a day: neither on-demand floor nor commitment
            spot = line("i-p5-spot", hour, "49.16", instance_type="p5.48xlarge")
            spot["line_item_usage_type"] = "USE1-SpotUsage:p5.48xlarge"
            out.append(spot)
    return out


@pytest.fixture(scope="module")
def billed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose warehouse holds the two weeks' bill and its marts (built once for the module)."""
    root = tmp_path_factory.mktemp("commitment")
    (root / "landing").mkdir()
    (root / "landing" / "bill.csv.gz").write_bytes(csv_bytes(_bill()))
    write_config(root, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    config = load_config(root / "wastewatch.yaml")
    con = connect(config.warehouse_path)
    try:
        assert not ingest(con, config).rejected
        build_marts(con)
    finally:
        con.close()
    return root


def test_gpu_purchase_hours_says_how_each_hour_was_bought(billed: Path) -> None:
    config = _config(billed)
    con = connect(config.warehouse_path, read_only=True)
    try:
        found = rows(
            con,
            "select instance_family, purchase, commitment_type, sum(instance_hours) as instance_hours, "
            "sum(gpu_hours) as gpu_hours, sum(list_cost) as list_cost, sum(effective_cost) as effective_cost "
            "from gpu_purchase_hours group by all order by all",
        )
    finally:
        con.close()
    assert [tuple(r.values()) for r in found] == [
        ("p4d", "on_demand", None, 168, 1344, Decimal("3689.28"), Decimal("3689.28")),
        ("p5", "commitment", "Savings Plan", 336, 2688, Decimal("33035.52"), Decimal("23124.864")),
        ("p5", "on_demand", None, 968, 7744, Decimal("95173.76"), Decimal("95173.76")),
        ("p5", "spot", None, 24, 192, Decimal("1179.84"), Decimal("1179.84")),
    ]


def _config(root: Path, extra: str = "") -> Config:
    write_config(root, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n" + extra)
    return load_config(root / "wastewatch.yaml")


def _advise(root: Path, extra: str = "") -> list[dict]:
    config = _config(root, "advice:\n  commitment: {lookback_weeks: 2}\n" + extra)
    con = connect(config.warehouse_path)
    try:
        _, items = run_advisor(con, config, get_advisor("commitment"), WEEK, datetime(2026, 12, 1))
        return items
    finally:
        con.close()


def test_the_floor_the_bills_discount_the_saving_and_the_week_below_the_floor(billed: Path) -> None:
    items = {i["resource_id"]: i for i in _advise(billed)}
    assert set(items) == {"AWS/us-east-1/p5", "AWS/us-east-1/p4d"}
    p5 = items["AWS/us-east-1/p5"]
    e = json.loads(p5["evidence"])
    assert p5["status"] == "recommended"
    assert (e["hours"], e["floor_instances"], e["floor_gpus"]) == (336, 3, 24)
    assert e["discount_source"] == "bill" and e["discount"] == pytest.approx(0.30)
    assert e["break_even_utilisation"] == pytest.approx(0.70)
    # 3 instances x 336 h, less 2 x 20 h of the dip; commitment 3 x 98.32 x 0.7 an hour
    assert e["covered_instance_hours"] == 968
    assert e["commitment_per_hour"] == pytest.approx(206.472)
    saving = 968 * 98.32 - 1008 * 98.32 * 0.7
    assert e["lookback_saving"] == pytest.approx(saving)
    assert p5["estimated_saving"] == Decimal(str(round(saving / 2, 6)))  # a week: 12,899.584
    assert e["risk_weeks"] == ["2026-W48"]
    [w48] = [w for w in e["weeks"] if w["week"] == "2026-W48"]
    assert (w48["hours_below_floor"], w48["unused_instance_hours"]) == (20, 40)
    assert w48["unused_commitment_cost"] == pytest.approx(40 * 98.32 * 0.7, abs=0.01)
    assert "2026-W48 (20 h below, USD 2,752.96 of the commitment unused)" in p5["risk"]
    assert "USD 12,899.58 a week" in p5["reason"] and "1 week(s) fell below the floor" in p5["reason"]
    assert "the bill's Savings Plan" in p5["basis"] or "the bill's" in p5["basis"]
    # p4d ran only in the second week: its floor is 0, nothing to commit to; the catalogue gave the discount
    p4d = items["AWS/us-east-1/p4d"]
    assert p4d["status"] == "not_recommended" and p4d["estimated_saving"] == 0
    assert json.loads(p4d["evidence"])["discount_source"] == "catalogue"
    assert "digiterialabs" not in p4d["basis"] and "disintermediate.global" in p4d["basis"]


def test_a_configured_discount_comes_before_the_bills(billed: Path) -> None:
    config = _config(billed, "advice:\n  commitment: {lookback_weeks: 2, discounts: {p5/us-east-1: 0.1}}\n")
    con = connect(config.warehouse_path)
    try:
        _, found = run_advisor(con, config, get_advisor("commitment"), WEEK)
    finally:
        con.close()
    items = {i["resource_id"]: i for i in found}
    e = json.loads(items["AWS/us-east-1/p5"]["evidence"])
    assert (e["discount"], e["discount_source"]) == (0.1, "config")
    # at 10% off, 968 of 1008 committed hours used: 968 x 98.32 - 1008 x 98.32 x 0.9 = 5,977.856 over two weeks
    assert items["AWS/us-east-1/p5"]["estimated_saving"] == Decimal("2988.928")


def test_a_bad_setting_is_a_config_error_naming_it(billed: Path) -> None:
    config = _config(billed, "advice:\n  commitment: {percentile: 2}\n")
    con = connect(config.warehouse_path)
    try:
        with pytest.raises(ConfigError, match=r"advice\.commitment\.percentile"):
            run_advisor(con, config, get_advisor("commitment"), WEEK)
    finally:
        con.close()
    write_config(billed, "advice:\n  reserved: {}\n")
    with pytest.raises(ConfigError, match="advice"):
        load_config(billed / "wastewatch.yaml")


def test_advice_is_written_once_per_week_and_never_added_to_waste_or_spend(billed: Path) -> None:
    config = _config(billed)
    con = connect(config.warehouse_path)
    try:
        con.execute("delete from advice")  # the module's other tests advised this week already
        before = collect_report(con, config, WEEK, billed / "reports")
        assert before.advice == [] and before.totals()["USD"]["spend"] > 0
        for _ in range(2):  # re-running the week replaces its advice
            run_advisor(con, config, get_advisor("commitment"), WEEK)
        count = rows(con, "select count(*) as n from advice where week_start = $w", {"w": WEEK.start.date()})
        assert count[0]["n"] == 2
        after = collect_report(con, config, WEEK, billed / "reports")
    finally:
        con.close()
    assert {a["resource_id"] for a in after.advice} == {"AWS/us-east-1/p5", "AWS/us-east-1/p4d"}
    assert after.advice_savings()["USD"] > 0
    assert after.totals() == before.totals()  # spend and waste: the advice's savings are in neither
    assert after.by_rule == before.by_rule and after.by_project == before.by_project


def test_an_empty_warehouse_gets_no_advice(tmp_path: Path, empty_marts: Path) -> None:
    from tests.helpers.empty_warehouse import open_copy

    con: duckdb.DuckDBPyConnection = open_copy(empty_marts, tmp_path / "w.duckdb")
    write_config(tmp_path, "")
    config = load_config(tmp_path / "wastewatch.yaml")
    try:
        for key in ("commitment", "spot"):
            _, items = run_advisor(con, config, get_advisor(key), WEEK)
            assert items == []
    finally:
        con.close()
