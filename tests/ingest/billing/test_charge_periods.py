"""Charges outside their billing period (docs/billing.md "Charges outside their billing period"): each kind
of charge (landed.py CHARGE_KINDS) loads within its bound in every format and is refused beyond it, naming
the file, line, column and value; files shaped like the FOCUS specification's SaaS examples load with
`date_format` and match their own sums; a bill whose billing periods no calendar allows is refused naming
its dates; and a 5-year fee lands in its billing period in cost_hourly, so its month alone is rebuilt.
"""

from __future__ import annotations

import csv
import gzip
import io
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.ingest.billing.landed import bounds_table
from pipelines.transform.build import build_mart_with_rollup
from pipelines.warehouse import utcnow
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.ingest_run import ingest_sources, only_outcome
from tests.helpers.paths import REPO

FIXTURES = Path(__file__).parents[2] / "fixtures" / "billing" / "charge_periods"
FOCUS = FIXTURES / "focus_charge_kinds.csv"
NATIVE = FIXTURES / "native"
SAAS = FIXTURES / "saas"


def _land(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / "landing" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())


def _replace(text: str, line_id: str, old: str, new: str) -> tuple[str, int]:
    """The text with `old` replaced by `new` on the one line holding `line_id`, and that line's number."""
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line_id in line)
    assert old in lines[at], (old, lines[at])
    lines[at] = lines[at].replace(old, new)
    return "".join(lines), at + 1


def _sum(text: str, column: str) -> Decimal:
    return sum((Decimal(r[column]) for r in csv.DictReader(io.StringIO(text))), Decimal(0))


def test_the_docs_show_the_one_table_of_bounds() -> None:
    """docs/billing.md's bounds table is CHARGE_KINDS rendered (bounds_table), not a second copy."""
    assert bounds_table() in (REPO / "docs" / "billing.md").read_text()


# -- each kind of charge within its bound loads, in each format ------------------------------------------

# (fixture, name in the landing folder, source line, the file's billed cost column)
FORMATS = {
    "focus": (FOCUS, "charges.csv", "{name: f, kind: focus, uri: landing/}", "BilledCost"),
    "aws_cur": (
        NATIVE / "aws_cur_legacy.csv",
        "cur.csv",
        "{name: f, kind: aws_cur, uri: landing/}",
        "lineItem/UnblendedCost",
    ),
    "aws_cur2": (
        NATIVE / "aws_cur2.csv",
        "cur2-00001.csv.gz",
        "{name: f, kind: aws_cur2, uri: landing/}",
        "line_item_unblended_cost",
    ),
    "azure": (
        NATIVE / "azure_ea_actual.csv",
        "part_0_0001.csv",
        "{name: f, kind: azure, uri: landing/, options: {dataset: actual}}",
        "CostInBillingCurrency",
    ),
    "gcp": (NATIVE / "gcp_billing_export.csv", "billing.csv", "{name: f, kind: gcp, uri: landing/}", "cost"),
}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_kind_of_charge_within_its_bound_loads(tmp_path: Path, fmt: str) -> None:
    """Corrections, credits, refunds and adjustments for past months, taxes, purchases for terms of years,
    end-of-contract and annual fees, next to ordinary usage: the file loads and reconciles."""
    fixture, name, source, billed = FORMATS[fmt]
    text = fixture.read_text()
    _land(tmp_path, name, text)
    report, con = ingest_sources(tmp_path, f"  - {source}\n")
    assert only_outcome(report) == ("loaded", ""), report.summary()
    lines = len(list(csv.DictReader(io.StringIO(text))))
    assert con.execute("select count(*), sum(billed_cost) from billing_line_items").fetchall() == [
        (lines, _sum(text, billed))
    ]
    con.close()


