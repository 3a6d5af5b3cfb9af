"""Spare capacity (rpt_weekly_spare_capacity): the hot spares' GPU-hours and cost of the week, their share of
the fleet's GPU-hours against the `spares:` policy, and the excess beyond it priced at the spares' own cost per
GPU-hour: an attention line (fleet page, Needs attention, main page), never waste.

The hand-made week (Monday 2026-11-23 00-10, every instance 8 GPUs at 80 an hour, so 10 per GPU-hour): s-1
and s-2 carry the bill tag role=hot-spare; s-1 idles all 10 hours with no job (80 spare GPU-hours), s-2
idles 00-05 and runs job 5 05-10 (40 spare GPU-hours: with a job on it, a spare is not spare); w-1 and w-2
work. Fleet: 4 x 8 x 10 = 320 GPU-hours; spares 120 (37.5 %). At a 25 % policy 80 are allowed: 40 GPU-hours
beyond it, 1,200 x 40 / 120 = 400.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from markupsafe import escape

from pipelines.config import Config, load_config
from pipelines.report import write_report
from pipelines.report.collect import _params, _query
from pipelines.transform.spares import write_spares
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.mart_rows import load_given
from tests.helpers.report import W48

SPARE = "{role=hot-spare}"
FLEET: dict[str, Any] = {
    "resources": [
        {"resource_id": "s-1", "host": "gpu-s1", "tags": SPARE},
        {"resource_id": "s-2", "host": "gpu-s2", "tags": SPARE},
        {"resource_id": "w-1", "host": "gpu-w1"},
        {"resource_id": "w-2", "host": "gpu-w2"},
    ],
    "jobs_enriched": [
        {"job_id": "5", "started_at": "2026-11-23T05:00", "ended_at": "2026-11-23T10:00", "resource_ids": ["s-2"]},
        {"job_id": "6", "started_at": "2026-11-23T00:00", "ended_at": "2026-11-23T10:00",
         "resource_ids": ["w-1", "w-2"]},
    ],
    "cost_hourly": [
        {"resource_id": r, "from": "2026-11-23T00:00", "to": "2026-11-23T10:00", "effective_cost": 80}
        for r in ("s-1", "s-2", "w-1", "w-2")
    ],
    "gpu_job_hours": [
        {"resource_id": "s-1", "gpus": 8, "from": "2026-11-23T00:00", "to": "2026-11-23T10:00", "util_mean": 0.0},
        {"resource_id": "s-2", "gpus": 8, "from": "2026-11-23T00:00", "to": "2026-11-23T05:00", "util_mean": 0.0},
        {"resource_id": "s-2", "job_id": "5", "gpus": 8, "from": "2026-11-23T05:00", "to": "2026-11-23T10:00",
         "util_mean": 70.0},
        *({"resource_id": r, "job_id": "6", "gpus": 8, "from": "2026-11-23T00:00", "to": "2026-11-23T10:00",
           "util_mean": 80.0} for r in ("w-1", "w-2")),
    ],
}  # fmt: skip


def _week(
    directory: Path, empty_marts: Path, share: float | None
) -> tuple[duckdb.DuckDBPyConnection, Config]:
    body = "sources: []\n"
    if share is not None:
        body += f"spares: {{match: {{tag: {{role: hot-spare}}}}, policy_share: {share}}}\n"
    directory.mkdir(parents=True, exist_ok=True)
    config = load_config(write_config(directory, body))
    con = open_copy(empty_marts, config.warehouse_path)
    write_spares(con, config)
    load_given(con, FLEET, {})  # gpu_claims built from the rows and spare_pools
    return con, config


@pytest.fixture(scope="module")
def over_policy(tmp_path_factory: pytest.TempPathFactory, empty_marts: Path) -> Any:
    con, config = _week(tmp_path_factory.mktemp("spares"), empty_marts, 0.25)
    yield con, config
    con.close()


def test_spare_hours_cost_and_the_excess_beyond_the_policy_share(over_policy: Any) -> None:
    con, config = over_policy
    [row] = _query(con, "rpt_weekly_spare_capacity", _params(W48, config))
    assert row["currency"] == "USD" and row["spare_hosts"] == 2
    assert row["spare_gpu_hours"] == pytest.approx(80 + 40) and float(row["spare_cost"]) == pytest.approx(
        1200
    )
    assert row["fleet_gpu_hours"] == 320 and row["spare_share"] == pytest.approx(0.375)
    assert row["policy_share"] == 0.25
    assert row["excess_gpu_hours"] == pytest.approx(120 - 0.25 * 320)
    assert float(row["excess_cost"]) == pytest.approx(1200 * 40 / 120)


def test_within_the_policy_nothing_is_beyond_and_without_spares_no_row(
    tmp_path: Path, empty_marts: Path
) -> None:
    con, config = _week(tmp_path / "within", empty_marts, 0.5)
    try:
        [row] = _query(con, "rpt_weekly_spare_capacity", _params(W48, config))
        assert row["spare_gpu_hours"] == pytest.approx(120)
        assert row["excess_gpu_hours"] == 0 and float(row["excess_cost"]) == 0
    finally:
        con.close()
    con, config = _week(tmp_path / "none", empty_marts, None)
    try:
        assert _query(con, "rpt_weekly_spare_capacity", _params(W48, config)) == []
    finally:
        con.close()


def test_the_excess_is_an_attention_line_never_waste(over_policy: Any) -> None:
    con, config = over_policy
    report = write_report(con, config, W48)
    line = (
        "2 hot spare(s) held 120.0 GPU-hours (USD 1,200.00), 37.5 % of the fleet's 320 GPU-hours against a "
        "policy of 25.0 %: 40.0 GPU-hours beyond it, USD 400.00"
    )
    fleet = report.files["fleet.html"].read_text(encoding="utf-8")
    assert 'data-over-policy="true">' in fleet and str(escape(line)) in fleet
    message = (
        "hot spares held 37.5 % of the fleet's GPU-hours against a policy of 25.0 %: 40 GPU-hours beyond it, "
        "USD 400.00"
    )
    assert report.spare_message == message
    for page in ("attention.html", "report.html"):
        html = report.files[page].read_text(encoding="utf-8")
        assert '<p id="spare-attention" class="attention-line">' in html and str(escape(message)) in html, (
            page
        )
    assert message in report.files["report.md"].read_text(encoding="utf-8")
    full = report.files["report-full.md"].read_text(encoding="utf-8")
    assert "### Spare capacity" in full and line in full
    assert all(h.waste == 0 for h in report.headline)  # attention, never waste
