"""Cost models for GPU hosts without a bill (`pricing:`): owned and contract fleets priced by hand formula
to the cent, a telemetry gap priced (not free), a billed host keeping its bill, and GPU001/GPU002/GPU004
pricing waste on modelled hosts exactly as from a bill (the fleet: tests/helpers/pricing.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipelines.config import Config, ConfigError, load_config
from pipelines.evaluate import evaluate_rule
from pipelines.transform.pricing import write_pricing
from pipelines.warehouse import rows, sql_text
from rules import get_rule
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.pricing import CENT, DGX01_WATTS, DGX02_WATTS, T0, WEEK, build_fleet, owned_hour


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Config, duckdb.DuckDBPyConnection]]:
    config, con = build_fleet(tmp_path_factory.mktemp("fleet"))
    yield config, con
    con.close()


def hourly(con: duckdb.DuckDBPyConnection, resource_id: str) -> list[dict[str, object]]:
    return rows(
        con,
        "select hour, effective_cost, billed_cost, pricing_basis, pricing_inputs from cost_hourly "
        "where resource_id = $r order by hour",
        {"r": resource_id},
    )


def test_owned_hosts_are_priced_by_hand_formula_to_the_cent(
    fleet: tuple[Config, duckdb.DuckDBPyConnection],
) -> None:
    _, con = fleet
    for host, watts in (("dgx-01", DGX01_WATTS), ("dgx-02", DGX02_WATTS)):
        got = hourly(con, f"host:{host}")
        # every hour from the host's first telemetry to the end of the data (10:00), gaps included
        assert [r["hour"] for r in got] == [T0 + timedelta(hours=h) for h in range(10)]
        assert {r["pricing_basis"] for r in got} == {"owned"}
        assert all(r["billed_cost"] is None for r in got)  # nothing was billed
        for r, w in zip(got, watts, strict=True):
            assert abs(r["effective_cost"] - owned_hour(w)) < Decimal("1e-9"), (host, r["hour"], w)
        total = sum((r["effective_cost"] for r in got), Decimal(0)).quantize(CENT)
        assert total == sum((owned_hour(w) for w in watts), Decimal(0)).quantize(CENT)
    inputs = json.loads(hourly(con, "host:dgx-01")[6]["pricing_inputs"])  # 06:00, no telemetry
    assert inputs["watts_source"] == "nameplate" and inputs["gpu_watts"] == 1000
    assert inputs["pue"] == 1.4 and inputs["kwh_price"] == 0.12 and inputs["life_years"] == 3
    assert inputs["in_service_from"] == "first telemetry" and inputs["host_overhead"] == 1.5
    assert json.loads(hourly(con, "host:dgx-01")[0]["pricing_inputs"])["watts_source"] == "telemetry"


def test_contract_hosts_cost_every_hour_of_their_contract_only(
    fleet: tuple[Config, duckdb.DuckDBPyConnection],
) -> None:
    _, con = fleet
    got = hourly(con, "host:rent-01")
    assert len(got) == 10 and {r["pricing_basis"] for r in got} == {"contract"}
    assert sum((r["effective_cost"] for r in got), Decimal(0)) == Decimal("42.00")  # 10 h x 2 GPUs x 2.10
    assert json.loads(got[0]["pricing_inputs"])["per_gpu_hour"] == 2.1
    assert hourly(con, "host:rent-02") == []  # its contract ended the day before the data starts


def test_a_billed_host_keeps_its_bill(fleet: tuple[Config, duckdb.DuckDBPyConnection]) -> None:
    _, con = fleet
    assert hourly(con, "host:gpu-a") == []
    got = hourly(con, "i-a")
    assert len(got) == 10 and {r["pricing_basis"] for r in got} == {"bill"}
    mapped = rows(con, "select resource_id, pricing_position from int_host_resources where host = 'gpu-a'")
    assert mapped == [{"resource_id": "i-a", "pricing_position": None}]
    # reconciliation compares billed rows only: it still passes with modelled hours in cost_hourly
    checks = rows(con, sql_text("checks", "assert_cost_hourly_reconciles_with_billing"))
    assert checks and all(r["passed"] for r in checks)


def test_modelled_hosts_reach_resources_and_gpu_billed_hours(
    fleet: tuple[Config, duckdb.DuckDBPyConnection],
) -> None:
    _, con = fleet
    got = {
        r["resource_id"]: r
        for r in rows(con, "select resource_id, host, gpu_count, gpu_model, pricing_basis from resources")
    }
    assert got["host:dgx-01"] == {
        "resource_id": "host:dgx-01", "host": "dgx-01", "gpu_count": 2, "gpu_model": "H100 80GB HBM3",
        "pricing_basis": "owned",
    }  # fmt: skip
    assert got["host:rent-01"]["pricing_basis"] == "contract" and got["i-a"]["pricing_basis"] == "bill"
    billed = rows(
        con,
        "select count(*) as n, sum(cost) as cost from gpu_billed_hours where resource_id = 'host:rent-01'",
    )
    assert billed == [{"n": 10, "cost": Decimal("42.000000")}]
    per_gpu = rows(con, "select distinct cost_per_gpu_hour from gpu_hours where resource_id = 'host:rent-01'")
    assert per_gpu == [{"cost_per_gpu_hour": Decimal("2.100000")}]


def _finding(
    con: duckdb.DuckDBPyConnection, config: Config, rule_id: str, resource_id: str
) -> dict[str, object]:
    _, frame = evaluate_rule(con, config, get_rule(rule_id), WEEK)
    found = [r for r in frame.to_dicts() if r["resource_id"] == resource_id]
    assert len(found) == 1, (rule_id, resource_id, frame.to_dicts())
    return found[0]


def _cost6(value: Decimal) -> Decimal:
    """gpu_billed_hours holds each hour's cost to 6 decimals, as the rules read it."""
    return value.quantize(Decimal("0.000001"))


