"""Exports as providers really write them (docs/billing.md, "Variants read"), and dates that are never
guessed: each quirk is built by tests/helpers/provider_exports.py and loads to the cent, or is rejected
naming the file, the line, the column, the value and what was expected.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pytest

from tests.helpers.ingest_run import ingest_sources, only_outcome
from tests.helpers.provider_exports import athena_cur_parquet, athena_line

FOCUS_HEADER = [
    "BilledCost", "EffectiveCost", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd",
    "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "ResourceId", "ServiceName",
]  # fmt: skip


def _focus_csv(rows: list[tuple[str, str, str, str, str]]) -> bytes:
    """FOCUS lines: (cost, billing period start, billing period end, charge start, charge end)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(FOCUS_HEADER)
    for cost, bp_start, bp_end, start, end in rows:
        w.writerow([cost, cost, "USD", bp_start, bp_end, start, end, "Usage", "i-focus", "Amazon EC2"])
    return buf.getvalue().encode()


# -- 2. legacy CUR for Athena: '' in Parquet string columns is no value ----------------------------------


def test_athena_cur_parquet_with_empty_strings_reads_as_aws_cur(tmp_path: Path) -> None:
    """CUR for Athena writes rates, reservation figures and pricing rates as Parquet strings, '' for no
    value, under `year=YYYY/month=M` folders; the whole month loads, '' is NULL, and the period comes
    from the folders."""
    month = tmp_path / "landing" / "cur" / "acme-cur" / "year=2026" / "month=11"
    lines = [athena_line(i, f"2026-11-02 {i:02d}:00:00", "3.0625", team="nlp") for i in range(10)]
    ri = "arn:aws:ec2:us-east-1:111122223333:reserved-instances/ri-0123"
    lines.append(
        athena_line(10, "2026-11-03 00:00:00", "0", kind="DiscountedUsage", ri=ri, ri_effective="1.5")
    )
    lines.append(athena_line(11, "2026-11-30 00:00:00", "0.83", kind="Tax"))
    athena_cur_parquet(month / "acme-cur-00001.snappy.parquet", lines)
    report, con = ingest_sources(tmp_path, "  - {name: cur, kind: aws_cur, uri: landing/cur/}\n")
    assert only_outcome(report) == ("loaded", ""), report.summary()
    got = con.execute(
        "select x_billing_period, count(*), sum(billed_cost), sum(effective_cost), count(list_unit_price), "
        "count(contracted_unit_price), count(*) filter (where team = 'nlp') from billing_line_items group by 1"
    ).fetchall()
    # 10 x 3.0625 + 0 + 0.83 billed; the RI-covered hour is 1.5 effective; the tax line's '' rates are NULL
    assert got == [("2026-11", 12, Decimal("31.455"), Decimal("32.955"), 11, 11, 10)]
    ledger = con.execute("select billing_period, status from ingest_files").fetchall()
    assert ledger == [("2026-11", "loaded")]
    con.close()


def test_a_csv_empty_cell_in_an_optional_number_is_null(tmp_path: Path) -> None:
    """The same '' in a CSV cell, quoted or not: NULL, never a bad number."""
    landing = tmp_path / "landing"
    landing.mkdir()
    rows = [
        (
            "1.25",
            "2026-11-01T00:00:00Z",
            "2026-12-01T00:00:00Z",
            "2026-11-02T00:00:00Z",
            "2026-11-02T01:00:00Z",
        )
    ]
    text = _focus_csv(rows).decode().splitlines()
    text[0] += ",ListUnitPrice,ConsumedQuantity"
    text[1] += ',"",'
    (landing / "f.csv").write_text("\n".join(text) + "\n")
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: landing/}\n")
    assert only_outcome(report) == ("loaded", ""), report.summary()
    assert con.execute(
        "select list_unit_price, consumed_quantity, billed_cost from billing_line_items"
    ).fetchall() == [(None, None, Decimal("1.25"))]
    con.close()


# -- 3. dates are never guessed -----------------------------------------------------------------------------


