"""COST004 through the real pipeline: S3 Inventory reports delivered night after night to an `s3_inventory` source
with `keep_inventories`, ingested, the marts built, the rule evaluated with the config's `budgets:
storage_growth:`. The first night alone is `insufficient_data` naming its date; four weekly reports later the
growth is measured between the first and the last kept, and with the default of two kept it is measured over
the last week only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rules import Window, get_rule
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.storage import GIB, build_storage_marts, project, run_ingest, write_report

W48 = Window.iso_week("2026-W48")
PRICES = "prices:\n  storage_gb_month: {STANDARD: 0.023}\n"
BUDGET = 'budgets:\n  storage_growth: {"s3://acme-ckpt/": 10%}\n'


def _night(inv: Path, stamp: str, runs: int) -> None:
    """acme-ckpt holding `runs` checkpoints of 100 GiB under llm/run-<i>/."""
    write_report(
        inv,
        "acme-ckpt",
        stamp,
        [{"key": f"llm/run-{i}/step_1/model.pt", "size": 100 * GIB} for i in range(runs)],
    )


@pytest.mark.parametrize(("keep", "first"), [(31, "2026-11-01"), (2, "2026-11-22")])
def test_nightly_reports_build_the_history_growth_is_measured_from(
    tmp_path: Path, keep: int, first: str
) -> None:
    inv = tmp_path / "landing" / "inventory"
    config = project(
        tmp_path,
        f"  - {{name: ckpt, kind: s3_inventory, uri: landing/inventory/, options: {{keep_inventories: {keep}}}}}\n",
        PRICES + BUDGET,
    )
    con = new_warehouse(config.warehouse_path)
    rule = get_rule("COST004")
    params = rule.make_params(config.rule_overrides(rule.id), config)

    _night(inv, "2026-11-01T01-00Z", 10)
    run_ingest(con, config)
    build_storage_marts(con)
    [alone] = rule.evaluate(con, W48, params).iter_rows(named=True)
    assert alone["status"] == "insufficient_data" and alone["estimated_waste"] == 0
    assert "inventories on 2026-11-01 only" in alone["reason"]

    for stamp, runs in (("2026-11-08T01-00Z", 11), ("2026-11-15T01-00Z", 12), ("2026-11-22T01-00Z", 13),
                        ("2026-11-29T01-00Z", 16)):  # fmt: skip
        _night(inv, stamp, runs)
        run_ingest(con, config)
    build_storage_marts(con)
    [found] = rule.evaluate(con, W48, params).iter_rows(named=True)
    evidence = json.loads(found["evidence"])
    con.close()
    assert (evidence["first_date"], evidence["last_date"]) == (first, "2026-11-29")
    if keep == 31:  # 1,000 -> 1,600 GiB in 28 days: 600 x 30.44 / 28 = 652.29 GiB a month, 65.2 %
        expected_gib = 600 * 30.44 / 28
        assert evidence["growth_pct_per_month"] == pytest.approx(100 * expected_gib / 1000, abs=0.01)
    else:  # the two kept: 1,300 -> 1,600 GiB in 7 days
        expected_gib = 300 * 30.44 / 7
    assert evidence["monthly_growth_gib"] == pytest.approx(expected_gib, abs=0.001)
    assert found["status"] == "waste"
    assert float(found["estimated_waste"]) == pytest.approx(expected_gib * 0.023, abs=1e-5)
    # the new runs, 100 GiB each, ties by name, five at most
    new_runs = range(10, 15) if keep == 31 else range(13, 16)
    assert [g["prefix"] for g in evidence["grew_most"]] == [f"s3://acme-ckpt/llm/run-{i}/" for i in new_runs]