# (format, line id, old text, new text, data row, kind, column, its text): one line moved beyond its bound
REFUSED = [
    ("focus", "late-arriving usage", "2025-05-01T00:00:00Z,2025-05-01T01", "2023-05-01T00:00:00Z,2023-05-01T01",
     3, "correction", "ChargePeriodStart", "2023-05-01T00:00:00Z"),
    ("focus", "June 2025", "2025-06-01T00:00:00Z", "2023-06-01T00:00:00Z", 4, "credit", "ChargePeriodStart",
     "2023-06-01T00:00:00Z"),
    ("focus", "5-year commitment", "2031-03-15", "2036-03-15", 6, "purchase", "ChargePeriodEnd",
     "2036-03-15T00:00:00Z"),
    ("focus", "End of contract", "2025-04-01T00:00:00Z", "2020-04-01T00:00:00Z", 9, "one-time fee",
     "ChargePeriodStart", "2020-04-01T00:00:00Z"),
    ("focus", "GPU instance hour", "2026-03-02T10:00:00Z,2026-03-02T11", "2025-12-02T10:00:00Z,2025-12-02T11",
     1, "usage", "ChargePeriodStart", "2025-12-02T10:00:00Z"),
    ("aws_cur", "li-credit", "2025-08-01T00:00:00Z", "2023-08-01T00:00:00Z", 7, "credit",
     "lineItem/UsageStartDate", "2023-08-01T00:00:00Z"),
    ("aws_cur", "li-ri-upfront", "2029-03-10", "2032-03-10", 3, "purchase", "lineItem/UsageEndDate",
     "2032-03-10T00:00:00Z"),
    ("aws_cur2", "li-refund", "2025-11-01T00:00:00Z", "2023-11-01T00:00:00Z", 8, "adjustment",
     "line_item_usage_start_date", "2023-11-01T00:00:00Z"),
    ("azure", "10/12/2025", "10/12/2025", "10/12/2023", 5, "credit", "Date", "10/12/2023"),
    ("azure", "03/03/2026", "03/03/2026,", "12/15/2025,", 2, "usage", "Date", "12/15/2025"),
    ("gcp", "adjustment", "2025-08-01 07:00:00 UTC", "2023-08-01 07:00:00 UTC", 3, "adjustment",
     "usage_start_time", "2023-08-01 07:00:00 UTC"),
]  # fmt: skip


@pytest.mark.parametrize(("fmt", "line_id", "old", "new", "row", "kind", "column", "raw"), REFUSED)
def test_a_line_beyond_its_kind_s_bound_is_refused_naming_file_line_column_and_value(
    tmp_path: Path, fmt: str, line_id: str, old: str, new: str, row: int, kind: str, column: str, raw: str
) -> None:
    fixture, name, source, _ = FORMATS[fmt]
    text, line = _replace(fixture.read_text(), line_id, old, new)
    _land(tmp_path, name, text)
    report, con = ingest_sources(tmp_path, f"  - {source}\n")
    status, error = only_outcome(report)
    assert status == "rejected"
    assert (
        f"{name}:{line}: 1 line(s) charged far outside their billing period (data row {row}: {kind}, "
        in error
    )
    assert f", column {column!r} {raw!r}): " in error, error
    assert "so a date was written or read wrongly" in error
    assert con.execute("select count(*) from billing_line_items").fetchall() == [(0,)]
    con.close()


def test_a_refusal_names_the_kind_s_bound(tmp_path: Path) -> None:
    text, _ = _replace(FOCUS.read_text(), "June 2025", "2025-06-01T00:00:00Z", "2023-06-01T00:00:00Z")
    _land(tmp_path, "charges.csv", text)
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: landing/}\n")
    assert only_outcome(report)[1].endswith(
        "charges.csv:5: 1 line(s) charged far outside their billing period (data row 4: credit, billing period "
        "2026-03, charge period 2023-06-01 00:00:00 to 2025-07-01 00:00:00, column 'ChargePeriodStart' "
        "'2023-06-01T00:00:00Z'): a "
        "line of kind credit may start up to 24 period(s) before its billing period and end up to 12 after "
        "it, so a date was written or read wrongly"
    ), report.summary()
    con.close()


# -- shaped like the FOCUS specification's SaaS examples ---------------------------------------------------


def _saas_source() -> str:
    return "  - {name: saas, kind: focus, uri: landing/, options: {date_format: '%m/%d/%y'}}\n"


def test_saas_shaped_files_load_with_date_format_and_match_their_own_sums(tmp_path: Path) -> None:
    """Upfront spend agreements, monthly and end-of-contract unused fees, licenses billed at the term's end,
    token purchases and overages, credits for past outages and for the year ahead: every file loads, and
    each file's billed and effective sums are its own."""
    files = sorted(SAAS.glob("*.csv"))
    assert len(files) == 5
    for f in files:
        _land(tmp_path, f.name, f.read_text())
    report, con = ingest_sources(tmp_path, _saas_source())
    assert [o.status for o in report.outcomes] == ["loaded"] * 5, report.summary()
    landed = dict(
        (Path(uri).name, (billed, effective))
        for uri, billed, effective in con.execute(
            "select x_source_file, sum(billed_cost), sum(effective_cost) from billing_line_items group by 1"
        ).fetchall()
    )
    assert landed == {
        f.name: (_sum(f.read_text(), "BilledCost"), _sum(f.read_text(), "EffectiveCost")) for f in files
    }
    # the end-of-contract fee is billed in March 2026 for the whole term, and loaded as the file says
    assert con.execute(
        "select x_billing_period, charge_period_start, charge_period_end from billing_line_items "
        "where charge_description = 'End of contract unused fee'"
    ).fetchall() == [("2026-03", datetime(2025, 4, 1), datetime(2026, 4, 1))]
    con.close()


