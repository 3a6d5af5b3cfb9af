"""Money keeps the provider's precision: a bill whose 10-decimal costs add up to more than a cent beyond
their 6-decimal roundings lands, reconciles and spreads over the hours to its exact sum."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.ingest.billing.checks import reconciliation
from pipelines.transform.build import build_mart
from pipelines.warehouse import sql_text
from tests.helpers.billing_exports import csv_bytes, line
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

NOV = datetime(2026, 11, 1)
RESOURCES = 40
HOURS = 30 * 24  # all of November


def _bill() -> list[dict[str, str]]:
    """Hourly lines whose costs end in ...4999 at the 7th to 10th decimal (each rounds down by 0.0000004999
    at 6 decimals), and a daily line per resource and day, spread over the resource's hours."""
    rng = random.Random(17)
    lines = []
    for h in range(HOURS):
        # one hour's line made once; each resource's differs in its id, resource and cost fields only
        hour = line("i-000", NOV + timedelta(hours=h), "0")
        for r in range(RESOURCES):
            cost = f"{rng.randint(0, 3)}.{rng.randint(0, 999_999):06d}4999"
            resource = f"i-{r:03d}"
            lines.append(
                hour
                | {
                    "identity_line_item_id": hour["identity_line_item_id"].replace("i-000", resource, 1),
                    "line_item_resource_id": resource,
                    "line_item_unblended_rate": cost,
                    "line_item_unblended_cost": cost,
                    "pricing_public_on_demand_cost": cost,
                }
            )
    # the shortcut makes what `line` makes
    assert lines[-1] == line(
        f"i-{RESOURCES - 1:03d}", NOV + timedelta(hours=HOURS - 1), lines[-1]["line_item_unblended_cost"]
    )
    for day in range(30):
        for r in range(RESOURCES):
            start = NOV + timedelta(days=day)
            cost = f"7.{rng.randint(0, 10**10 - 1):010d}"
            daily = line(f"i-{r:03d}", start, cost, line_id=f"daily-{r}-{day}")
            end = (start + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
            daily["line_item_usage_end_date"] = end
            daily["identity_time_interval"] = f"{daily['line_item_usage_start_date']}/{end}"
            lines.append(daily)
    return lines


def test_a_large_bill_lands_reconciles_and_spreads_to_the_hour_exactly(tmp_path: Path) -> None:
    bill = _bill()
    exact = sum((Decimal(x["line_item_unblended_cost"]) for x in bill), Decimal(0))
    rounded = sum(
        (Decimal(x["line_item_unblended_cost"]).quantize(Decimal("0.000001")) for x in bill), Decimal(0)
    )
    assert exact - rounded > Decimal("0.01")  # what 6 decimals per line would lose
    (tmp_path / "landing").mkdir()
    (tmp_path / "landing" / "nov.csv.gz").write_bytes(csv_bytes(bill))
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        report = ingest(con, config)
        assert not report.rejected, report.summary()
        landed = con.execute(
            "select count(*), sum(billed_cost), sum(effective_cost) from billing_line_items"
        ).fetchall()[0]
        assert landed == (len(bill), exact, exact)
        ledger = con.execute(
            "select billed_cost_sum, effective_cost_sum, file_billed_cost_sum, file_effective_cost_sum "
            "from ingest_files"
        ).fetchall()
        assert ledger == [(exact, exact, exact, exact)]
        assert reconciliation(con).passed

        build_mart(con, "cost_hourly")
        hourly = con.execute(
            "select count(distinct (resource_id, hour)), sum(billed_cost), sum(effective_cost) from cost_hourly"
        ).fetchall()[0]
        assert hourly == (RESOURCES * HOURS, exact, exact)  # tolerance 0
        # each daily line's hours add up to it exactly, though 1/24 of it has no finite decimal form
        per_day = con.execute(
            "select resource_id, sum(billed_cost) from cost_hourly where hour < '2026-11-02' "
            "group by all order by all limit 3"
        ).fetchall()
        first_day = [x for x in bill if x["line_item_usage_start_date"].startswith("2026-11-01")]
        assert len(per_day) == 3
        for resource, cost in per_day:
            mine = [
                Decimal(x["line_item_unblended_cost"])
                for x in first_day
                if x["line_item_resource_id"] == resource
            ]
            assert cost == sum(mine, Decimal(0))
        check = con.execute(sql_text("checks", "assert_cost_hourly_reconciles_with_billing")).fetchall()
        assert [(label, passed) for label, passed, _ in check] == [("USD", True)]
    finally:
        con.close()
