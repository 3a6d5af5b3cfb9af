"""`wastewatch ingest` over one poisoned billing file (a 200 KB field) and one good source: the good source
lands in full, the run exits 1, and one line names the poisoned file (before, Python's csv field limit
aborted the whole billing step with a message naming no file, and the good source landed nothing)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import duckdb
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import load_config
from pipelines.warehouse import connect
from tests.helpers.config import write_config
from tests.helpers.paths import FIXTURES, FOCUS_SAMPLE, copy_into

# koku's legacy CUR with a glued header: read by the header repair, which samples lines with Python's csv
# (where a 200 KB field once raised "field larger than field limit (131072)" out of the billing step)
CUR = FIXTURES / "billing" / "aws" / "test_cur.csv"


def _poisoned() -> bytes:
    """The legacy CUR fixture with a 200 KB value where its first line's cost belongs."""
    rows = list(csv.reader(io.StringIO(CUR.read_text(encoding="utf-8"))))
    rows[1][rows[0].index("lineItem/UnblendedCost")] = "9" * 200_000
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


def test_one_poisoned_file_is_one_line_and_exit_1_and_the_good_source_lands_in_full(tmp_path: Path) -> None:
    poisoned = tmp_path / "landing" / "cur" / "poisoned.csv"
    poisoned.parent.mkdir(parents=True)
    poisoned.write_bytes(_poisoned())
    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "focus")
    config_path = write_config(
        tmp_path,
        "sources:\n"
        "  - {name: cur, kind: aws_cur, uri: landing/cur/}\n"
        "  - {name: focus, kind: focus, uri: landing/focus/}\n",
    )
    result = CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(
        main, ["--config", str(config_path), "ingest"], catch_exceptions=False
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "error:" not in result.output, result.output
    named = [line for line in result.output.splitlines() if "poisoned.csv" in line]
    assert named == [
        f"rejected: {poisoned}:2: column 'lineItem/UnblendedCost': expected a decimal number, found "
        f"{'9' * 60!r}... (200,000 characters) (data row 1)"
    ], result.output

    expected = (
        duckdb.connect()
        .execute(
            "select count(*), sum(BilledCost::decimal(38, 12)) from read_csv($p, header = true, all_varchar = true)",
            {"p": str(FOCUS_SAMPLE)},
        )
        .fetchone()
    )
    assert expected is not None and expected[0] == 1000
    con = connect(load_config(config_path).warehouse_path, read_only=True)
    try:
        landed = con.execute(
            "select x_source_name, count(*), sum(billed_cost) from billing_line_items group by 1"
        ).fetchall()
        ledger = con.execute("select source, status from ingest_files order by source").fetchall()
    finally:
        con.close()
    assert landed == [("focus", 1000, expected[1])]
    assert ledger == [("cur", "rejected"), ("focus", "loaded")]