def test_a_usage_line_dated_1970_among_them_is_still_refused(tmp_path: Path) -> None:
    text = (SAAS / "spend_agreement.csv").read_text()
    usage = next(line for line in text.splitlines() if "Monthly usage charge" in line)
    text += usage.replace("Usage-Based,5/1/25,4/1/25", "Usage-Based,1/2/70,1/1/70") + "\n"
    assert ",1/2/70,1/1/70," in text.splitlines()[-1]
    _land(tmp_path, "spend_agreement.csv", text)
    _land(tmp_path, "credits.csv", (SAAS / "credits.csv").read_text())
    report, con = ingest_sources(tmp_path, _saas_source())
    outcomes = {Path(o.uri).name: (o.status, o.error or "") for o in report.outcomes}
    assert outcomes["credits.csv"] == ("loaded", "")
    status, error = outcomes["spend_agreement.csv"]
    assert status == "rejected"
    assert error.endswith(
        "spend_agreement.csv:8: 1 line(s) charged far outside their billing period (data row 7: usage, billing "
        "period 2025-04, charge period 1970-01-01 00:00:00 to 1970-01-02 00:00:00, column 'ChargePeriodStart' "
        "'1/1/70'): "
        "more than 1 period(s) away, so a date was written or read wrongly (options.max_period_skew allows "
        "more for real late charges)"
    ), error
    con.close()


def test_a_file_of_billing_periods_a_year_apart_loads_when_its_lone_period_holds_a_term_fee(
    tmp_path: Path,
) -> None:
    """A file whose lines run April to June 2025 and then March 2026 (an end-of-contract fee) is not a file
    with a wrongly dated line; the same gap before a usage line still is."""
    text = (SAAS / "spend_agreement.csv").read_text()
    kept = [line for line in text.splitlines() if "Monthly unused fee" not in line]
    _land(tmp_path / "a", "fee.csv", "\n".join(kept) + "\n")
    report, con = ingest_sources(tmp_path / "a", _saas_source())
    assert only_outcome(report) == ("loaded", ""), report.summary()
    con.close()
    usage = next(line for line in kept if "Monthly usage charge" in line)
    moved = usage.replace("5/1/25,4/1/25", "4/1/26,3/1/26")  # billed and charged in March 2026
    _land(tmp_path / "b", "fee.csv", "\n".join([kept[0], moved, *kept[1:]]) + "\n")
    report, con = ingest_sources(tmp_path / "b", _saas_source())
    status, error = only_outcome(report)
    assert status == "rejected"
    assert "while the file's other lines are in 2025-04 to 2025-05" in error, error
    con.close()


# -- a plausible calendar, anchored outside the file -------------------------------------------------------


def _focus_month(month: str) -> str:
    """A FOCUS file of one usage hour in `month` (YYYY-MM), billed in it."""
    y, m = int(month[:4]), int(month[5:7])
    end = f"{y + m // 12:04d}-{m % 12 + 1:02d}-01T00:00:00Z"
    return (
        "BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,"
        "ChargePeriodEnd,ChargeCategory,ResourceId\n"
        f"2.00,2.00,USD,{month}-01T00:00:00Z,{end},{month}-02T10:00:00Z,{month}-02T11:00:00Z,Usage,i-1\n"
        f"3.00,3.00,USD,{month}-01T00:00:00Z,{end},{month}-02T11:00:00Z,{month}-02T12:00:00Z,Usage,i-1\n"
    )


def _months_ahead(n: int) -> str:
    now = utcnow()
    k = now.year * 12 + now.month - 1 + n
    return f"{k // 12:04d}-{k % 12 + 1:02d}"


@pytest.mark.parametrize(
    ("month", "limit"),
    [
        ("2999-11", None),
        ("1900-11", "before 2006-01, the first public cloud bill"),
        ("2005-12", "before 2006-01, the first public cloud bill"),
    ],
)
def test_a_bill_dated_wrongly_throughout_is_refused_naming_its_dates(
    tmp_path: Path, month: str, limit: str | None
) -> None:
    """Every line of the file agrees with every other (the billing period came from the same wrong dates):
    only the wall clock outside the file shows them wrong."""
    _land(tmp_path, "bill.csv", _focus_month(month))
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: landing/}\n")
    status, error = only_outcome(report)
    assert status == "rejected"
    limit = limit or f"after {_months_ahead(1)}, the month after today's ({utcnow():%Y-%m-%d} UTC)"
    assert error.endswith(
        f"bill.csv:2: 2 line(s) billed in implausible periods (data row 1: billing period {month}, charge "
        f"period {month}-02 10:00:00 to {month}-02 11:00:00): billing period(s) {month} {limit}; the file's "
        f"billing periods run {month} to {month}, so its dates were written or read wrongly (check the "
        "export, or options.date_format)"
    ), error
    assert con.execute("select count(*) from billing_line_items").fetchall() == [(0,)]
    con.close()


