"""The report on a fleet priced partly by a bill and partly by `pricing:` cost models: the headline shows
billed and modelled spend apart, spend by category splits by basis, and every finding states its basis
(a modelled cost is never shown as a bill). The fleet: tests/helpers/pricing.py."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import polars as pl

from pipelines.evaluate import evaluate_week
from pipelines.report import write_report
from pipelines.warehouse import rows
from tests.helpers.pricing import WEEK, build_fleet


def test_headline_and_findings_keep_billed_and_modelled_cost_apart(tmp_path: Path) -> None:
    config, con = build_fleet(tmp_path)
    try:
        evaluate_week(con, config, WEEK)
        report = write_report(con, config, WEEK)
        modelled = {
            r["pricing_basis"]: r["cost"]
            for r in rows(
                con,
                "select pricing_basis, sum(effective_cost)::decimal(18, 2) as cost from cost_hourly group by 1",
            )
        }
    finally:
        con.close()
    (h,) = report.headline
    assert h["billed_spend"] == Decimal("200.00")  # 10 billed hours at 20
    assert h["contract_spend"] == Decimal("42.00")  # rent-01: 10 h x 2 GPUs x 2.10
    assert h["owned_spend"] == modelled["owned"] and h["owned_spend"] > 0
    assert h["modelled_spend"] == h["owned_spend"] + h["contract_spend"]
    assert h["spend"] == h["billed_spend"] + h["modelled_spend"]
    bases = {(s["pricing_basis"], s["total"]) for s in report.spend_by_category}
    assert ("bill", Decimal("200.00")) in bases and ("contract", Decimal("42.00")) in bases
    by_resource = {(f["rule_id"], f["resource_id"]): f["pricing_basis"] for f in report.findings}
    assert by_resource[("GPU001", "host:dgx-01")] == "owned"
    assert by_resource[("GPU004", "slurm/crash")] == "contract"  # through the evidence's resource_ids
    assert by_resource[("GPU002", "slurm/train")] == "contract"
    md = report.files["report-full.md"].read_text(encoding="utf-8")
    assert "billed USD 200.00; modelled (cost models, not a bill): owned" in md
    assert "contract USD 42.00" in md
    assert "(owned model)" in md and "(contract model)" in md
    assert "cost from the contract cost model, not a bill" in md
    html = report.files["report.html"].read_text(encoding="utf-8")
    assert 'id="billed-USD">200.00<' in html.replace(" ", "") or 'id="billed-USD">' in html
    teams = report.files["teams.html"].read_text(encoding="utf-8")  # where the money went, by basis
    assert "owned model" in teams and 'data-basis="contract"' in teams
    frame = pl.read_parquet(report.files["findings.parquet"])
    assert dict(zip(frame["resource_id"], frame["pricing_basis"], strict=True))["host:dgx-01"] == "owned"
