"""Priced GPU-hours without telemetry: an owned or contract host is priced for every hour of its service
window, telemetry or not (docs/gpu.md "Which hours"), and a bill charges whether a GPU reported or not. The
report counts those GPU-hours per cost basis (rpt_weekly_gpu_hours_without_telemetry.sql) and says so on
the fleet page and in the main page's data-quality line; checked on the pricing tests' fleet built without
Dagster (tests/helpers/pricing.py), whose gaps are known by construction."""

from __future__ import annotations

from pathlib import Path

from pipelines.report import write_report
from tests.helpers.pricing import WEEK, build_fleet


def test_priced_gpu_hours_without_telemetry_are_counted_per_cost_basis(tmp_path: Path) -> None:
    config, con = build_fleet(tmp_path)
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
