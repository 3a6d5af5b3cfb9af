"""cost_hourly kept up to date by month (pipelines/transform/months.py): a delivery rebuilds the months its files
reach and no other, and the table always equals the whole bill spread in one statement, whatever crosses a
month's edge (a line spanning two months, a resource whose hours in the next month's file decide how an
earlier line is spread, a line of no length on the edge, a quarter-hour line)."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb

from pipelines.config import Config, load_config
from pipelines.ingest import ingest
from pipelines.transform.build import build_mart_with_rollup
from pipelines.transform.days import DayStats
from pipelines.warehouse import sql_text
from tests.helpers.billing_exports import csv_bytes, hours, line
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

SEP, OCT, NOV = date(2026, 9, 1), date(2026, 10, 1), date(2026, 11, 1)
ISO = "%Y-%m-%dT%H:%M:%SZ"
WIDE = {
    "month_from": datetime(1, 1, 1),
    "month_to": datetime(9999, 1, 1),
    "reach_from": datetime(1, 1, 1),
    "reach_to": datetime(9999, 1, 1),
    "modelled": True,
}


def _spanning(resource: str, start: datetime, end: datetime, cost: str, kind: str = "Fee") -> dict[str, str]:
    row = line(resource, start, cost, kind=kind, instance_type="")
    row["line_item_usage_start_date"] = start.strftime(ISO)
    row["line_item_usage_end_date"] = end.strftime(ISO)
    row["identity_line_item_id"] = f"{resource}-{start:%Y%m%d%H%M}-{end:%Y%m%d%H%M}"
    return row


def _deliver(tmp_path: Path, name: str, rows: list[dict[str, str]]) -> None:
    (tmp_path / "landing" / name).write_bytes(csv_bytes(rows))


def _september() -> list[dict[str, str]]:
    return hours("i-a", datetime(2026, 9, 29), 48, "1.00") + [
        _spanning("i-a", datetime(2026, 9, 1), datetime(2026, 10, 1), "30.00")
    ]


def _october() -> list[dict[str, str]]:
    return (
        hours("i-a", datetime(2026, 10, 1), 24, "1.00")
        + hours("i-b", datetime(2026, 10, 31, 20), 4, "2.00")
        # spans the edge, nothing else shows the volume: spread over every hour of its period
        + [_spanning("vol-x", datetime(2026, 10, 15), datetime(2026, 11, 15), "744.00")]
        # spans the edge over i-b's hours on the bill, some of which November's file holds
        + [_spanning("i-b", datetime(2026, 10, 31), datetime(2026, 11, 2), "48.00")]
    )


def _november(hours_of_b: int = 5, cost: str = "2.00") -> list[dict[str, str]]:
    return hours("i-b", datetime(2026, 11, 1), hours_of_b, cost) + [
        _spanning("i-c", datetime(2026, 11, 3, 10, 30), datetime(2026, 11, 3, 10, 45), "1.00", kind="Usage"),
        _spanning("i-d", datetime(2026, 11, 1), datetime(2026, 11, 1), "2.00", kind="Usage"),
    ]


def _project(tmp_path: Path) -> Config:
    (tmp_path / "landing").mkdir(exist_ok=True)
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    return load_config(tmp_path / "wastewatch.yaml")


def _build(con: duckdb.DuckDBPyConnection, config: Config) -> DayStats:
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    _, stats = build_mart_with_rollup(con, "cost_hourly", config)
    return next(s for s in stats if s.table == "cost_hourly")


def _assert_whole_bill(con: duckdb.DuckDBPyConnection) -> None:
    # the mart's own SQL over every line and hour in one statement: what a full rebuild would hold
    whole = con.execute(
        f"select * from (\n{sql_text('marts', 'cost_hourly')}\n) order by all", WIDE
    ).fetchall()
    kept = con.execute("select * from cost_hourly order by all").fetchall()
    assert kept == whole
    billed, spread = con.execute(
        "select (select sum(effective_cost) from billing_line_items), sum(effective_cost) from cost_hourly"
    ).fetchall()[0]
    assert billed == spread


def test_a_delivery_rebuilds_the_months_its_files_reach_and_the_table_equals_the_whole_bill(
    tmp_path: Path,
) -> None:
    config = _project(tmp_path)
    _deliver(tmp_path, "sep.csv.gz", _september())
    _deliver(tmp_path, "oct.csv.gz", _october())
    _deliver(tmp_path, "nov.csv.gz", _november())
    con = new_warehouse(config.warehouse_path)
    first = _build(con, config)
    assert first.full and first.unit == "month" and first.days_rebuilt == [SEP, OCT, NOV]
    _assert_whole_bill(con)
    # the fee across the edge is spread over i-b's 4 hours in October and 5 in November: 48 / 9 each
    fee = con.execute(
        "select hour::date >= '2026-11-01', count(*), sum(effective_cost) from cost_hourly "
        "where resource_id = 'i-b' and charge_category = 'Purchase' group by 1 order by 1"
    ).fetchall()
    assert [(r[0], r[1]) for r in fee] == [(False, 4), (True, 5)]

    assert _build(con, config).days_rebuilt == []  # nothing new: every month kept

    # November delivered again (month to date): i-b ran 10 hours, which moves October's share of the fee
    _deliver(tmp_path, "nov.csv.gz", _november(hours_of_b=10, cost="3.00"))
    again = _build(con, config)
    assert not again.full and again.days_rebuilt == [OCT, NOV] and again.days_removed == []
    _assert_whole_bill(con)
    assert (
        con.execute(
            "select count(*) from cost_hourly where resource_id = 'i-b' and charge_category = 'Purchase'"
        ).fetchall()[0][0]
        == 4 + 10
    )

    # September's file removed: its month goes, the others stay as they were
    (tmp_path / "landing" / "sep.csv.gz").unlink()
    gone = _build(con, config)
    assert gone.days_rebuilt == [] and gone.days_removed == [SEP]
    _assert_whole_bill(con)
    assert con.execute("select min(hour) from cost_hourly").fetchall()[0][0] == datetime(2026, 10, 1)
    con.close()


def test_the_tags_config_a_line_carries_rebuilds_its_months(tmp_path: Path) -> None:
    config = _project(tmp_path)
    tagged = [dict(r, resource_tags='{"user_squad": "vision"}') for r in _october()]
    _deliver(tmp_path, "oct.csv.gz", tagged)
    _deliver(tmp_path, "sep.csv.gz", _september())
    con = new_warehouse(config.warehouse_path)
    _build(con, config)
    assert con.execute("select count(*) from cost_hourly where team is not null").fetchall()[0][0] == 0

    # the team tag is named in the config: the sets' canonical team changes, and with it October and what
    # October's files reach (November), not September
    write_config(
        tmp_path,
        "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\ntags:\n  team: [user_squad]\n",
    )
    config = load_config(tmp_path / "wastewatch.yaml")
    stats = _build(con, config)
    assert stats.days_rebuilt == [OCT, NOV]
    _assert_whole_bill(con)
    assert (
        con.execute("select count(distinct team) from cost_hourly where team = 'vision'").fetchall()[0][0]
        == 1
    )
    con.close()


def test_a_forced_rebuild_and_a_table_of_other_columns_build_every_month(tmp_path: Path) -> None:
    config = _project(tmp_path)
    _deliver(tmp_path, "oct.csv.gz", _october())
    con = new_warehouse(config.warehouse_path)
    _build(con, config)
    con.execute("insert into cost_hourly (resource_id, hour, effective_cost, pricing_basis) "
                "values ('planted', '2026-10-05', 1000, 'bill')")  # fmt: skip
    con.execute("delete from int_mart_inputs where mart = 'cost_hourly'")  # how a user forces a rebuild
    assert _build(con, config).full
    _assert_whole_bill(con)

    # a table an earlier wastewatch built in full: a fingerprint of the whole, no months, no modelled part
    con.execute("insert into cost_hourly (resource_id, hour, effective_cost, pricing_basis) "
                "values ('stale', '2026-08-05', 1000, 'bill')")  # fmt: skip
    con.execute("delete from int_incremental_days where object = 'cost_hourly'")
    con.execute("delete from int_mart_inputs where mart = 'cost_hourly/modelled'")
    assert _build(con, config).full
    _assert_whole_bill(con)

    con.execute("alter table cost_hourly drop column pricing_inputs")
    stats = _build(con, config)
    assert stats.full and stats.days_rebuilt == [OCT, NOV]
    _assert_whole_bill(con)
    con.close()


def test_a_line_starting_after_a_month_s_files_end_but_in_their_last_hour_is_reached(tmp_path: Path) -> None:
    # a daily line ending at 00:15 on November 1st is spread over the hours its resource shows on the bill:
    # a half-hour line of 00:30 (another file, wholly in November) shows it in the hour 00:00, so October's
    # share of the daily line is nothing, though no October file reaches 00:30
    config = _project(tmp_path)
    daily = _spanning("i-e", datetime(2026, 10, 31, 0, 15), datetime(2026, 11, 1, 0, 15), "24.00")
    late = _spanning("i-e", datetime(2026, 11, 1, 0, 30), datetime(2026, 11, 1, 1), "1.00", kind="Usage")
    _deliver(tmp_path, "a.csv.gz", [daily])
    con = new_warehouse(config.warehouse_path)
    _build(con, config)
    assert con.execute("select count(*) from cost_hourly where hour < '2026-11-01'").fetchall()[0][0] == 24
    _deliver(tmp_path, "b.csv.gz", [late])
    assert _build(con, config).days_rebuilt == [OCT, NOV]
    _assert_whole_bill(con)
    assert con.execute("select count(*) from cost_hourly where hour < '2026-11-01'").fetchall()[0][0] == 0
    con.close()


def test_a_commitment_bought_for_a_year_lands_in_its_billing_period_and_rebuilds_that_month_alone(
    tmp_path: Path,
) -> None:
    # a year's commitment (longer than 31 days) is spread over its billing period, September, not over its
    # term: no month after September is reached by it, November restated rebuilds November alone, and hours
    # of its resource in October leave September as it was (sql/macros/macro_spread_period.sql)
    config = _project(tmp_path)
    year = _spanning("commit-1", datetime(2026, 9, 1), datetime(2027, 9, 1), "8760.00", kind="Fee")
    _deliver(tmp_path, "sep.csv.gz", _september() + [year])
    _deliver(tmp_path, "oct.csv.gz", hours("i-a", datetime(2026, 10, 1), 24, "1.00"))
    _deliver(tmp_path, "nov.csv.gz", hours("i-a", datetime(2026, 11, 1), 24, "1.00"))
    con = new_warehouse(config.warehouse_path)
    first = _build(con, config)
    assert first.days_rebuilt == [SEP, OCT, NOV]
    _assert_whole_bill(con)
    assert con.execute(
        "select min(hour), max(hour), count(*), sum(billed_cost) from cost_hourly where resource_id = 'commit-1'"
    ).fetchall() == [(datetime(2026, 9, 1), datetime(2026, 9, 30, 23), 720, Decimal("8760"))]

    _deliver(tmp_path, "nov.csv.gz", hours("i-a", datetime(2026, 11, 1), 48, "1.00"))
    assert _build(con, config).days_rebuilt == [NOV]
    _assert_whole_bill(con)

    _deliver(tmp_path, "used.csv.gz", hours("commit-1", datetime(2026, 10, 10), 2, "0.00"))
    assert _build(con, config).days_rebuilt == [OCT]
    _assert_whole_bill(con)
    # September's hours of the year are as they were: its resource showed in October only
    assert con.execute(
        "select allocation, count(*) from cost_hourly where resource_id = 'commit-1' and hour < '2026-10-01' "
        "group by 1"
    ).fetchall() == [("period", 720)]
    con.close()