def test_focus_with_two_digit_year_dates_is_rejected_naming_line_column_value_and_form(
    tmp_path: Path,
) -> None:
    """`4/1/25` is not an ISO 8601 date: a plain cast reads it as the year 4 (0004-01-25); it is rejected."""
    landing = tmp_path / "landing"
    landing.mkdir()
    rows = [("2.00", "4/1/25", "5/1/25", "4/2/25 10:00", "4/2/25 11:00")]
    (landing / "us.csv").write_bytes(_focus_csv(rows))
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: landing/}\n")
    status, error = only_outcome(report)
    assert status == "rejected"
    assert error.endswith(
        "us.csv:2: column 'ChargePeriodStart': expected an ISO 8601 date/time (UTC: 2024-09-01T00:00:00Z, "
        "2024-09-01T00:00:00.000Z or 2024-09-01 00:00:00), found '4/2/25 10:00' (data row 1); "
        "3 other column(s) also have bad values; for dates written in another form, set options.date_format "
        "(strptime: '%m/%d/%y', '%d.%m.%Y %H:%M')"
    ), error
    assert con.execute("select count(*) from billing_line_items").fetchall() == [(0,)]
    assert report.exit_code == 1
    con.close()


def test_options_date_format_reads_a_producer_that_deviates(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    rows = [("2.00", "4/1/25 0:00", "5/1/25 0:00", "4/2/25 10:00", "4/2/25 11:00")]
    (landing / "us.csv").write_bytes(_focus_csv(rows))
    report, con = ingest_sources(
        tmp_path, "  - {name: f, kind: focus, uri: landing/, options: {date_format: '%m/%d/%y %H:%M'}}\n"
    )
    assert only_outcome(report) == ("loaded", ""), report.summary()
    got = con.execute(
        "select billing_period_start::varchar, charge_period_start::varchar, x_billing_period from billing_line_items"
    ).fetchall()
    assert got == [("2025-04-01 00:00:00", "2025-04-02 10:00:00", "2025-04")]
    con.close()

    # with the option, a value in another form (even ISO) is rejected and the form is named
    (landing / "us.csv").write_bytes(
        _focus_csv([("2.00", "4/1/25 0:00", "5/1/25 0:00", "2025-04-02 10:00:00", "4/2/25 11:00")])
    )
    report, con = ingest_sources(
        tmp_path, "  - {name: f, kind: focus, uri: landing/, options: {date_format: '%m/%d/%y %H:%M'}}\n"
    )
    status, error = only_outcome(report)
    assert status == "rejected"
    assert (
        "us.csv:2: column 'ChargePeriodStart': expected a date/time in options.date_format '%m/%d/%y %H:%M', "
        "found '2025-04-02 10:00:00' (data row 1)" in error
    ), error
    con.close()


@pytest.mark.parametrize(
    ("start", "end", "shown"),
    [
        (
            "1900-11-02T10:00:00Z",
            "1900-11-02T11:00:00Z",
            "charge period 1900-11-02 10:00:00 to 1900-11-02 11:00:00",
        ),
        (
            "2999-11-02T10:00:00Z",
            "2999-11-02T11:00:00Z",
            "charge period 2999-11-02 10:00:00 to 2999-11-02 11:00:00",
        ),
        (
            "0003-04-01T00:00:00Z",
            "0003-04-02T00:00:00Z",
            "charge period 0003-04-01 00:00:00 to 0003-04-02 00:00:00",
        ),
    ],
)
def test_a_line_far_outside_its_billing_period_rejects_the_file(
    tmp_path: Path, start: str, end: str, shown: str
) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    bp = ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")
    rows = [("1.00", *bp, f"2026-11-02T{h:02d}:00:00Z", f"2026-11-02T{h + 1:02d}:00:00Z") for h in range(3)]
    rows.insert(1, ("5.00", *bp, start, end))
    (landing / "nov.csv").write_bytes(_focus_csv(rows))
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: landing/}\n")
    status, error = only_outcome(report)
    assert status == "rejected"
    assert error.endswith(
        f"nov.csv:3: 1 line(s) charged far outside their billing period (data row 2: usage, billing period "
        f"2026-11, {shown}, column 'ChargePeriodStart' {start!r}): more than 1 period(s) away, so a date was "
        "written or "
        "read wrongly "
        "(options.max_period_skew allows more for real late charges)"
    ), error
    assert con.execute("select count(*) from billing_line_items").fetchall() == [(0,)]
    con.close()


def test_late_charges_within_the_skew_load_and_the_skew_is_configurable(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    bp = ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")
    rows = [
        ("1.00", *bp, "2026-11-02T00:00:00Z", "2026-11-02T01:00:00Z"),
        ("2.00", *bp, "2026-10-31T23:00:00Z", "2026-11-01T00:00:00Z"),  # the month before: a late charge
        ("4.00", *bp, "2026-09-15T00:00:00Z", "2026-09-15T01:00:00Z"),  # two months before
    ]
    (landing / "nov.csv").write_bytes(_focus_csv(rows))
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: landing/}\n")
    assert only_outcome(report)[0] == "rejected"
    assert "(data row 3: usage, billing period 2026-11, charge period 2026-09-15" in only_outcome(report)[1]
    con.close()
    report, con = ingest_sources(
        tmp_path, "  - {name: f, kind: focus, uri: landing/, options: {max_period_skew: 2}}\n"
    )
    assert only_outcome(report) == ("loaded", ""), report.summary()
    assert con.execute("select sum(billed_cost) from billing_line_items").fetchall() == [(Decimal("7"),)]
    con.close()