def test_gpu_rules_price_waste_on_modelled_hosts_as_from_a_bill(
    fleet: tuple[Config, duckdb.DuckDBPyConnection],
) -> None:
    config, con = fleet
    # GPU001: dgx-01 idle 00:00-06:00 (priced at its owned cost); 06:00-08:00 without telemetry is
    # priced in the evidence, never waste and never free
    idle = _finding(con, config, "GPU001", "host:dgx-01")
    assert idle["status"] == "waste"
    expected = sum((_cost6(owned_hour(w)) for w in DGX01_WATTS[:6]), Decimal(0))
    assert Decimal(str(idle["estimated_waste"])).quantize(CENT) == expected.quantize(CENT)
    evidence = json.loads(idle["evidence"])
    assert evidence["idle_hours"] == 6 and evidence["hours_without_telemetry"] == 2
    gap = sum((_cost6(owned_hour(w)) for w in DGX01_WATTS[6:8]), Decimal(0))
    assert Decimal(str(evidence["cost_without_telemetry"])) == gap.quantize(CENT)
    # dgx-02 reported for 2 h and then stopped: 8 priced hours without telemetry are insufficient data
    dark = _finding(con, config, "GPU001", "host:dgx-02")
    assert dark["status"] == "insufficient_data" and Decimal(str(dark["estimated_waste"])) == 0
    dark_cost = sum((_cost6(owned_hour(w)) for w in DGX02_WATTS[2:]), Decimal(0))
    assert Decimal(str(json.loads(dark["evidence"])["cost_without_telemetry"])) == dark_cost.quantize(CENT)
    # GPU004: the failed job's 4 h on 2 contract GPUs at 2.10
    crash = _finding(con, config, "GPU004", "slurm/crash")
    assert crash["status"] == "waste" and Decimal(str(crash["estimated_waste"])).quantize(CENT) == Decimal(
        "16.80"
    )
    # GPU002: the job that left GPU 1 unused for 6 h pays 6 GPU-hours at 2.10
    unused = _finding(con, config, "GPU002", "slurm/train")
    assert unused["status"] == "waste" and Decimal(str(unused["estimated_waste"])).quantize(CENT) == Decimal(
        "12.60"
    )


def test_an_owned_host_costs_until_it_is_retired_and_no_later(
    fleet: tuple[Config, duckdb.DuckDBPyConnection],
) -> None:
    """`retired:` (owned) ends the hours as `valid_to` does a contract's; each hour up to it is priced,
    telemetry or not. The fleet's telemetry runs 2026-11-23 00:00-10:00."""
    _, con = fleet
    query = (
        "select host_key, count(*) as n from int_modelled_hours where basis = 'owned' group by 1 order by 1"
    )
    con.begin()
    try:
        con.execute("update pricing_entries set valid_to = date '2026-11-23' where basis = 'owned'")
        assert rows(con, query) == [{"host_key": "dgx-01", "n": 10}, {"host_key": "dgx-02", "n": 10}]
        con.execute("update pricing_entries set valid_to = date '2026-11-22' where basis = 'owned'")
        assert rows(con, query) == []  # retired the day before: its telemetry afterwards costs nothing
    finally:
        con.rollback()


def test_retired_is_written_as_the_entrys_last_day_and_cannot_precede_in_service(tmp_path: Path) -> None:
    owned = (
        "pricing:\n  - match: {host: 'dgx-*'}\n    owned: {purchase_price: 90000, currency: USD, life_years: 3, "
        "gpus: 8, pue: 1.3, kwh_price: 0.1, in_service: 2026-01-05, retired: %s}\n"
    )
    write_config(tmp_path, owned % "2026-11-30")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        write_pricing(con, config)
        got = rows(con, "select basis, in_service, valid_to from pricing_entries")
    finally:
        con.close()
    assert got == [{"basis": "owned", "in_service": date(2026, 1, 5), "valid_to": date(2026, 11, 30)}]
    write_config(tmp_path, owned % "2025-12-31")
    with pytest.raises(ConfigError, match="retired 2025-12-31 is before in_service 2026-01-05"):
        load_config(tmp_path / "wastewatch.yaml")
