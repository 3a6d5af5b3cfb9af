"""Files as a new user hands them in (issue 40: no legitimate line refused, every refusal names what it saw
and the remedy): an Azure amortized export holding a reservation purchase, a Parquet file of NUL bytes or
cut short, dates in another form without `options.date_format`, and Google's legacy JSON export in a folder
of a kind that reads no JSON. Each broken file is built here from a fixture (tests/fixtures/SOURCES.md).
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from tests.helpers.ingest_run import ingest_sources
from tests.helpers.paths import FIXTURES, FOCUS_SAMPLE

AMORTIZED = FIXTURES / "billing" / "azure" / "EA_AmortizedCost_Small.csv"
LEGACY_JSON = FIXTURES / "billing" / "gcp-legacy" / "legacy_file_export.json"


def _outcomes(report: object) -> dict[str, tuple[str, str]]:
    return {Path(o.uri).name: (o.status, o.error or "") for o in report.outcomes}  # type: ignore[attr-defined]


# -- Azure: an amortized export with a reservation purchase ------------------------------------------------


def _amortized_with(
    tmp_path: Path, folder: str, extra: list[dict[str, str]]
) -> tuple[Path, list[dict[str, str]]]:
    """The EA amortized fixture (its first row is reservation-covered usage at the amortised rate) with
    `extra` rows (each a change of its first row) appended, as `folder`/part_0_0001.csv."""
    with AMORTIZED.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    rows += [{**rows[0], **e} for e in extra]
    out = io.StringIO()
    writer = csv.DictWriter(out, list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path = tmp_path / folder / "part_0_0001.csv"
    path.parent.mkdir(parents=True)
    path.write_text(out.getvalue(), encoding="utf-8-sig")
    return path, rows


RESERVATION = {"PricingModel": "Reservation", "ReservationName": "RI_3Y", "Term": "36", "Quantity": "1"}
NO_RESOURCE = {"ResourceId": "", "ResourceName": "", "Date": "09/05/2023"}


def test_an_amortized_export_holding_a_reservation_purchase_is_refused_naming_both_kinds_of_rows(
    tmp_path: Path,
) -> None:
    """Only the actual export bills a commitment's purchase; the amortized one spreads it over the usage
    it covered. A file with both kinds of rows would count the commitment twice (was: loaded, the
    purchase's cost as effective cost on top of its spread)."""
    purchase = {
        **RESERVATION,
        **NO_RESOURCE,
        "ChargeType": "Purchase",
        "Frequency": "OneTime",
        "Cost": "26280",
    }
    _amortized_with(tmp_path, "az", [purchase])
    report, con = ingest_sources(
        tmp_path, "  - {name: az, kind: azure, uri: az/, options: {dataset: amortized}}\n"
    )
    assert _outcomes(report) == {
        "part_0_0001.csv": (
            "rejected",
            f"{tmp_path / 'az' / 'part_0_0001.csv'}:30: rows of both Azure exports: 1 reservation / savings plan "
            "purchase row(s) with a cost, which only the actual export has (first: data row 29), and 2 "
            "unused-commitment or amortised commitment-usage row(s), which only the amortized export has "
            "(first: data row 1); the two describe the same spend, so this file would count a commitment "
            "twice: export the amortized dataset alone (options.dataset: amortized)",
        )
    }
    assert con.execute("select count(*) from billing_line_items").fetchall() == [(0,)]
    con.close()


def test_an_amortized_export_s_own_purchases_and_unused_reservation_load_and_reconcile(
    tmp_path: Path,
) -> None:
    """A marketplace purchase (no commitment), a reservation purchase listed at no cost and an unused
    reservation's row are the amortized export's own: the file loads, billed and effective cost as it says."""
    extra = [
        {**NO_RESOURCE, "ChargeType": "Purchase", "Frequency": "OneTime", "PricingModel": "OnDemand",
         "Cost": "1200", "ReservationId": "", "ReservationName": "", "benefitId": "", "PublisherType": "Marketplace"},
        {**RESERVATION, **NO_RESOURCE, "ChargeType": "Purchase", "Frequency": "OneTime", "Cost": "0"},
        {**RESERVATION, "ChargeType": "UnusedReservation", "Cost": "3.5", "Date": "09/03/2023"},
    ]  # fmt: skip
    _, rows = _amortized_with(tmp_path, "az", extra)
    report, con = ingest_sources(
        tmp_path, "  - {name: az, kind: azure, uri: az/, options: {dataset: amortized}}\n"
    )
    assert _outcomes(report) == {"part_0_0001.csv": ("loaded", "")}
    # the file's own sums, each cost read as the warehouse stores money (12 decimals)
    effective, covered = duckdb.connect().execute(
        "select sum(Cost::decimal(38, 12)), sum(Cost::decimal(38, 12)) filter (where PricingModel in "
        "('Reservation', 'SavingsPlan')) from read_csv($p, all_varchar = true)",
        {"p": str(tmp_path / "az" / "part_0_0001.csv")},
    ).fetchone() or (None, None)
    assert con.execute(
        "select count(*), sum(effective_cost), sum(billed_cost) from billing_line_items"
    ).fetchall() == [(len(rows), effective, effective - covered)]
    assert con.execute(
        "select charge_category, charge_frequency, billed_cost, effective_cost from billing_line_items "
        "where charge_category = 'Purchase' order by billed_cost"
    ).fetchall() == [("Purchase", "One-Time", Decimal(0), Decimal(0)), ("Purchase", "One-Time", 1200, 1200)]
    con.close()


# -- Parquet that is not a whole Parquet file ------------------------------------------------------------


def test_a_parquet_file_of_nul_bytes_cut_short_or_holding_text_says_so_and_the_good_one_loads(
    tmp_path: Path,
) -> None:
    """DuckDB says "No magic bytes found" for each, naming no remedy; a good file beside them loads."""
    good = tmp_path / "good.parquet"
    duckdb.connect().execute(
        "copy (select * from read_csv($p, all_varchar = true)) to '" + str(good) + "' (format parquet)",
        {"p": str(FOCUS_SAMPLE)},
    )
    folder = tmp_path / "f"
    folder.mkdir()
    data = good.read_bytes()
    (folder / "good.parquet").write_bytes(data)
    (folder / "zeros.parquet").write_bytes(b"\0" * 100_000)
    (folder / "cut.parquet").write_bytes(data[: len(data) // 2])
    (folder / "text.parquet").write_bytes(FOCUS_SAMPLE.read_bytes())
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: f/}\n")
    copy = "copy it again from its source"
    assert _outcomes(report) == {
        "good.parquet": ("loaded", ""),
        "zeros.parquet": (
            "rejected",
            f"{folder / 'zeros.parquet'}: not a Parquet file: the first 65,536 bytes are NUL (0x00), as an "
            f"interrupted copy or a full disk leaves a file; {copy}",
        ),
        "cut.parquet": (
            "rejected",
            f"{folder / 'cut.parquet'}: not a whole Parquet file: its {len(data) // 2:,} bytes do not end with "
            f"Parquet's footer (PAR1), as a cut copy or a file still being written leaves it; {copy}",
        ),
        "text.parquet": (
            "rejected",
            f"{folder / 'text.parquet'}: not a Parquet file (it does not start with PAR1): text (a CSV named "
            ".parquet?); name it after what it holds",
        ),
    }
    assert con.execute("select count(*) from billing_line_items").fetchall() == [(1000,)]
    assert report.exit_code == 1
    con.close()


# -- dates in another form: the refusal names options.date_format -----------------------------------------

REMEDY = "for dates written in another form, set options.date_format (strptime: '%m/%d/%y', '%d.%m.%Y %H:%M')"


def test_a_date_in_another_form_names_options_date_format_and_an_impossible_one_does_not(
    tmp_path: Path,
) -> None:
    """A SaaS bill written `4/1/2025` (as the FOCUS spec's SaaS examples are) is refused naming the line,
    column and value, and now the remedy; an impossible time in the right form is a damaged value, and its
    refusal does not send the user to date_format."""
    text = FOCUS_SAMPLE.read_text(encoding="utf-8")
    other_form = text.replace("2024-09-18 22:00:00", "9/18/2024 22:00", 1)
    impossible = text.replace("2024-09-18 22:00:00", "2024-09-18T30:00:00Z", 1)
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "mdy.csv").write_text(other_form, encoding="utf-8")
    (tmp_path / "f" / "bad.csv").write_text(impossible, encoding="utf-8")
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: f/}\n")
    con.close()
    got = _outcomes(report)
    status, error = got["mdy.csv"]
    assert status == "rejected"
    assert error.startswith(
        f"{tmp_path / 'f' / 'mdy.csv'}:2: column 'ChargePeriodStart': expected an ISO 8601"
    )
    assert error.endswith(f"found '9/18/2024 22:00' (data row 1); {REMEDY}"), error
    status, error = got["bad.csv"]
    assert status == "rejected"
    assert error.endswith("found '2024-09-18T30:00:00Z' (data row 1)"), error


