"""One bad file is one refusal, and every refusal names what it saw and what to do (docs/billing.md,
"Refused files"; docs/reliability.md, "One bad file is one refusal").

Each broken file is built here from a good fixture (or is a small hand-written fixture named in
tests/fixtures/SOURCES.md), so the breakage is visible in the test code. The command-line promise (exit 1,
one line naming the file, the good source loaded in full) is tests/cli/test_one_bad_file.py.
"""

from __future__ import annotations

import csv
import gzip
import io
import threading
from pathlib import Path

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.errors import RejectedFile
from pipelines.ingest import IngestReport, ingest
from pipelines.ingest.sniff import FIELD_LIMIT, csv_fields, refusal, text_problem
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FIXTURES

CUR = FIXTURES / "billing" / "aws" / "2023-06-01.csv"  # 3 lines
GLUED = (
    FIXTURES / "billing" / "aws" / "test_cur.csv"
)  # 19 lines, koku's glued header: repaired by Python's csv
FOCUS = FIXTURES / "billing" / "focus-spec" / "commitment_discount_usage_scenario_3.csv"
SMI = FIXTURES / "telemetry" / "h200" / "nvidia_smi_query_gpu.csv"
GCP_LEGACY = FIXTURES / "billing" / "gcp-legacy"
LEGACY = (
    "not supported: Google's legacy billing file export ({seen}), retired in 2019; export billing to "
    "BigQuery (Billing > Billing export > BigQuery export) and read that export, or its CSV or "
    "newline-delimited JSON extract, with kind: gcp (BigQuery holds no months from before the export was "
    "enabled)"
)
LEGACY_CSV = "CSV: Account ID, Line Item, Start Time, End Time, Project, Measurement1, ..., Cost"
LEGACY_JSON = "JSON: an array of objects with accountId, lineItemId, startTime, measurements, cost"


def _cur_with(column: str, value: str, cur: Path = CUR) -> bytes:
    """The CUR fixture with `value` in `column` of its first data line."""
    rows = list(csv.reader(io.StringIO(cur.read_text(encoding="utf-8"))))
    rows[1][rows[0].index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


def _run(
    tmp_path: Path, sources: dict[str, tuple[str, dict[str, bytes]]]
) -> tuple[IngestReport, duckdb.DuckDBPyConnection]:
    """Write each source's files into its folder, configure the sources (name: (kind, files)), ingest once."""
    body = "sources:\n"
    for name, (kind, files) in sources.items():
        folder = tmp_path / name
        folder.mkdir(parents=True, exist_ok=True)
        for file, data in files.items():
            (folder / file).write_bytes(data)
        body += f"  - {{name: {name}, kind: {kind}, uri: {name}/}}\n"
    write_config(tmp_path, body)
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    return ingest(con, config), con


def _outcomes(report: IngestReport) -> dict[str, tuple[str, str | None]]:
    return {Path(o.uri).name: (o.status, o.error) for o in report.outcomes}


# -- one bad file is one refusal ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cur", "lines"),
    [(CUR, 3), (GLUED, 19)],
    ids=["read_by_duckdb", "header_repaired_by_python_csv"],
)
def test_a_200_kb_field_of_a_legacy_cur_csv_loads_whole(tmp_path: Path, cur: Path, lines: int) -> None:
    """Python's csv module stops at 131,072 bytes a field by default; the CUR header repair (koku's glued
    header) and the short-row check read the first data lines with it, and a long value (tag JSON, a
    description) once aborted the whole billing step. With the default limit the repaired file is refused."""
    long = "d" * 200_000
    report, con = _run(
        tmp_path, {"cur": ("aws_cur", {"cur.csv": _cur_with("lineItem/LineItemDescription", long, cur)})}
    )
    try:
        status, error = _outcomes(report)["cur.csv"]
        assert status == "loaded", report.summary()
        assert error is None or error.startswith("repaired: "), error
        got = con.execute(
            "select count(*), max(length(charge_description)), count(*) filter (where charge_description = $v) "
            "from billing_line_items",
            {"v": long},
        ).fetchone()
        assert got == (lines, 200_000, 1)
    finally:
        con.close()
    assert csv.field_size_limit() == 131_072  # put back after the read


def test_csv_reads_long_fields_only_inside_the_block_and_threads_share_it() -> None:
    before = csv.field_size_limit()
    inside: list[int] = []
    release = threading.Event()

    def reader() -> None:
        with csv_fields():
            inside.append(csv.field_size_limit())
            release.wait(5)
            inside.append(csv.field_size_limit())

    t = threading.Thread(target=reader)
    t.start()
    with csv_fields():
        row = next(csv.reader(io.StringIO("a," + "x" * 300_000 + "\n")))
        assert len(row[1]) == 300_000
    release.set()  # the main thread left first: the other thread's block still reads long fields
    t.join()
    assert inside == [FIELD_LIMIT, FIELD_LIMIT]
    assert csv.field_size_limit() == before