def test_a_line_dated_far_from_its_period_folder_is_rejected(tmp_path: Path) -> None:
    """A CUR 2.0 delivery for BILLING_PERIOD=2026-11 with one line that says billing period 2999-11 and is
    charged then: consistent with itself, but detached from the rest of the file."""
    from datetime import datetime

    from tests.helpers.billing_exports import Cur2Export, hours, line

    export = Cur2Export(tmp_path / "landing")
    rows = hours("i-a", datetime(2026, 11, 2), 3, "1.00")
    rows.append(line("i-b", datetime(2999, 11, 2), "9.00", period_start=datetime(2999, 11, 1)))
    export.deliver("2026-11", [rows], "exec-1")
    report, con = ingest_sources(tmp_path, "  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    part = next(o for o in report.outcomes if o.uri.endswith(".csv.gz"))
    status, error = part.status, part.error or ""
    assert status == "rejected"
    assert (
        "cur2-00001.csv.gz:5: 1 line(s) charged far outside their billing period (data row 4: billing period "
        "2999-11, while the file's other lines are in 2026-11 to 2026-11)" in error
    ), error
    con.close()


def test_a_file_without_billing_periods_rejects_lines_detached_from_the_rest(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    rows = [
        ("1.00", "", "", f"2026-11-02T{h:02d}:00:00Z", f"2026-11-02T{h + 1:02d}:00:00Z") for h in range(5)
    ]
    rows.append(("1.00", "", "", "1900-01-01T00:00:00Z", "1900-01-01T01:00:00Z"))
    (landing / "loose.csv").write_bytes(_focus_csv(rows))
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: landing/}\n")
    status, error = only_outcome(report)
    assert status == "rejected"
    assert (
        "loose.csv:7: 1 line(s) charged far outside their billing period (data row 6: billing period 1900-01, "
        "while the file's other lines are in 2026-11 to 2026-11)" in error
    ), error
    con.close()


@pytest.mark.parametrize("value", ["4/1/25", "12/31/25", "31.12.2025"])
def test_azure_dates_with_a_two_digit_year_or_another_order_are_rejected(tmp_path: Path, value: str) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "ea.csv").write_text(
        "Date,CostInBillingCurrency,BillingCurrencyCode,ResourceId\n"
        "09/02/2025,1.50,USD,/subscriptions/s/vm1\n"
        f"{value},2.50,USD,/subscriptions/s/vm1\n"
    )
    report, con = ingest_sources(tmp_path, "  - {name: az, kind: azure, uri: landing/}\n")
    status, error = only_outcome(report)
    assert status == "rejected"
    assert error.endswith(
        f"ea.csv:3: column 'Date': expected a date (MM/DD/YYYY with a four-digit year, or YYYY-MM-DD), "
        f"found '{value}' (data row 2); for dates written in another form, set options.date_format (strptime: "
        "'%m/%d/%y', '%d.%m.%Y %H:%M')"
    ), error
    con.close()


# -- 2. Azure: localised bilingual headers, EA usage data extracts --------------------------------------------


