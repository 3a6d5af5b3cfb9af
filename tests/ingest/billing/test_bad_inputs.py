"""The bad-input corpus: each broken export gets a specific error naming the file, line/column and problem
(and leaves the warehouse as it was), or a documented repair; every other file still loads.

Each broken file is built here from a good one, so the breakage is visible in the test code. The
missing-manifest-file, half-written folder and koku header-typo cases live in test_restatement.py
and test_samples.py.
"""

from __future__ import annotations

import gzip
import json
import shutil
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.ingest import IngestReport, ingest
from pipelines.ingest.billing import relation
from tests.helpers.billing_exports import CUR2_HEADER, csv_bytes, hours, line
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FIXTURES, put_back

NOV = datetime(2026, 11, 2)
GOOD = hours("i-good", NOV, 10, "2.00")


def _setup(tmp_path: Path) -> Path:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "good.csv.gz").write_bytes(csv_bytes(GOOD))
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    return landing


def _ingest(tmp_path: Path) -> tuple[IngestReport, duckdb.DuckDBPyConnection]:
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    return ingest(con, config), con


def _snapshot(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute(
        "select x_source_file, count(*), sum(billed_cost), sum(effective_cost) from billing_line_items group by 1 order by 1"
    ).fetchall()


@dataclass(frozen=True)
class Good:
    """A project whose good file is loaded (its root), and the table's rows per file after that load."""

    root: Path
    before: list[tuple]


@pytest.fixture(scope="module")
def loaded_good(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Good]:
    """The good file's project after its ingest, made once: a pristine copy, and the place it was loaded."""
    root = tmp_path_factory.mktemp("bad_inputs") / "project"
    root.mkdir()
    _setup(root)
    report, con = _ingest(root)
    try:
        assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
        before = _snapshot(con)
    finally:
        con.close()
    pristine = tmp_path_factory.mktemp("bad_inputs_pristine") / "project"
    shutil.copytree(root, pristine, symlinks=True)
    return pristine, Good(root, before)


@pytest.fixture
def good(loaded_good: tuple[Path, Good]) -> Good:
    """The module's loaded good file, restored for this test to the place it was loaded at."""
    pristine, good = loaded_good
    put_back(pristine, good.root)
    return good


def _rejected(good: Good, name: str, data: bytes) -> tuple[str, duckdb.DuckDBPyConnection]:
    """With the good file loaded (`good`), add the bad one: the bad one is rejected, the warehouse is
    unchanged."""
    landing = good.root / "landing"
    (landing / name).write_bytes(data)
    report, con = _ingest(good.root)
    by_name = {Path(o.uri).name: o for o in report.outcomes}
    assert by_name["good.csv.gz"].status == "unchanged"
    bad = by_name[name]
    assert bad.status == "rejected", report.summary()
    assert report.exit_code == 1
    assert _snapshot(con) == good.before  # nothing of the bad file landed; the good file's rows are intact
    ledger = con.execute(
        "select status, error from ingest_files where uri like $u", {"u": f"%/{name}"}
    ).fetchall()
    assert ledger == [("rejected", bad.error)]
    assert (bad.error or "").startswith(str((landing / name).resolve()))
    return bad.error or "", con


def test_truncated_gzip(good: Good) -> None:
    data = csv_bytes(hours("i-x", NOV, 2000, "1.00"))
    error, con = _rejected(good, "cut.csv.gz", data[: len(data) // 2])
    assert "cut.csv.gz: cannot read: the gzip stream is truncated" in error
    con.close()


def test_non_numeric_cost(good: Good) -> None:
    rows = hours("i-x", NOV, 5, "1.00")
    rows[2]["line_item_unblended_cost"] = "1,5O"
    error, con = _rejected(good, "bad_cost.csv.gz", csv_bytes(rows))
    assert (
        "bad_cost.csv.gz:4: column 'line_item_unblended_cost': expected a decimal number, found '1,5O' (data row 3)"
        in error
    )
    con.close()


def test_a_line_with_extra_fields_past_the_sniffed_sample(good: Good) -> None:
    """DuckDB sniffs a CSV's first 20,480 lines; a broken line after them fails the load itself, which reads
    the part's decompressed copy (in memory or in the cache): the error names the .gz, the file line and
    DuckDB's reason, and never the copy."""
    text = csv_bytes(hours("i-x", NOV, 30_000, "1.00"), gz=False).decode()
    lines = text.splitlines(keepends=True)
    lines[25_000] = lines[25_000].rstrip("\n") + ',"one more",2\n'  # file line 25,001 (the header is line 1)
    # the fastest gzip level: the same 11 MB of text in the part, a tenth of the compressing
    error, con = _rejected(good, "wide.csv.gz", gzip.compress("".join(lines).encode(), compresslevel=1))
    n = len(CUR2_HEADER)  # DuckDB stops counting at the first field too many
    assert error.endswith(
        f"wide.csv.gz: cannot read: CSV Error on Line: 25001: Expected Number of Columns: {n} Found: {n + 1}"
    ), error
    assert "/proc/" not in error and "prepared" not in error
    con.close()


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("1,2,3,4\n", "Expected Number of Columns: 3 Found: 4"),
        # the offending line spans two lines of text: DuckDB prints both before its reason
        ('1,"two\nlines",3,4\n', "Expected Number of Columns: 3 Found: 4"),
        ('1,"2,3\n4,5,6\n', "Value with unterminated quote found."),
    ],
)
def test_a_csv_error_keeps_duckdbs_reason_and_not_the_lines_text(
    tmp_path: Path, bad: str, reason: str
) -> None:
    from pipelines.ingest.readers.base import duckdb_problem

    path = tmp_path / "t.csv"
    path.write_text("a,b,c\n" + "1,2,3\n" * 30_000 + bad)
    con = duckdb.connect()
    with pytest.raises(duckdb.Error) as caught:
        con.execute(
            "select * from read_csv($p, header = true, quote = '\"', columns = {a: 'varchar', b: 'varchar', c: 'varchar'})",
            {"p": str(path)},
        ).fetchall()
    assert duckdb_problem(caught.value) == f"CSV Error on Line: 30002: {reason}", str(caught.value)
    con.close()


@pytest.mark.parametrize(
    ("value", "row"),
    [
        ("2023-02-01T30:00:00Z", 2),  # an impossible time, from the FOCUS spec's own examples
        ("infinity", 4),  # DuckDB reads it as a timestamp; a billing line cannot end at infinity
    ],
)
def test_impossible_timestamp(good: Good, value: str, row: int) -> None:
    rows = hours("i-x", NOV, 5, "1.00")
    rows[row - 1]["line_item_usage_end_date"] = value
    error, con = _rejected(good, "bad_time.csv.gz", csv_bytes(rows))
    assert (
        f"bad_time.csv.gz:{row + 1}: column 'line_item_usage_end_date': expected an ISO 8601 date/time (UTC: "
        "2024-09-01T00:00:00Z, 2024-09-01T00:00:00.000Z or 2024-09-01 00:00:00), "
        f"found '{value}' (data row {row})"
    ) in error
    con.close()


# 0 stands in for a CSV file too large to number rows on insert: the message must name the row anyway
NUMBERING = pytest.mark.parametrize("row_number_limit", [256 << 20, 0], ids=["numbered", "unnumbered"])


@NUMBERING
def test_line_that_ends_before_it_starts(
    good: Good, monkeypatch: pytest.MonkeyPatch, row_number_limit: int
) -> None:
    monkeypatch.setattr(relation, "ROW_NUMBER_LIMIT", row_number_limit)
    rows = hours("i-x", NOV, 5, "1.00")
    rows[3]["line_item_usage_end_date"] = "2026-11-01T00:00:00Z"
    error, con = _rejected(good, "backwards.csv.gz", csv_bytes(rows))
    assert "backwards.csv.gz:5: 1 line(s) end before they start (data row 4)" in error
    con.close()


@NUMBERING
def test_duplicate_line_item_ids(good: Good, monkeypatch: pytest.MonkeyPatch, row_number_limit: int) -> None:
    monkeypatch.setattr(relation, "ROW_NUMBER_LIMIT", row_number_limit)
    rows = hours("i-x", NOV, 5, "1.00")
    rows.append(dict(rows[1]))
    error, con = _rejected(good, "dups.csv.gz", csv_bytes(rows))
    assert (
        "dups.csv.gz: duplicate line items: 'i-x-2026110201-Usage' appears 2 times (data rows 2, 6)" in error
    )
    assert "would count their cost twice" in error
    con.close()


def test_not_a_billing_file(good: Good) -> None:
    error, con = _rejected(good, "notes.csv", b"just some text\nwithout any delimiter\n")
    assert (
        "notes.csv:1: cannot find the delimiter: expected , ; tab or | (the header has a single column "
        "'just some text'" in error
    )
    con.close()


def test_missing_cost_column(good: Good) -> None:
    header = [c for c in CUR2_HEADER if c != "line_item_unblended_cost"]
    rows = [{k: v for k, v in r.items() if k in header} for r in hours("i-x", NOV, 3, "1.00")]
    error, con = _rejected(good, "nocost.csv", csv_bytes(rows, header=header, gz=False))
    assert "nocost.csv:1: not an AWS Cost and Usage Report: no lineItem/UnblendedCost" in error
    con.close()


def test_empty_file(good: Good) -> None:
    error, con = _rejected(good, "empty.csv", b"")
    assert "empty.csv: file is empty (0 bytes)" in error
    con.close()


@pytest.mark.parametrize("kind", ["aws_cur2", "focus"])
def test_a_header_only_file_loads_no_lines_and_reconciles_to_zero(tmp_path: Path, kind: str) -> None:
    """A part with a header and no lines (a quiet hour, a split export's last part) is a valid file."""
    landing = tmp_path / "landing"
    landing.mkdir()
    if kind == "aws_cur2":
        (landing / "quiet.csv.gz").write_bytes(csv_bytes([]))
    else:
        sample = (FIXTURES / "billing" / "focus_sample_1.0.csv").read_text(encoding="utf-8")
        (landing / "quiet.csv.gz").write_bytes(gzip.compress(sample.splitlines(True)[0].encode()))
    write_config(tmp_path, f"sources:\n  - {{name: s, kind: {kind}, uri: landing/}}\n")
    report, con = _ingest(tmp_path)
    [outcome] = report.outcomes
    assert (outcome.status, outcome.rows, outcome.error) == ("loaded", 0, None), report.summary()
    ledger = con.execute("select rows, file_rows, billed_cost_sum, file_billed_cost_sum from ingest_files")
    assert ledger.fetchall() == [(0, 0, None, None)]
    con.close()


def test_wrong_delimiter_is_sniffed_and_the_repair_recorded(tmp_path: Path) -> None:
    """Documented repair: a semicolon- (or tab-, pipe-) separated export is read with its delimiter."""
    landing = _setup(tmp_path)
    rows = hours("i-semi", NOV, 4, "1.25")
    text = csv_bytes(rows, gz=False).decode()
    import csv
    import io

    out = io.StringIO()
    w = csv.writer(out, delimiter=";", lineterminator="\n")
    for r in csv.reader(io.StringIO(text)):
        w.writerow(r)
    (landing / "semi.csv").write_text(out.getvalue(), encoding="utf-8")
    report, con = _ingest(tmp_path)
    assert not report.rejected, report.summary()
    [semi] = [o for o in report.outcomes if o.uri.endswith("semi.csv")]
    assert semi.status == "loaded" and semi.rows == 4
    assert semi.repairs == ["read as ';'-separated (sniffed from the header)"]
    assert "repaired:" in report.summary()
    got = con.execute(
        "select sum(billed_cost) from billing_line_items where x_source_file like '%semi.csv'"
    ).fetchall()
    assert got == [(Decimal("5.000000"),)]
    ledger = con.execute("select error from ingest_files where uri like '%semi.csv'").fetchall()
    assert ledger == [("repaired: read as ';'-separated (sniffed from the header)",)]
    con.close()


def test_mixed_currencies_keep_each_lines_currency(tmp_path: Path) -> None:
    """Documented: a file may bill in several currencies; each line keeps its own and no sum adds them."""
    landing = _setup(tmp_path)
    rows = hours("i-eu", NOV, 3, "4.00", currency="EUR") + hours("i-us", NOV, 2, "3.00")
    (landing / "mixed.csv.gz").write_bytes(csv_bytes(rows))
    report, con = _ingest(tmp_path)
    assert not report.rejected, report.summary()
    by_currency = dict(
        con.execute(
            "select billing_currency, sum(billed_cost) from billing_line_items where x_source_file like '%/mixed.csv.gz' group by 1"
        ).fetchall()
    )
    assert by_currency == {"EUR": Decimal("12.000000"), "USD": Decimal("6.000000")}
    assert con.execute("select currencies from ingest_files where uri like '%/mixed.csv.gz'").fetchall() == [
        ("EUR,USD",)
    ]
    con.close()


def test_ten_thousand_distinct_tag_keys(tmp_path: Path) -> None:
    """10,000 distinct tag keys (a tagging accident) load, normalised, one MAP per line, queryable by key."""
    landing = _setup(tmp_path)
    rows = []
    for i in range(2000):
        tags = {f"user_Key{i * 5 + k:05d} ": f"v{k}" for k in range(5)}
        tags["user:Team"] = f"team-{i % 7}"
        rows.append(line(f"i-{i:05d}", NOV, "0.10", tags=tags))
    (landing / "tags.csv.gz").write_bytes(csv_bytes(rows))
    report, con = _ingest(tmp_path)
    assert not report.rejected, report.summary()
    keys = con.execute(
        "select count(distinct k) from (select unnest(map_keys(tags)) as k from billing_line_items "
        "where x_source_file like '%tags.csv.gz')"
    ).fetchall()[0][0]
    assert keys == 10_001  # key00000 .. key09999 and team
    row = con.execute(
        "select tags['key00007'], team, x_tags_raw ->> '$.\"user_Key00007 \"' from billing_line_items "
        "where resource_id = 'i-00001'"
    ).fetchall()
    assert row == [("v2", "team-1", "v2")]
    con.close()


def test_a_bad_file_in_a_legacy_cur_month_rejects_the_whole_assembly(tmp_path: Path) -> None:
    """A broken part of a manifest's delivery rejects the delivery: no half month is ever loaded."""
    import shutil

    landing = tmp_path / "landing"
    shutil.copytree(FIXTURES / "billing" / "aws" / "legacy_cur_bucket_layout", landing)
    month = landing / "koku-local" / "20180801-20180901"
    part = next(month.glob("*/koku-local-1.csv.gz"))
    extra = part.with_name("koku-local-2.csv.gz")
    extra.write_bytes(part.read_bytes()[:5000])
    doc = json.loads((month / "koku-local-Manifest.json").read_text())
    doc["reportKeys"].append(doc["reportKeys"][0].replace("-1.csv.gz", "-2.csv.gz"))
    (month / "koku-local-Manifest.json").write_text(json.dumps(doc))
    write_config(tmp_path, "sources:\n  - {name: cur, kind: aws_cur, uri: landing/}\n")
    report, con = _ingest(tmp_path)
    statuses = {Path(o.uri).name: (o.status, o.error or "") for o in report.outcomes}
    assert statuses["koku-local-2.csv.gz"][0] == "rejected"
    assert "the gzip stream is truncated" in statuses["koku-local-2.csv.gz"][1]
    assert statuses["koku-local-1.csv.gz"][0] == "rejected"
    assert (
        "not loaded: koku-local-2.csv.gz of the same delivery was rejected"
        in statuses["koku-local-1.csv.gz"][1]
    )
    assert con.execute("select count(*) from billing_line_items").fetchall() == [(0,)]
    con.close()


@pytest.mark.parametrize(
    "options, message",
    [
        (
            "{dataset: both}",
            "sources[0].options.dataset: got 'both', expected one of 'amortized' or 'actual'",
        ),
        ("{on_removed: forget}", "sources[0].options.on_removed: got 'forget'"),
        ("{colour: blue}", "sources[0].options.colour: unknown key"),
    ],
)
def test_bad_billing_options_are_config_errors(tmp_path: Path, options: str, message: str) -> None:
    from pipelines.config import ConfigError

    write_config(tmp_path, f"sources:\n  - {{name: az, kind: azure, uri: landing/, options: {options}}}\n")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "wastewatch.yaml")
    assert message in str(err.value) and "wastewatch.yaml:2" in str(err.value)


