"""The report on a fleet priced partly by a bill and partly by `pricing:` cost models: the headline shows
billed and modelled spend apart, spend by category splits by basis, and every finding states its basis
(a modelled cost is never shown as a bill). Priced GPU-hours without telemetry: an owned or contract host is
priced for every hour of its service window, telemetry or not (docs/gpu.md "Which hours"), and a bill
charges whether a GPU reported or not; the report counts those GPU-hours per cost basis
(rpt_weekly_gpu_hours_without_telemetry.sql) and says so on the fleet page and in the main page's
data-quality line. The fleet: tests/helpers/pricing.py, built without Dagster once for this file (each test reads a copy),
its gaps known by construction."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.config import Config, load_config
from pipelines.evaluate import evaluate_week
from pipelines.report import write_report
from pipelines.warehouse import connect, rows
from tests.helpers.pricing import WEEK, build_fleet


@pytest.fixture(scope="module")
def built_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fleet ingested and built into its marts once; each test works on a copy (`pricing_fleet`)."""
    directory = tmp_path_factory.mktemp("pricing_fleet")
    build_fleet(directory)[1].close()
    return directory


@pytest.fixture
def pricing_fleet(built_fleet: Path, tmp_path: Path) -> Iterator[tuple[Config, duckdb.DuckDBPyConnection]]:
    """This test's own copy of the built fleet, as `build_fleet` returns it: (config, open connection)."""
    shutil.copytree(built_fleet, tmp_path / "fleet")
    config = load_config(tmp_path / "fleet" / "wastewatch.yaml")
    con = connect(config.warehouse_path)
    yield config, con
    con.close()


def test_headline_and_findings_keep_billed_and_modelled_cost_apart(
    pricing_fleet: tuple[Config, duckdb.DuckDBPyConnection],
) -> None:
    config, con = pricing_fleet
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


def test_priced_gpu_hours_without_telemetry_are_counted_per_cost_basis(
    pricing_fleet: tuple[Config, duckdb.DuckDBPyConnection],
) -> None:
    config, con = pricing_fleet
    try:
        report = write_report(con, config, WEEK)
        nameplate = con.execute(
            "select resource_id, count(*) from cost_hourly where pricing_basis = 'owned' "
            "and pricing_inputs->>'watts_source' = 'nameplate' group by all order by 1"
        ).fetchall()
    finally:
        con.close()
    by_basis = {
        r["pricing_basis"]: (r["gpu_hours"], r["without_telemetry"], r["resources"])
        for r in report.no_telemetry
    }
    # the data runs 10 hours (00:00-10:00). dgx-01 (2 GPUs) has no telemetry 06:00-08:00: 2 h x 2 GPUs;
    # dgx-02 reported 2 hours of 10: 8 h x 2 GPUs. Both stay priced, their watts from the nameplate.
    assert by_basis["owned"] == (40, 2 * 2 + 8 * 2, 2)
    assert nameplate == [("host:dgx-01", 2), ("host:dgx-02", 8)]
    # rent-01 reported every hour of its contract day; rent-02's contract ended before the week
    assert by_basis["contract"] == (20, 0, 0)
    # the billed gpu-a reported 1 hour of its 10 billed hours
    assert by_basis["bill"] == (20, 9 * 2, 1)
    line = "38 of 80 priced GPU-hours had no telemetry (bill 18 of 20, owned 20 of 40)"
    assert report.no_telemetry_message == line
    fleet = report.files["fleet.html"].read_text(encoding="utf-8")
    assert f'<p id="no-telemetry" class="attention-line">{line}: they are priced all the same' in fleet
    main = report.files["report.html"].read_text(encoding="utf-8")
    assert f'<span id="no-telemetry-line">{line}: priced all the same' in main
    assert f"{line}: they are priced all the same" in report.files["report-full.md"].read_text(
        encoding="utf-8"
    )