def test_a_line_past_duckdbs_limit_is_one_refusal_and_the_other_files_and_sources_load(
    tmp_path: Path,
) -> None:
    # DuckDB reads lines up to 2,000,000 bytes
    huge = _cur_with("lineItem/LineItemDescription", "y" * 3_000_000)
    report, con = _run(
        tmp_path,
        {
            "cur": ("aws_cur", {"a-huge.csv": huge, "b-good.csv": CUR.read_bytes()}),
            "focus": ("focus", {"focus.csv": FOCUS.read_bytes()}),
        },
    )
    try:
        got = _outcomes(report)
        status, error = got.pop("a-huge.csv")
        assert status == "rejected"
        assert error is not None and error.startswith(
            str(tmp_path / "cur" / "a-huge.csv") + ": cannot read: "
        )
        assert error.endswith(
            ": a line of 3,000,882 bytes, longer than the 2,000,000 DuckDB reads: no billing export writes "
            "one (line breaks lost in a copy, or not a CSV?); export the file again"
        )
        assert got == {"b-good.csv": ("loaded", None), "focus.csv": ("loaded", None)}
        assert report.exit_code == 1
        per_source = con.execute(
            "select x_source_name, count(*) from billing_line_items group by 1 order by 1"
        ).fetchall()
        assert per_source == [("cur", 3), ("focus", len(FOCUS.read_text().splitlines()) - 1)]
    finally:
        con.close()


def test_a_bad_value_200_kb_long_is_named_in_one_short_line(tmp_path: Path) -> None:
    report, con = _run(
        tmp_path, {"cur": ("aws_cur", {"cur.csv": _cur_with("lineItem/UnblendedCost", "9" * 200_000)})}
    )
    con.close()
    ((status, error),) = _outcomes(report).values()
    assert status == "rejected"
    assert error == (
        f"{tmp_path / 'cur' / 'cur.csv'}:2: column 'lineItem/UnblendedCost': expected a decimal number, found "
        f"{'9' * 60!r}... (200,000 characters) (data row 1)"
    )


@pytest.mark.parametrize(
    ("exc", "problem"),
    [
        (
            csv.Error("field larger than field limit (67108864)"),
            "cannot read as CSV: field larger than field limit (67108864)",
        ),
        (
            EOFError("Compressed file ended before the end-of-stream marker was reached"),
            "cannot read: the file ends early, as a cut copy does (Compressed file ended before the end-of-stream marker was reached)",
        ),
        (MemoryError(), "cannot read: out of memory (a line or value far longer than any export writes?)"),
        (
            KeyError("usage_start_time"),
            "cannot read: the gcp reader failed (KeyError: 'usage_start_time'); please report it",
        ),
    ],
)
def test_any_reader_error_becomes_the_files_refusal_naming_it(exc: BaseException, problem: str) -> None:
    got = refusal("/data/bill.csv", exc, "gcp")
    assert isinstance(got, RejectedFile)
    assert str(got) == f"/data/bill.csv: {problem}"


# -- every refusal names the format it saw and the remedy -------------------------------------------


ZEROS = b"\0" * 100_000  # a zero-filled file, as a copy interrupted by a crash or a full disk leaves


@pytest.mark.parametrize(
    ("kind", "name"),
    [("focus", "export.csv"), ("aws_cur", "cur.csv.gz"), ("nvidia_smi", "smi.csv"), ("dcgm", "node.prom")],
)
def test_a_file_of_nul_bytes_is_refused_as_not_text(tmp_path: Path, kind: str, name: str) -> None:
    data = gzip.compress(ZEROS) if name.endswith(".gz") else ZEROS
    report, con = _run(tmp_path, {"src": (kind, {name: data})})
    con.close()
    assert _outcomes(report) == {
        name: (
            "rejected",
            f"{tmp_path / 'src' / name}: not text: the first 65,536 bytes are NUL (0x00), as an interrupted "
            "copy or a full disk leaves a file; copy it again from its source",
        )
    }
    assert report.exit_code == 1


def _nul_in_line(text: bytes, line: int, word: bytes) -> bytes:
    lines = text.split(b"\n")
    assert word in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(word, word[:2] + b"\0" + word[2:], 1)
    return b"\n".join(lines)


@pytest.mark.parametrize(
    ("kind", "name", "source", "line", "word"),
    [
        ("focus", "export.csv", FOCUS, 3, b"Usage"),
        ("focus", "export.csv.gz", FOCUS, 3, b"Usage"),  # read from its inflated copy
        ("nvidia_smi", "smi.csv", SMI, 5, b"GPU-e78bcf19"),
    ],
)
def test_a_nul_byte_inside_a_value_is_refused_naming_its_line(
    tmp_path: Path, kind: str, name: str, source: Path, line: int, word: bytes
) -> None:
    text = _nul_in_line(source.read_bytes(), line, word)
    at = text.index(b"\0")
    report, con = _run(
        tmp_path, {"src": (kind, {name: gzip.compress(text) if name.endswith(".gz") else text})}
    )
    con.close()
    assert _outcomes(report) == {
        name: (
            "rejected",
            f"{tmp_path / 'src' / name}:{line}: a NUL byte (0x00) at byte {at:,}: text exports write none (a "
            "damaged copy, or a writer that pads values with NULs); copy the file again from its source, or "
            "delete the NUL bytes (tr -d '\\000')",
        )
    }