def test_next_month_s_bill_loads_and_the_month_after_is_refused(tmp_path: Path) -> None:
    _land(tmp_path, "next.csv", _focus_month(_months_ahead(1)))
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: landing/}\n")
    assert only_outcome(report) == ("loaded", ""), report.summary()
    con.close()
    (tmp_path / "landing" / "next.csv").unlink()
    _land(tmp_path, "after.csv", _focus_month(_months_ahead(2)))
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: landing/}\n")
    after = next(o for o in report.outcomes if o.uri.endswith("after.csv"))
    assert after.status == "rejected" and f"billing period(s) {_months_ahead(2)} after" in (after.error or "")
    con.close()


# -- where a term's fee lands in cost_hourly ---------------------------------------------------------------


def _fee_line() -> str:
    return next(line for line in FOCUS.read_text().splitlines() if "5-year commitment" in line)


def test_a_five_year_fee_lands_in_its_billing_period_and_rebuilds_that_month_alone(tmp_path: Path) -> None:
    """A 5-year commitment bought in March is spread over March's hours (cost_hourly spreads a line longer
    than 31 days over its billing period): loading it rebuilds March alone, not the 60 months of its term,
    and its cost reconciles to the line's. Shorter lines charged in other months (a correction, a credit, an
    adjustment) land in their own months."""
    write_config(tmp_path, "sources:\n  - {name: f, kind: focus, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)

    def build() -> list[date]:
        report = ingest(con, config)
        assert not report.rejected, report.summary()
        _, stats = build_mart_with_rollup(con, "cost_hourly", config)
        return next(s for s in stats if s.table == "cost_hourly").days_rebuilt

    # the fixture's own header throughout, so that no file adds columns (which rebuilds every month)
    header, *lines = FOCUS.read_text().splitlines()
    usage = [line for line in lines if "GPU instance hour" in line]
    feb = [u.replace("2026-04-01", "2026-03-01").replace("2026-03-", "2026-02-") for u in usage]
    _land(tmp_path, "feb.csv", "\n".join([header, *feb]) + "\n")
    assert build() == [date(2026, 2, 1)]
    march = "\n".join([header, *usage, _fee_line()]) + "\n"
    _land(tmp_path, "mar.csv", march)
    assert build() == [date(2026, 3, 1)]
    assert con.execute(
        "select min(hour), max(hour), count(*), sum(billed_cost), sum(effective_cost) from cost_hourly "
        "where resource_id = 'commit-5y'"
    ).fetchall() == [(datetime(2026, 3, 1), datetime(2026, 3, 31, 23), 744, Decimal("60000"), Decimal("0"))]
    # the month delivered again (month to date, one more hour): March alone again
    _land(tmp_path, "mar.csv", march.replace("T10:00:00Z,2026-03-02T11", "T09:00:00Z,2026-03-02T11"))
    assert build() == [date(2026, 3, 1)]

    # the fixture of every kind as March's file: its term fees land in March, its shorter lines in theirs
    _land(tmp_path, "mar.csv", FOCUS.read_text())
    assert build() == [date(2024, 7, 1), date(2025, 5, 1), date(2025, 6, 1), date(2026, 3, 1)]
    billed = _sum(FOCUS.read_text(), "BilledCost") + Decimal(3)
    effective = _sum(FOCUS.read_text(), "EffectiveCost") + Decimal(3)
    assert con.execute(
        "select (select sum(billed_cost) from billing_line_items), sum(billed_cost), "
        "(select sum(effective_cost) from billing_line_items), sum(effective_cost) from cost_hourly"
    ).fetchall() == [(billed, billed, effective, effective)]
    assert con.execute(
        "select charge_category, min(hour), max(hour) from cost_hourly where hour >= '2026-03-01' "
        "and charge_category in ('Purchase', 'Tax') group by 1 order by 1"
    ).fetchall() == [
        ("Purchase", datetime(2026, 3, 1), datetime(2026, 3, 31, 23)),
        ("Tax", datetime(2026, 3, 1), datetime(2026, 3, 31, 23)),
    ]
    con.close()
