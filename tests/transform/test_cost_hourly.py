"""cost_hourly: hourly lines stay in their hour; daily and monthly lines are spread over the hours their
resource existed on the bill (else over the whole period), and the `allocation` column says which."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.transform.build import build_mart
from tests.helpers.billing_exports import csv_bytes, hours, line
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

NOV = datetime(2026, 11, 2, 0, 0)


def _monthly(resource: str, cost: str) -> dict[str, str]:
    row = line(resource, datetime(2026, 11, 1), cost, kind="Fee", instance_type="")
    row["line_item_usage_end_date"] = "2026-12-01T00:00:00Z"
    row["identity_line_item_id"] = f"{resource}-monthly"
    return row


def test_long_lines_spread_over_the_hours_their_resource_existed(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    rows = hours("i-ran", NOV, 10, "1.00") + [_monthly("i-ran", "72.00"), _monthly("vol-idle", "720.00")]
    (landing / "bill.csv.gz").write_bytes(csv_bytes(rows))
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    build_mart(con, "cost_hourly")

    ran = con.execute(
        "select hour, sum(effective_cost), string_agg(charge_category || ':' || allocation, ',' order by charge_category) "
        "from cost_hourly where resource_id = 'i-ran' group by hour order by hour"
    ).fetchall()
    # the monthly 72.00 lands on the 10 hours the instance ran: 7.20 more in each
    assert [r[0] for r in ran] == [NOV + timedelta(hours=i) for i in range(10)]
    assert {r[1] for r in ran} == {Decimal("8.200000")}
    assert {r[2] for r in ran} == {"Purchase:resource_hours,Usage:hourly"}

    idle = con.execute(
        "select count(*), sum(effective_cost), min(hour), max(hour), any_value(allocation) from cost_hourly "
        "where resource_id = 'vol-idle'"
    ).fetchall()[0]
    # nothing else shows the volume: its month is spread over all 720 hours of November
    assert idle == (720, Decimal("720.000000"), datetime(2026, 11, 1), datetime(2026, 11, 30, 23), "period")

    # money is conserved
    assert (
        con.execute("select sum(effective_cost) from cost_hourly").fetchall()[0][0]
        == con.execute("select sum(effective_cost) from billing_line_items").fetchall()[0][0]
        == Decimal("802.000000")
    )
    con.close()


def test_daily_azure_lines_spread_over_their_day(tmp_path: Path) -> None:
    from tests.helpers.paths import FIXTURES

    landing = tmp_path / "landing"
    landing.mkdir()
    src = FIXTURES / "billing" / "azure" / "EA_AmortizedCost_Small.csv"
    (landing / src.name).write_bytes(src.read_bytes())
    write_config(tmp_path, "sources:\n  - {name: az, kind: azure, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    assert not ingest(con, config).rejected
    build_mart(con, "cost_hourly")
    per_line = con.execute(
        "select count(distinct hour), min(allocation), max(allocation) from cost_hourly "
        "where resource_id is not null group by resource_id, date_trunc('day', hour)"
    ).fetchall()
    assert per_line and all(r[0] == 24 and r[1] == r[2] == "period" for r in per_line)
    total = con.execute("select sum(effective_cost) from cost_hourly").fetchall()[0][0]
    landed = con.execute("select sum(effective_cost) from billing_line_items").fetchall()[0][0]
    assert abs(total - landed) < Decimal("0.0001")
    con.close()


def test_tag_coverage_report_and_check(tmp_path: Path) -> None:
    from pipelines.ingest.billing import checks as billing_checks
    from pipelines.warehouse import sql_text

    landing = tmp_path / "landing"
    landing.mkdir()
    rows = (
        hours("i-nlp", NOV, 10, "3.00", tags={"user:Team": "nlp", "user_project": "llm"})
        + hours("i-anon", NOV, 10, "1.00")
        + hours("i-credit", NOV, 1, "-5.00", kind="Credit", tags={})
    )
    (landing / "bill.csv.gz").write_bytes(csv_bytes(rows))
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    assert not ingest(con, config).rejected
    build_mart(con, "cost_hourly")
    report = con.execute(
        sql_text("reports", "rpt_tag_coverage"),
        {"window_start": datetime(2026, 11, 2), "window_end": datetime(2026, 11, 9)},
    ).fetchall()
    assert report == [
        ("USD", Decimal("40.00"), Decimal("30.00"), Decimal("10.00"), 75.0, 75.0, 0.0,
         "Amazon Elastic Compute Cloud", Decimal("10.00")),
    ]  # fmt: skip
    coverage = billing_checks.tag_coverage(con)
    assert not coverage.passed and coverage.metadata == {"USD": "75.0% of 40.00 has a team"}
    assert billing_checks.reconciliation(con).passed
    # a line removed behind the ledger's back is found
    con.execute("delete from billing_lines where resource_id = 'i-anon' and x_source_row = 12")
    rec = billing_checks.reconciliation(con)
    assert not rec.passed and "the ledger recorded 21 rows" in rec.problems[0]
    con.close()