def test_a_hive_dump_renamed_csv_gz_is_told_it_is_not_a_csv(tmp_path: Path) -> None:
    hive = FOCUS.read_bytes().replace(b",", b"\x01")
    report, con = _run(tmp_path, {"src": ("focus", {"000000_0.csv.gz": gzip.compress(hive)})})
    con.close()
    ((status, error),) = _outcomes(report).values()
    assert status == "rejected"
    assert error == (
        f"{tmp_path / 'src' / '000000_0.csv.gz'}:1: not a CSV: fields separated by \\x01 (Hive's default field "
        "delimiter: a Hive text table's file?); export the table as comma-separated text with a header line "
        "(in Hive: INSERT OVERWRITE DIRECTORY ... ROW FORMAT DELIMITED FIELDS TERMINATED BY ','; or a query "
        "engine's CSV export)"
    )


def test_utf16_without_a_bom_parquet_named_csv_and_gzip_twice_say_what_they_are(tmp_path: Path) -> None:
    parquet = tmp_path / "p.parquet"
    duckdb.connect().execute(f"copy (select 1 as a) to '{parquet}' (format parquet)")
    report, con = _run(
        tmp_path,
        {
            "src": (
                "focus",
                {
                    "utf16.csv": FOCUS.read_text(encoding="utf-8").encode("utf-16-le"),
                    "p.csv": parquet.read_bytes(),
                    "twice.csv.gz": gzip.compress(gzip.compress(FOCUS.read_bytes())),
                },
            )
        },
    )
    con.close()
    folder = tmp_path / "src"
    assert _outcomes(report) == {
        "p.csv": (
            "rejected",
            f"{folder / 'p.csv'}: not text: a Parquet file; name it .parquet (billing kinds read Parquet by its name)",
        ),
        "utf16.csv": (
            "rejected",
            f"{folder / 'utf16.csv'}:1: not UTF-8 text: UTF-16 without a byte order mark (every other byte is "
            "NUL); export it as UTF-8",
        ),
        "twice.csv.gz": (
            "rejected",
            f"{folder / 'twice.csv.gz'}: not text: gzip-compressed data (a name without .gz, or compressed "
            "twice); name it .gz, or decompress it once",
        ),
    }


@pytest.mark.parametrize(
    ("kind", "fixture", "seen", "line"),
    [
        ("gcp", "legacy_file_export.csv", LEGACY_CSV, ":1"),
        ("focus", "legacy_file_export.csv", LEGACY_CSV, ":1"),
        ("gcp", "legacy_file_export.json", LEGACY_JSON, ":1"),
    ],
)
def test_googles_legacy_file_export_is_refused_as_such_with_the_bigquery_remedy(
    tmp_path: Path, kind: str, fixture: str, seen: str, line: str
) -> None:
    report, con = _run(tmp_path, {"src": (kind, {fixture: (GCP_LEGACY / fixture).read_bytes()})})
    con.close()
    assert _outcomes(report) == {
        fixture: ("rejected", f"{tmp_path / 'src' / fixture}{line}: " + LEGACY.format(seen=seen))
    }


def test_a_json_array_is_told_to_be_newline_delimited(tmp_path: Path) -> None:
    array = b'[{"billing_account_id": "01A2B3-C4D5E6-F7A8B9", "cost": 1.5}]\n'
    report, con = _run(tmp_path, {"src": ("gcp", {"rows.json": array})})
    con.close()
    assert _outcomes(report) == {
        "rows.json": (
            "rejected",
            f"{tmp_path / 'src' / 'rows.json'}:1: not newline-delimited JSON: the file is one JSON array; export "
            "the BigQuery billing table with EXPORT DATA ... FORMAT = JSON, or bq extract --destination_format "
            "NEWLINE_DELIMITED_JSON (one object per line)",
        )
    }


@pytest.mark.parametrize("name", ["far.csv", "far.csv.gz"])
def test_a_nul_byte_far_into_a_file_is_named_by_its_line(tmp_path: Path, name: str) -> None:
    """Past the first bytes sniffed, the scan goes on through the whole text and counts lines only then."""
    text = b"host,value\n" + b"gpu-a,1\n" * 100_000 + b"gpu-b,\x002\n"
    path = tmp_path / name
    path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    found = text_problem(path)
    assert found is not None and found[1] == 100_002
    at = text.index(0)
    assert found[0].startswith(f"a NUL byte (0x00) at byte {at:,}: ")
    assert text_problem(path, full=False) is None  # only the first 64 KiB: the billing load scans the rest
