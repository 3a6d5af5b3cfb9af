"""GPU006 on `wastewatch demo` (one week, 2026-W48) against the plant expected.json states.

The research team's one-day scaling-test pool (scale-h100-01..08, 64 × H100, priced by a contract entry valid
that day only) runs acme-llm-6.7b at the tokens per second of four 8-GPU runs: half the per-GPU throughput of
nlp's single-node run of the same configuration on gpu-h100-08 (pipelines/demo/scaling.py). GPU006 prices 32
of its 64 GPUs for its time, at the pool's contract rate; nlp's 2-node runs (16 GPUs, no training log) are
`insufficient_data`, never 0 waste. The rules run once, in the demo's own pipeline; this reads its findings.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.warehouse import connect, rows
from rules import Window, get_rule
from tests.helpers.gpu_precedence import priced_units

WEEK = Window.iso_week("2026-W48")


@pytest.fixture(scope="module")
def demo(demo_dir: tuple[Path, str]) -> Iterator[tuple[duckdb.DuckDBPyConnection, dict[str, Any], Path]]:
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text(encoding="utf-8"))
    con = connect(load_config(directory / "wastewatch.yaml").published_path, read_only=True)
    yield con, expected, directory
    con.close()


def _findings(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    found = rows(
        con,
        "select * from findings where rule_id = 'GPU006' and week_start = '2026-11-23' order by resource_id",
    )
    return {f["job_id"]: {**f, "evidence": json.loads(f["evidence"])} for f in found}


def test_the_64_gpu_run_at_half_the_per_gpu_throughput_is_priced_to_the_cent(
    demo: tuple[duckdb.DuckDBPyConnection, dict[str, Any], Path],
) -> None:
    con, expected, _ = demo
    plant = expected["report_week"]["rules"]["GPU006"]
    assert (plant["gpus"], plant["baseline_gpus"], plant["efficiency"]) == (64, 8, 0.5)
    # expected.json's formula, from its own figures: GPU-hours beyond linear scaling x the cost per GPU-hour
    assert plant["excess_gpu_hours"] == pytest.approx(
        plant["gpu_hours"] * (1 - plant["efficiency"]), abs=1e-5
    )
    assert plant["waste"] == pytest.approx(plant["excess_gpu_hours"] * plant["cost_per_gpu_hour"], abs=0.005)
    found = _findings(con)
    f = found[str(plant["job_id"])]
    assert f["status"] == "waste" and f["team"] == plant["team"] == "research"
    assert f["evidence"]["baseline_job_id"] == str(plant["baseline_job_id"])
    assert (f["evidence"]["gpus"], f["evidence"]["baseline_gpus"]) == (64, 8)
    assert f["evidence"]["efficiency"] == pytest.approx(plant["efficiency"], abs=1e-4)
    assert f["evidence"]["priced_gpu_hours"] == pytest.approx(plant["excess_gpu_hours"], abs=1e-3)
    assert float(f["estimated_waste"]) == pytest.approx(plant["waste"], abs=0.01)
    assert "on 64×H100 at 50% of the per-GPU throughput of job" in f["reason"]
    # the baseline is on fewer than min_gpus GPUs: a baseline, never judged itself
    assert str(plant["baseline_job_id"]) not in found
    # its GPU-hours are no other rule's: every GPU busy, its MFU above GPU005's floor
    others = rows(
        con,
        "select rule_id from findings where week_start = '2026-11-23' and rule_id <> 'GPU006' "
        "and (job_id = $j or resource_id like 'host:scale-h100-%')",
        {"j": str(plant["job_id"])},
    )
    assert others == []


def test_the_pool_costs_its_rental_day_and_no_gpu_rule_prices_more_than_a_host_cost(
    demo: tuple[duckdb.DuckDBPyConnection, dict[str, Any], Path],
) -> None:
    """The pool's hosts are priced for the 24 hours of their rental day only; the GPU-hours GPU006 prices on
    each of them stay within that host's cost of the week (the first four hosts' 32 GPUs, by resource)."""
    con, expected, directory = demo
    plant = expected["report_week"]["rules"]["GPU006"]
    spend = {
        r["resource_id"].removeprefix("host:"): r
        for r in rows(
            con,
            "select resource_id, count(*) as hours, sum(effective_cost) as cost from cost_hourly "
            "where resource_id like 'host:scale-h100-%' group by all",
        )
    }
    modelled = expected["report_week"]["modelled_spend"]
    assert sorted(spend) == sorted(plant["hosts"])
    for host, r in spend.items():
        assert r["hours"] == modelled["hours_by_host"][host] == 24
        assert abs(r["cost"] - Decimal(str(modelled["by_host"][host]))) <= Decimal("0.005")
    config = load_config(directory / "wastewatch.yaml")
    rule = get_rule("GPU006")
    units = priced_units(
        con, rule, WEEK, rule.make_params(config.rule_overrides(rule.id), config), "resource_id, cost"
    )
    by_host: dict[str, Decimal] = defaultdict(Decimal)
    for u in units:
        by_host[u["resource_id"].removeprefix("host:")] += Decimal(str(u["cost"]))
    assert sorted(by_host) == plant["hosts"][:4]
    assert all(v <= spend[h]["cost"] for h, v in by_host.items())
    assert float(sum(by_host.values())) == pytest.approx(plant["waste"], abs=0.01)


def test_the_2_node_runs_without_a_training_log_are_insufficient_data(
    demo: tuple[duckdb.DuckDBPyConnection, dict[str, Any], Path],
) -> None:
    con, expected, _ = demo
    plant = expected["report_week"]["rules"]["GPU006"]
    found = _findings(con)
    unjudged = {k: f for k, f in found.items() if f["status"] == "insufficient_data"}
    assert sorted(unjudged) == sorted(str(j) for j in plant["insufficient_data"]) != []
    for f in unjudged.values():
        assert float(f["estimated_waste"]) == 0 and f["evidence"]["lacks"] == "no training log"
        assert f["evidence"]["gpus"] == 16 and "it has no training log" in f["reason"]
    assert set(found) == set(unjudged) | {str(plant["job_id"])}
