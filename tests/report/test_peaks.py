"""Peaks beside averages (rpt_weekly_peaks): GPUs in use, spend per hour and stored data, each averaged over
the periods the week's data spans, with its peak and the first hour (or day) it was reached; shown on the
fleet page and in report-full.md.

The rows are hand-made marts for 2026-W48 (Monday 2026-11-23):
- gpu_hours: i-1's 8 GPUs run job 7 Mon 10-14 (util 90), idle and jobless Mon 00-10 and 14-24 (util 0);
  i-2's 4 GPUs are busy without a job Mon 12-13 (util 60), and one of them reports util 3 (idle, no job)
  at 13. Hour 12 is the peak: 8 + 4 = 12 GPUs in use. The span is Mon 00-24: 24 hours, (4 x 8 + 4) / 24 = 1.5.
- cost_hourly (USD): 10 an hour Mon 00-24 and 100 more at Mon 18 (a start-up hour): 340 / 24 hours. EUR 5
  an hour Tue 00-06 only: its own span (6 hours), average 5, the peak its first hour.
- storage_prefix_days: bucket a 100 GiB (listed Sun 22nd, before the week) and 300 GiB Thu 26th; bucket b
  50 GiB Tue 24th and 10 GiB Wed 25th. Days Tue-Thu: 150, 110, 310 -> peak Thu, average 190.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.report import write_report
from pipelines.report.collect import _params, _query
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.mart_rows import load_given
from tests.helpers.report import W48

GIB = 1 << 30


def _storage(bucket: str, day: str, gib: int) -> dict[str, Any]:
    return {
        "inventory_date": day, "inventory_at": f"{day} 06:00", "store": "s3", "bucket": bucket, "prefix": "",
        "uri_prefix": f"s3://{bucket}/", "storage_class": "STANDARD", "bytes": gib * GIB, "objects": 1,
    }  # fmt: skip


PEAKS: dict[str, Any] = {
    "resources": [{"resource_id": "i-1"}, {"resource_id": "i-2", "gpu_count": 4}],
    "gpu_hours": [
        {"resource_id": "i-1", "gpus": 8, "from": "2026-11-23T00:00", "to": "2026-11-23T10:00", "util_mean": 0.0},
        {"resource_id": "i-1", "gpus": 8, "from": "2026-11-23T10:00", "to": "2026-11-23T14:00", "util_mean": 90.0,
         "job_id": "7", "jobs": 1},
        {"resource_id": "i-1", "gpus": 8, "from": "2026-11-23T14:00", "to": "2026-11-24T00:00", "util_mean": 0.0},
        {"resource_id": "i-2", "gpus": 4, "at": "2026-11-23T12:00", "util_mean": 60.0},
        {"resource_id": "i-2", "gpus": 1, "at": "2026-11-23T13:00", "util_mean": 3.0},
    ],
    "cost_hourly": [
        {"resource_id": "i-1", "from": "2026-11-23T00:00", "to": "2026-11-24T00:00", "effective_cost": 10},
        {"resource_id": "i-2", "at": "2026-11-23T18:00", "effective_cost": 100},
        {"resource_id": "x-eu", "billing_currency": "EUR", "from": "2026-11-24T00:00", "to": "2026-11-24T06:00",
         "effective_cost": 5},
    ],
    "storage_prefix_days": [
        _storage("a", "2026-11-22", 100), _storage("a", "2026-11-26", 300),
        _storage("b", "2026-11-24", 50), _storage("b", "2026-11-25", 10),
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def peaks_week(tmp_path_factory: pytest.TempPathFactory, empty_marts: Path) -> Any:
    directory = tmp_path_factory.mktemp("peaks")
    config = load_config(write_config(directory, "sources: []\n"))
    con = open_copy(empty_marts, config.warehouse_path)
    load_given(con, PEAKS, {})
    yield con, config
    con.close()


def _peaks(con: duckdb.DuckDBPyConnection, config: Any) -> dict[tuple[str, str | None], dict[str, Any]]:
    return {(r["measure"], r["currency"]): r for r in _query(con, "rpt_weekly_peaks", _params(W48, config))}


def test_each_peak_is_beside_its_average_with_the_hour_it_happened(peaks_week: Any) -> None:
    con, config = peaks_week
    found = _peaks(con, config)
    assert set(found) == {("concurrent_gpus", None), ("hourly_spend", "USD"), ("hourly_spend", "EUR"),
                          ("stored_gib", None)}  # fmt: skip
    gpus = found[("concurrent_gpus", None)]
    # hour 12: i-1's 8 GPUs (a job and busy) and i-2's 4 busy ones; i-2's idle GPU at 13 is not in use
    assert (gpus["peak"], gpus["peak_at"], gpus["per"]) == (12, datetime(2026, 11, 23, 12), "hour")
    assert gpus["periods"] == 24 and gpus["average"] == pytest.approx((4 * 8 + 4) / 24)
    usd = found[("hourly_spend", "USD")]
    assert (usd["peak"], usd["peak_at"]) == (110, datetime(2026, 11, 23, 18))
    assert usd["periods"] == 24 and usd["average"] == pytest.approx(340 / 24)
    eur = found[("hourly_spend", "EUR")]  # its own span; a tie is the first hour
    assert (eur["peak"], eur["peak_at"], eur["periods"], eur["average"]) == (5, datetime(2026, 11, 24), 6, 5)


def test_the_storage_high_water_mark_carries_each_bucket_to_the_day(peaks_week: Any) -> None:
    con, config = peaks_week
    stored = _peaks(con, config)[("stored_gib", None)]
    # Tue 24th: a 100 (listed Sunday) + b 50; Wed: 100 + 10; Thu: 300 + 10
    assert (stored["peak"], stored["peak_at"], stored["per"]) == (310, datetime(2026, 11, 26), "day")
    assert stored["periods"] == 3 and stored["average"] == pytest.approx((150 + 110 + 310) / 3)


def test_no_data_no_peak_row(tmp_path: Path, empty_marts: Path) -> None:
    config = load_config(write_config(tmp_path, "sources: []\n"))
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        assert _query(con, "rpt_weekly_peaks", _params(W48, config)) == []
    finally:
        con.close()


def test_the_fleet_page_and_report_full_show_the_peaks(peaks_week: Any) -> None:
    con, config = peaks_week
    report = write_report(con, config, W48)
    fleet = report.files["fleet.html"].read_text(encoding="utf-8")
    table = fleet[fleet.index('id="peaks-table"') :]
    table = table[: table.index("</table>")]
    gpus = table[table.index('data-measure="concurrent_gpus"') :]
    assert "1.5 GPUs<br><small>over 24 hours</small>" in gpus
    assert "12.0 GPUs<br><small>Mon 2026-11-23 12:00 UTC</small>" in gpus
    assert "Thu 2026-11-26" in table and "310.0 GiB" in table
    full = report.files["report-full.md"].read_text(encoding="utf-8")
    assert "## Peaks beside averages" in full
    assert "| Spend per hour | USD 14.17 (over 24 hours) | USD 110.00 (Mon 2026-11-23 18:00 UTC) |" in full