# -- Google's legacy JSON export where no JSON is read -------------------------------------------------------


def test_googles_legacy_json_export_in_a_focus_folder_is_listed_as_such(tmp_path: Path) -> None:
    """kind focus reads no .json (a JSON file in its folder is a side file, never a word); Google's legacy
    export there is listed as skipped with what to export instead, not silently passed over."""
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "billing-2018-03-01.json").write_bytes(LEGACY_JSON.read_bytes())
    (tmp_path / "f" / "manifest.json").write_text('{"reportKeys": []}\n')
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: f/}\n")
    con.close()
    assert report.skipped == [
        (
            "f",
            str(tmp_path / "f" / "billing-2018-03-01.json"),
            "not supported: Google's legacy billing file export (JSON: an array of objects with accountId, "
            "lineItemId, startTime, measurements, cost), retired in 2019; export billing to BigQuery (Billing > "
            "Billing export > BigQuery export) and read that export, or its CSV or newline-delimited JSON "
            "extract, with kind: gcp (BigQuery holds no months from before the export was enabled); kind focus "
            "reads no .json",
        )
    ]


@pytest.mark.parametrize("dataset", ["actual", "amortized"])
def test_a_file_without_commitments_loads_under_either_dataset(tmp_path: Path, dataset: str) -> None:
    """Without reservations or savings plans the two exports are the same file: neither is refused."""
    with AMORTIZED.open(encoding="utf-8-sig", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["PricingModel"] == "OnDemand"]
    out = io.StringIO()
    writer = csv.DictWriter(out, list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (tmp_path / "az").mkdir()
    (tmp_path / "az" / "part_0_0001.csv").write_text(out.getvalue(), encoding="utf-8")
    report, con = ingest_sources(
        tmp_path, f"  - {{name: az, kind: azure, uri: az/, options: {{dataset: {dataset}}}}}\n"
    )
    assert _outcomes(report) == {"part_0_0001.csv": ("loaded", "")}
    assert con.execute("select count(*) from billing_line_items").fetchall() == [(len(rows),)]
    con.close()