def test_azure_portal_download_with_localised_bilingual_headers(tmp_path: Path) -> None:
    """A German portal download (`Abonnement-GUID (SubscriptionGuid)`; semicolons, as a German Excel
    writes CSV) is read by the English names in parentheses."""
    from tests.helpers.provider_exports import azure_localised_csv

    rows = [
        {
            "SubscriptionGuid": "0f1e2d3c-0000-4000-8000-000000000001",
            "UsageDateTime": f"2026-11-0{d} 00:00:00",
            "MeterCategory": "Virtual Machines",
            "MeterName": "NC24ads A100 v4",
            "UsageQuantity": "24",
            "ResourceRate": "3.673",
            "PreTaxCost": "88.152",
            "ConsumedService": "Microsoft.Compute",
            "InstanceId": "/subscriptions/0f1e/resourceGroups/ML/providers/Microsoft.Compute/virtualMachines/gpu1",
            "Tags": '{"team": "vision"}',
            "Currency": "EUR",
        }
        for d in (1, 2)
    ]
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "Nutzungsdetails_2026-11.csv").write_bytes(azure_localised_csv(rows))
    report, con = ingest_sources(tmp_path, "  - {name: az, kind: azure, uri: landing/}\n")
    assert only_outcome(report) == ("loaded", ""), report.summary()
    got = con.execute(
        "select count(*), sum(billed_cost), any_value(billing_currency), any_value(sub_account_id), "
        "any_value(team), min(charge_period_start)::varchar, any_value(resource_id) from billing_line_items"
    ).fetchall()
    assert got == [
        (
            2,
            Decimal("176.304"),
            "EUR",
            "0f1e2d3c-0000-4000-8000-000000000001",
            "vision",
            "2026-11-01 00:00:00",
            "/subscriptions/0f1e/resourcegroups/ml/providers/microsoft.compute/virtualmachines/gpu1",
        )
    ]
    con.close()


def _ea_rows() -> list[dict[str, str]]:
    return [
        {
            "SubscriptionGuid": "0f1e2d3c-0000-4000-8000-000000000002",
            "Date": f"09/{d:02d}/2024",
            "Month": "9",
            "Day": str(d),
            "Year": "2024",
            "Meter Category": "Virtual Machines",
            "Meter Name": "ND96asr v4",
            "Consumed Quantity": "24",
            "ResourceRate": "27.197",
            "ExtendedCost": "652.728",
            "Resource Location": "EastUS",
            "Consumed Service": "Microsoft.Compute",
            "Instance ID": "/subscriptions/0f1e/resourceGroups/RG/providers/Microsoft.Compute/virtualMachines/nd1",
            "Tags": '"team": "nlp"',
            "Unit Of Measure": "1 Hour",
        }
        for d in (1, 2, 3)
    ]


def test_ea_usage_data_extract_is_read_past_its_preamble(tmp_path: Path) -> None:
    from tests.helpers.provider_exports import EA_EXTRACT_PREAMBLE, ea_usage_extract

    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "Detail_Enrollment_12345678_201409_en.csv").write_bytes(ea_usage_extract(_ea_rows()))
    report, con = ingest_sources(tmp_path, "  - {name: az, kind: azure, uri: landing/}\n")
    assert only_outcome(report) == ("loaded", ""), report.summary()
    assert report.outcomes[0].repairs == [
        f"{len(EA_EXTRACT_PREAMBLE)} line(s) before the header skipped: an Azure EA portal usage data extract "
        "('Usage Data Extract' and 'Provisioning Status' lines before the header)"
    ]
    got = con.execute(
        "select count(*), sum(effective_cost), sum(consumed_quantity), min(charge_period_start)::varchar, "
        "any_value(team), any_value(region_id) from billing_line_items"
    ).fetchall()
    assert got == [(3, Decimal("1958.184"), 72.0, "2024-09-01 00:00:00", "nlp", "eastus")]
    con.close()


def test_ea_usage_data_extract_bad_value_names_the_file_line(tmp_path: Path) -> None:
    """Line numbers count the preamble: the message points at the line as an editor shows it."""
    from tests.helpers.provider_exports import EA_EXTRACT_PREAMBLE, ea_usage_extract

    rows = _ea_rows()
    rows[1]["ExtendedCost"] = "652,728"
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "extract.csv").write_bytes(ea_usage_extract(rows))
    report, con = ingest_sources(tmp_path, "  - {name: az, kind: azure, uri: landing/}\n")
    status, error = only_outcome(report)
    assert status == "rejected"
    line = len(EA_EXTRACT_PREAMBLE) + 1 + 2  # the preamble, the header, then the second data row
    assert error.endswith(
        f"extract.csv:{line}: column 'ExtendedCost': expected a decimal number, found '652,728' (data row 2)"
    ), error
    con.close()


def test_ea_usage_data_extract_without_a_header_is_rejected_saying_what_to_export(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "extract.csv").write_text(
        "Usage Data Extract\r\nProvisioning Status,Enrollment Number\r\n" + "x,1\r\n" * 40
    )
    report, con = ingest_sources(tmp_path, "  - {name: az, kind: azure, uri: landing/}\n")
    status, error = only_outcome(report)
    assert status == "rejected"
    assert error.endswith(
        "extract.csv:1: not supported: an Azure EA portal usage data extract ('Usage Data Extract' and "
        "'Provisioning Status' lines before the header) whose header was not found in its first 30 lines; "
        "export cost details from Cost Management instead (Exports, or Cost analysis > Download > "
        "'Cost and usage details'), which the azure reader loads as they come"
    ), error
    con.close()


