"""FOCUS ingestion on the real FOCUS sample, its quirks, idempotency and bad files."""

from __future__ import annotations

import csv
import gzip
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.config import Config
from pipelines.ingest import ingest
from tests.conftest import FOCUS_SAMPLE, copy_into


def _file_totals(path: Path) -> tuple[int, Decimal]:
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return len(rows), sum((Decimal(r["BilledCost"]) for r in rows), Decimal(0))


def test_real_sample_loads_to_the_cent_and_a_second_ingest_adds_nothing(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    copy_into(FOCUS_SAMPLE, project / "landing" / "billing")
    expected_rows, expected_billed = _file_totals(FOCUS_SAMPLE)

    first = ingest(con, config)
    assert [o.status for o in first.outcomes] == ["loaded"]
    n, billed = con.execute("select count(*), sum(billed_cost) from billing_line_items").fetchall()[0]
    assert n == expected_rows == 1000
    assert round(billed, 2) == round(expected_billed, 2)

    second = ingest(con, config)
    assert [o.status for o in second.outcomes] == ["unchanged"]
    assert con.execute("select count(*) from billing_line_items").fetchall()[0][0] == 1000
    ledger = con.execute("select status, rows, billed_cost_sum, billing_period from ingest_files").fetchall()
    # the sample spans two billing periods (one OCI line is in 2024-10), so the file names no single one
    assert ledger == [("loaded", 1000, billed, None)]


def test_sample_quirks_are_normalised(config: Config, project: Path, con: duckdb.DuckDBPyConnection) -> None:
    copy_into(FOCUS_SAMPLE, project / "landing" / "billing")
    ingest(con, config)
    # literal NULL is NULL, not the string
    assert (
        con.execute("select count(*) from billing_line_items where availability_zone = 'NULL'").fetchall()[0][
            0
        ]
        == 0
    )
    # timestamps without zone are read as UTC
    first = con.execute(
        "select min(charge_period_start), max(charge_period_end) from billing_line_items"
    ).fetchall()[0]
    assert str(first[0]).startswith("2024-09-01") and str(first[1]).startswith("2024-10-01")
    # mixed-case enumerations get FOCUS's spelling (OCI writes "Usage-based")
    freqs = {r[0] for r in con.execute("select distinct charge_frequency from billing_line_items").fetchall()}
    assert "Usage-based" not in freqs and "Usage-Based" in freqs
    # " org" (leading space) and "org" normalise to one key; the raw keys are kept
    row = con.execute(
        """select tags['org'], x_tags_raw from billing_line_items
           where x_tags_raw::varchar like '%" org"%' and x_tags_raw::varchar like '%"org"%' limit 1"""
    ).fetchall()[0]
    assert row[0] == "trey" and '" org"' in str(row[1])
    # the non-FOCUS column `Id` is kept in x_extra
    assert (
        con.execute("select count(*) from billing_line_items where x_extra ->> 'Id' is not null").fetchall()[
            0
        ][0]
        == 1000
    )
    assert con.execute("select distinct x_focus_version from billing_line_items").fetchall() == [("1.0",)]


def test_gzip_and_parquet_give_the_same_rows(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    landing = project / "landing" / "billing"
    (landing / "sample.csv.gz").write_bytes(gzip.compress(FOCUS_SAMPLE.read_bytes()))
    pl.read_csv(FOCUS_SAMPLE, infer_schema=False).write_parquet(landing / "sample.parquet")
    report = ingest(con, config)
    assert sorted(o.status for o in report.outcomes) == ["loaded", "loaded"]
    by_file = con.execute(
        "select x_source_file, count(*), sum(billed_cost), sum(effective_cost) from billing_line_items group by 1 order by 1"
    ).fetchall()
    assert [r[1:] for r in by_file][0] == [r[1:] for r in by_file][1]


def test_changed_file_replaces_its_rows(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    path = copy_into(FOCUS_SAMPLE, project / "landing" / "billing")
    ingest(con, config)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:501]), encoding="utf-8")  # header + 500 rows: a restated, shorter file
    report = ingest(con, config)
    assert [o.status for o in report.outcomes] == ["loaded"]
    assert con.execute("select count(*) from billing_line_items").fetchall()[0][0] == 500


BAD_FILES = {
    "truncated.csv.gz": (
        lambda: gzip.compress(FOCUS_SAMPLE.read_bytes())[:20_000],
        "truncated.csv.gz: cannot read",
    ),
    "no_billed_cost.csv": (
        lambda: _drop_column(FOCUS_SAMPLE.read_text(encoding="utf-8"), "BilledCost").encode(),
        "missing required FOCUS column(s) BilledCost",
    ),
    "empty.csv": (lambda: b"", "file is empty"),
    "bad_cost.csv": (
        lambda: FOCUS_SAMPLE.read_text(encoding="utf-8").replace("0.00001605990", "twelve", 1).encode(),
        "bad_cost.csv:3: column 'BilledCost': expected a decimal number, found 'twelve' (data row 2)",
    ),
    "impossible_time.csv": (
        lambda: (
            FOCUS_SAMPLE.read_text(encoding="utf-8")
            .replace("2024-09-18 22:00:00", "2023-02-01T30:00:00Z", 1)
            .encode()
        ),
        "column 'ChargePeriodStart': expected an ISO 8601 date/time (UTC), found '2023-02-01T30:00:00Z' (data row 1)",
    ),
}


def _drop_column(text: str, column: str) -> str:
    rows = list(csv.reader(text.splitlines()))
    i = rows[0].index(column)
    out = [r[:i] + r[i + 1 :] for r in rows]
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(out)
    return buf.getvalue()


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file_is_rejected_with_its_name_and_the_rest_loads(
    name: str, project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    landing = project / "landing" / "billing"
    make, message = BAD_FILES[name]
    (landing / name).write_bytes(make())
    copy_into(FOCUS_SAMPLE, landing, "good.csv")
    report = ingest(con, config)
    by_name = {Path(o.uri).name: o for o in report.outcomes}
    assert by_name["good.csv"].status == "loaded"
    bad = by_name[name]
    assert bad.status == "rejected"
    assert name in (bad.error or "") and message in (bad.error or "")
    assert report.exit_code == 1
    # nothing from the bad file landed; the good file's rows all did
    assert con.execute("select count(*) from billing_line_items").fetchall()[0][0] == 1000
    assert (
        con.execute("select status, error from ingest_files where uri like $u", {"u": f"%{name}"}).fetchall()[
            0
        ][0]
        == "rejected"
    )