def test_gzip_bytes_helper_is_deterministic() -> None:
    assert gzip.decompress(csv_bytes(GOOD)).startswith(b"identity_line_item_id,")


def test_glued_header_with_one_field_more_in_the_rows_is_split(tmp_path: Path) -> None:
    """Documented repair: a header field that is two CUR column names without their comma, while every
    row has one field more, is split back into the two columns (the rest of the header lines up)."""
    landing = _setup(tmp_path)
    header = [
        "identity/LineItemId", "lineItem/LineItemType", "lineItem/UsageStartDate", "lineItem/UsageEndDate",
        "lineItem/ResourceId", "pricing/OfferingClasspricing/PurchaseOption", "lineItem/UnblendedCost",
        "lineItem/CurrencyCode",
    ]  # fmt: skip
    rows = [
        f"id-{i},Usage,2026-11-02T0{i}:00:00Z,2026-11-02T0{i + 1}:00:00Z,i-glued,standard,Spot,0.5,USD"
        for i in range(3)
    ]
    (landing / "glued.csv").write_text(",".join(header) + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    write_config(tmp_path, "sources:\n  - {name: cur, kind: aws_cur, uri: landing/}\n")
    report, con = _ingest(tmp_path)
    [glued] = [o for o in report.outcomes if o.uri.endswith("glued.csv")]
    assert glued.status == "loaded", report.summary()
    assert glued.repairs == [
        "header field 'pricing/OfferingClasspricing/PurchaseOption' split into 'pricing/OfferingClass' and "
        "'pricing/PurchaseOption' (a missing comma)"
    ]
    got = con.execute(
        "select sum(billed_cost), min(pricing_category), min(resource_id) from billing_line_items "
        "where x_source_file like '%/glued.csv'"
    ).fetchall()
    assert got == [(Decimal("1.500000"), "Dynamic", "i-glued")]  # Spot -> Dynamic: the columns line up
    con.close()