def test_files_no_reader_claims_are_listed_as_skipped_with_why(tmp_path: Path) -> None:
    """A `.gz` without `.csv`, a workbook and an archive in a billing folder: not read, not a failure,
    but listed with the reason (a silent skip looked like an empty month)."""
    landing = tmp_path / "landing"
    landing.mkdir()
    bp = ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")
    good = _focus_csv([("1.00", *bp, "2026-11-02T00:00:00Z", "2026-11-02T01:00:00Z")])
    (landing / "good.csv").write_bytes(good)
    (landing / "part-00001.gz").write_bytes(good)
    (landing / "bill.xlsx").write_bytes(b"PK\x03\x04")
    (landing / "bill.zip").write_bytes(b"PK\x03\x04")
    (landing / ".DS_Store").write_bytes(b"\0")
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: landing/}\n")
    assert [o.status for o in report.outcomes] == ["loaded"]
    assert report.exit_code == 0
    patterns = "reads .csv, .csv.gz, .parquet"
    assert [(s, Path(u).name, why) for s, u, why in report.skipped] == [
        ("f", "bill.xlsx", f"a spreadsheet (export it as CSV); kind focus {patterns}"),
        ("f", "bill.zip", f"an archive (unpack it into the folder); kind focus {patterns}"),
        (
            "f",
            "part-00001.gz",
            f"a gzip file whose name does not say what it holds (name it .csv.gz); kind focus {patterns}",
        ),
    ]
    assert f"  skipped: {(landing / 'part-00001.gz').resolve()}: a gzip file" in report.summary()
    con.close()


@pytest.mark.parametrize(
    ("encode", "expected"),
    [
        (
            lambda text: text.encode("utf-16"),
            "utf.csv:1: not UTF-8 text: UTF-16 (byte order mark FF FE at byte 0); save or export the file as UTF-8",
        ),
        (
            lambda text: text.replace("Amazon EC2", "Zürich EC2").encode("cp1252"),
            "utf.csv:2: not UTF-8 text at byte 262 (0xFC): the file is in another encoding (Windows-1252 or "
            "Latin-1?); export it as UTF-8",
        ),
        (
            lambda text: text.replace(",", "^").encode(),
            "utf.csv:1: cannot find the delimiter: expected , ; tab or | (the header has a single column "
            "'BilledCost^EffectiveCost^BillingCurrency^BillingPeriodStart^'; set options.delimiter if the file "
            "uses another one)",
        ),
    ],
)
def test_an_encoding_or_delimiter_problem_is_named_as_such(
    tmp_path: Path, encode: Callable[[str], bytes], expected: str
) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    bp = ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")
    text = _focus_csv([("1.00", *bp, "2026-11-02T00:00:00Z", "2026-11-02T01:00:00Z")]).decode()
    (landing / "utf.csv").write_bytes(encode(text))
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: landing/}\n")
    status, error = only_outcome(report)
    assert status == "rejected"
    assert error.endswith(expected), error
    assert "sniffing" not in error
    con.close()


def test_a_byte_in_another_encoding_past_the_sniffed_sample_is_named_as_such(tmp_path: Path) -> None:
    """DuckDB reads the first rows to sniff; a Windows-1252 byte on line 5,001 surfaces only during the
    load, and is named like one on line 2 (its byte and line), not by DuckDB's text."""
    landing = tmp_path / "landing"
    landing.mkdir()
    bp = ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")
    text = _focus_csv([("1.00", *bp, "2026-11-02T00:00:00Z", "2026-11-02T01:00:00Z")] * 5000).decode()
    head, _, last = text.rstrip("\n").rpartition("\n")
    data = head.encode() + b"\n" + last.replace("Amazon EC2", "Zürich EC2").encode("cp1252") + b"\n"
    (landing / "late.csv").write_bytes(data)
    report, con = ingest_sources(tmp_path, "  - {name: f, kind: focus, uri: landing/}\n")
    status, error = only_outcome(report)
    assert status == "rejected"
    at = len(head.encode()) + 1 + last.index("Amazon EC2") + 1
    assert error.endswith(
        f"late.csv:5001: not UTF-8 text at byte {at} (0xFC): the file is in another encoding "
        "(Windows-1252 or Latin-1?); export it as UTF-8"
    ), error
    assert con.execute("select count(*) from billing_line_items").fetchone() == (0,)
    con.close()
