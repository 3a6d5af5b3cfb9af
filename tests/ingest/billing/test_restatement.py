"""Restatements: the unit of replacement is (source, billing period); the ledger handles removed, renamed
and re-delivered files; half-written deliveries are not read."""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.ingest import IngestReport, ingest
from tests.helpers.billing_exports import Cur2Export, csv_bytes, hours, total
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

NOV = datetime(2026, 11, 2, 0, 0)
DEC = datetime(2026, 12, 3, 0, 0)


@pytest.fixture
def export(tmp_path: Path) -> Cur2Export:
    (tmp_path / "landing").mkdir()
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    return Cur2Export(tmp_path / "landing")


def _run(tmp_path: Path) -> tuple[IngestReport, duckdb.DuckDBPyConnection]:
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    return ingest(con, config), con


def _totals(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, Decimal]]:
    return {
        r[0]: (r[1], r[2])
        for r in con.execute(
            "select x_billing_period, count(*), sum(billed_cost) from billing_line_items group by 1 order by 1"
        ).fetchall()
    }


def _statuses(report: IngestReport) -> dict[str, str]:
    return {
        Path(o.uri).name if "Manifest" in o.uri else o.uri.split("/landing/")[-1]: o.status
        for o in report.outcomes
    }


def test_month_then_restated_month_then_redelivery_leaves_exactly_the_restated_totals(
    tmp_path: Path, export: Cur2Export
) -> None:
    first = [hours("i-a", NOV, 24, "3.00"), hours("i-b", NOV, 24, "5.00")]
    export.deliver("2026-11", first, "exec-1")
    report, con = _run(tmp_path)
    assert not report.rejected, report.summary()
    assert _totals(con) == {"2026-11": (48, Decimal("192.000000"))}
    con.close()

    # AWS rewrites the month in place (overwrite mode): different totals, one part fewer lines
    restated = [hours("i-a", NOV, 24, "2.50"), hours("i-b", NOV, 12, "5.00")]
    export.deliver("2026-11", restated, "exec-2")
    report, con = _run(tmp_path)
    assert not report.rejected, report.summary()
    expected = (36, total(restated[0]) + total(restated[1]))
    assert _totals(con) == {"2026-11": expected}
    assert {r[0] for r in con.execute("select distinct delivery_id from ingest_files").fetchall()} == {
        "exec-2"
    }
    con.close()

    # the same files delivered again (rewritten, new modification times): nothing changes
    for p in export.data_dir("2026-11").glob("*.gz"):
        os.utime(p, (p.stat().st_atime + 100, p.stat().st_mtime + 100))
    export.deliver("2026-11", restated, "exec-2")
    report, con = _run(tmp_path)
    assert {o.status for o in report.outcomes} == {"unchanged"}
    assert _totals(con) == {"2026-11": expected}
    ledger = con.execute(
        "select count(*), sum(rows), sum(billed_cost_sum) from ingest_files where status = 'loaded' and rows > 0"
    ).fetchall()[0]
    assert ledger == (2, 36, expected[1])
    con.close()


def test_create_new_mode_reads_only_the_newest_execution(tmp_path: Path, export: Cur2Export) -> None:
    export.deliver("2026-11", [hours("i-a", NOV, 10, "1.00")], "exec-1", subfolder="20261103T0100Z")
    report, con = _run(tmp_path)
    assert _totals(con) == {"2026-11": (10, Decimal("10.000000"))}
    con.close()
    export.deliver("2026-11", [hours("i-a", NOV, 10, "1.25")], "exec-2", subfolder="20261104T0100Z")
    report, con = _run(tmp_path)
    assert not report.rejected, report.summary()
    assert _totals(con) == {"2026-11": (10, Decimal("12.500000"))}
    statuses = dict(con.execute("select uri, status from ingest_files").fetchall())
    old = next(u for u in statuses if "20261103T0100Z" in u)
    assert statuses[old] == "superseded"
    con.close()


def test_late_restatement_of_a_closed_month_replaces_only_that_month(
    tmp_path: Path, export: Cur2Export
) -> None:
    export.deliver("2026-11", [hours("i-a", NOV, 5, "2.00")], "nov-1")
    export.deliver("2026-12", [hours("i-a", DEC, 7, "2.00")], "dec-1")
    report, con = _run(tmp_path)
    assert _totals(con) == {"2026-11": (5, Decimal("10.000000")), "2026-12": (7, Decimal("14.000000"))}
    con.close()
    # December is current; November gets a refund line weeks after it closed
    late = hours("i-a", NOV, 5, "2.00") + hours("i-a", NOV, 1, "-3.00", kind="Refund")
    export.deliver("2026-11", [late], "nov-2")
    report, con = _run(tmp_path)
    assert [o.status for o in report.outcomes if "2026-12" in o.uri] == ["unchanged", "unchanged"]
    assert _totals(con) == {"2026-11": (6, Decimal("7.000000")), "2026-12": (7, Decimal("14.000000"))}
    con.close()


def test_a_restatement_takes_the_tag_sets_only_its_old_lines_used_with_it(
    tmp_path: Path, export: Cur2Export
) -> None:
    nov = [
        hours("i-a", NOV, 2, "1.00", tags={"user:team": "nlp"}),
        hours("i-b", NOV, 2, "1.00", tags={"user:team": "cv"}),
    ]
    export.deliver("2026-11", nov, "nov-1")
    export.deliver("2026-12", [hours("i-a", DEC, 2, "1.00", tags={"user:team": "nlp"})], "dec-1")
    report, con = _run(tmp_path)
    assert not report.rejected, report.summary()
    assert sorted(r[0] for r in con.execute("select team from billing_tag_sets").fetchall()) == ["cv", "nlp"]
    con.close()
    # November restated: i-b is now tagged 'vision'; 'cv' no longer carries spend, 'nlp' still does
    nov[1] = hours("i-b", NOV, 2, "1.00", tags={"user:team": "vision"})
    export.deliver("2026-11", nov, "nov-2")
    report, con = _run(tmp_path)
    assert not report.rejected, report.summary()
    assert sorted(r[0] for r in con.execute("select team from billing_tag_sets").fetchall()) == [
        "nlp",
        "vision",
    ]
    by_team = con.execute(
        "select team, x_billing_period, count(*) from billing_line_items group by all order by all"
    ).fetchall()
    assert by_team == [("nlp", "2026-11", 2), ("nlp", "2026-12", 2), ("vision", "2026-11", 2)]
    con.close()


def test_a_manifest_naming_a_missing_file_rejects_the_delivery_and_keeps_the_old_version(
    tmp_path: Path, export: Cur2Export
) -> None:
    export.deliver("2026-11", [hours("i-a", NOV, 4, "1.00")], "exec-1")
    _, con = _run(tmp_path)
    con.close()
    # the next refresh is half-written: its manifest lists a part that is not there (yet)
    export.deliver("2026-11", [hours("i-a", NOV, 4, "9.00")], "exec-2", extra_listed=["cur2-00002.csv.gz"])
    report, con = _run(tmp_path)
    [manifest] = [o for o in report.rejected if o.uri.endswith("Manifest.json")]
    assert "cur2-00002.csv.gz" in (manifest.error or "") and "not in the source" in (manifest.error or "")
    assert report.exit_code == 1
    assert _totals(con) == {"2026-11": (4, Decimal("4.000000"))}  # the previous version stays
    con.close()


def test_periods_without_a_manifest_wait_when_manifests_are_required(
    tmp_path: Path, export: Cur2Export
) -> None:
    write_config(
        tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/, options: {manifest: required}}\n"
    )
    export.deliver("2026-11", [hours("i-a", NOV, 4, "1.00")], "exec-1", manifest=False)
    report, con = _run(tmp_path)
    assert not report.outcomes
    assert any("no manifest yet" in n for n in report.notes)
    assert _totals(con) == {}
    con.close()


def test_legacy_cur_new_assembly_replaces_the_month(tmp_path: Path) -> None:
    import json

    from tests.helpers.paths import FIXTURES

    landing = tmp_path / "landing"
    shutil.copytree(FIXTURES / "billing" / "aws" / "legacy_cur_bucket_layout", landing)
    write_config(tmp_path, "sources:\n  - {name: cur, kind: aws_cur, uri: landing/}\n")
    _, con = _run(tmp_path)
    before = con.execute("select count(*) from billing_line_items").fetchall()[0][0]
    con.close()
    month = landing / "koku-local" / "20180801-20180901"
    old = next(month.glob("*/koku-local-1.csv.gz"))
    # a new assembly: a new folder with a shorter file, and the month manifest pointing at it
    new_id = "22222222-3333-4444-5555-666666666666"
    (month / new_id).mkdir()
    import gzip

    lines = gzip.decompress(old.read_bytes()).decode().splitlines(keepends=True)
    (month / new_id / "koku-local-1.csv.gz").write_bytes(gzip.compress("".join(lines[:101]).encode()))
    doc = json.loads((month / "koku-local-Manifest.json").read_text())
    doc["assemblyId"] = new_id
    doc["reportKeys"] = [f"/koku-local/20180801-20180901/{new_id}/koku-local-1.csv.gz"]
    (month / "koku-local-Manifest.json").write_text(json.dumps(doc))
    report, con = _run(tmp_path)
    assert not report.rejected, report.summary()
    assert before > 100
    assert con.execute("select count(*) from billing_line_items").fetchall()[0][0] == 100
    status = dict(con.execute("select uri, status from ingest_files").fetchall())
    assert status[str(old.resolve())] == "superseded"
    con.close()


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    """A billing source without an export layout: plain CUR 2.0 CSV files in one folder."""
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "nov.csv.gz").write_bytes(csv_bytes(hours("i-a", NOV, 6, "1.50")))
    (landing / "dec.csv.gz").write_bytes(csv_bytes(hours("i-b", DEC, 4, "2.00")))
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    return landing


def test_a_removed_file_takes_its_rows_with_it(tmp_path: Path, plain: Path) -> None:
    _, con = _run(tmp_path)
    con.close()
    (plain / "dec.csv.gz").unlink()
    report, con = _run(tmp_path)
    assert [o.status for o in report.outcomes if o.uri.endswith("dec.csv.gz")] == ["removed"]
    assert _totals(con) == {"2026-11": (6, Decimal("9.000000"))}
    assert con.execute("select status from ingest_files where uri like '%dec.csv.gz'").fetchall() == [
        ("removed",)
    ]
    con.close()


def test_removed_files_keep_their_rows_with_on_removed_keep(tmp_path: Path, plain: Path) -> None:
    write_config(
        tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/, options: {on_removed: keep}}\n"
    )
    _, con = _run(tmp_path)
    con.close()
    (plain / "dec.csv.gz").unlink()
    report, con = _run(tmp_path)
    assert any("kept" in n for n in report.notes)
    assert _totals(con) == {"2026-11": (6, Decimal("9.000000")), "2026-12": (4, Decimal("8.000000"))}
    con.close()


def test_a_renamed_file_is_not_read_again_and_its_rows_follow(tmp_path: Path, plain: Path) -> None:
    _, con = _run(tmp_path)
    con.close()
    (plain / "dec.csv.gz").rename(plain / "december-final.csv.gz")
    report, con = _run(tmp_path)
    assert [o.status for o in report.outcomes if "dec" in o.uri] == ["renamed"]
    assert _totals(con) == {"2026-11": (6, Decimal("9.000000")), "2026-12": (4, Decimal("8.000000"))}
    files = {
        r[0].rsplit("/", 1)[-1]
        for r in con.execute("select distinct x_source_file from billing_line_items").fetchall()
    }
    assert files == {"nov.csv.gz", "december-final.csv.gz"}
    # the next run sees nothing new
    con.close()
    report, con = _run(tmp_path)
    assert {o.status for o in report.outcomes} == {"unchanged"}
    con.close()


def test_a_redelivered_identical_file_is_not_counted_twice(tmp_path: Path, plain: Path) -> None:
    _, con = _run(tmp_path)
    con.close()
    shutil.copyfile(plain / "nov.csv.gz", plain / "nov (1).csv.gz")
    report, con = _run(tmp_path)
    [dup] = [o for o in report.outcomes if o.uri.endswith("nov (1).csv.gz")]
    assert dup.status == "duplicate" and "same bytes as" in (dup.error or "")
    assert report.exit_code == 0
    assert _totals(con) == {"2026-11": (6, Decimal("9.000000")), "2026-12": (4, Decimal("8.000000"))}
    con.close()


def test_savings_plan_and_split_rows_are_never_double_counted(tmp_path: Path, export: Cur2Export) -> None:
    covered = hours("i-a", NOV, 2, "10.00", kind="SavingsPlanCoveredUsage", sp_effective="6.00")
    negation = hours("i-a", NOV, 2, "-10.00", kind="SavingsPlanNegation", sp_effective="")
    split = hours("arn:aws:eks:pod/p1", NOV, 2, "4.00", split_parent="i-a")
    export.deliver("2026-11", [covered + negation + split], "exec-1")
    report, con = _run(tmp_path)
    assert not report.rejected, report.summary()
    billed, effective = con.execute(
        "select sum(billed_cost), sum(effective_cost) from billing_line_items"
    ).fetchall()[0]
    assert billed == Decimal("0.000000")  # covered usage cancelled by its negation; split rows add nothing
    assert effective == Decimal("12.000000")  # the SP effective cost of the two covered hours
    split_cost = con.execute(
        "select sum((x_extra ->> 'split_line_item_split_cost')::decimal(18, 6)) from billing_line_items "
        "where x_extra ->> 'split_line_item_parent_resource_id' = 'i-a'"
    ).fetchall()[0][0]
    assert split_cost == Decimal("8.000000")  # kept for showback, outside the sums
    con.close()


def _restate_with_truncated_part(tmp_path: Path, export: Cur2Export) -> tuple[list[Path], bytes, list[tuple]]:
    """Load November (exec-1); then AWS rewrites it in place (overwrite mode, exec-2, different totals),
    and part 2 of the new version arrives cut short in the middle of its gzip stream. Returns the new
    parts, part 2's full bytes and the rows the first version landed."""
    export.deliver("2026-11", [hours("i-a", NOV, 24, "3.00"), hours("i-b", NOV, 24, "5.00")], "exec-1")
    report, con = _run(tmp_path)
    assert not report.rejected, report.summary()
    assert _totals(con) == {"2026-11": (48, Decimal("192.000000"))}  # 24 x 3.00 + 24 x 5.00
    before = con.execute(
        "select * exclude (x_loaded_at) from billing_line_items order by x_source_file, x_source_row"
    ).fetchall()
    con.close()
    parts = export.deliver(
        "2026-11", [hours("i-a", NOV, 24, "2.50"), hours("i-b", NOV, 24, "4.00")], "exec-2"
    )
    whole = parts[1].read_bytes()
    parts[1].write_bytes(whole[: len(whole) // 2])
    return parts, whole, before


def test_a_restated_month_with_a_truncated_part_keeps_the_loaded_month_and_reports_the_rejection(
    tmp_path: Path, export: Cur2Export
) -> None:
    """The restatement is rejected as a whole (no half month); the month keeps exactly the rows of the
    version loaded before, and the run reports the truncated part."""
    _, _, before = _restate_with_truncated_part(tmp_path, export)
    report, con = _run(tmp_path)
    assert report.exit_code == 1
    by_name = {Path(o.uri).name: o for o in report.outcomes}
    assert by_name["cur2-00002.csv.gz"].status == "rejected"
    assert "cur2-00002.csv.gz: cannot read: the gzip stream is truncated" in (
        by_name["cur2-00002.csv.gz"].error or ""
    )
    for name in ("cur2-00001.csv.gz", "cur2-Manifest.json"):  # the rest of the delivery, and why
        assert by_name[name].status == "rejected"
        assert "not loaded: cur2-00002.csv.gz of the same delivery was rejected" in (
            by_name[name].error or ""
        )
    assert "rejected: " in report.summary() and "gzip stream is truncated" in report.summary()
    # the month is untouched: the same rows, the same totals
    assert _totals(con) == {"2026-11": (48, Decimal("192.000000"))}
    after = con.execute(
        "select * exclude (x_loaded_at) from billing_line_items order by x_source_file, x_source_row"
    ).fetchall()
    assert after == before
    con.close()


def test_after_a_rejected_restatement_the_ledger_still_holds_the_month_and_the_full_delivery_replaces_it(
    tmp_path: Path, export: Cur2Export
) -> None:
    from pipelines.ingest.billing.checks import reconciliation

    parts, whole, _ = _restate_with_truncated_part(tmp_path, export)
    report, con = _run(tmp_path)
    assert report.exit_code == 1
    # every line in the table belongs to a file the ledger holds as loaded
    check = reconciliation(con)
    con.close()
    # once the whole part arrives, the restatement replaces the month: 24 x 2.50 + 24 x 4.00
    parts[1].write_bytes(whole)
    report, con = _run(tmp_path)
    assert check.passed, check.problems
    assert not report.rejected, report.summary()
    assert _totals(con) == {"2026-11": (48, Decimal("156.000000"))}
    con.close()


def test_a_half_written_restatement_keeps_the_ledger_holding_the_loaded_month(
    tmp_path: Path, export: Cur2Export
) -> None:
    """A delivery refused before any file is read (its manifest names a part not there yet) must not
    flip the loaded parts to 'rejected' while their lines stay: reconciliation still passes, and when the
    export later disappears, its lines go with it."""
    from pipelines.ingest.billing.checks import reconciliation

    export.deliver("2026-11", [hours("i-a", NOV, 4, "1.00")], "exec-1")
    _, con = _run(tmp_path)
    con.close()
    export.deliver("2026-11", [hours("i-a", NOV, 4, "9.00")], "exec-2", extra_listed=["cur2-00002.csv.gz"])
    report, con = _run(tmp_path)
    assert report.exit_code == 1
    ledger = dict(con.execute("select regexp_extract(uri, '[^/]*$'), status from ingest_files").fetchall())
    assert ledger["cur2-00001.csv.gz"] == "loaded"  # still holds the 4 lines of exec-1
    assert reconciliation(con).passed
    assert _totals(con) == {"2026-11": (4, Decimal("4.000000"))}
    con.close()
    # November's export disappears (December's arrives): November's lines go with it
    export.deliver("2026-12", [hours("i-a", DEC, 2, "1.00")], "exec-3")
    for p in list((tmp_path / "landing").rglob("*")):
        if p.is_file() and "BILLING_PERIOD=2026-11" in str(p):
            p.unlink()
    _, con = _run(tmp_path)
    assert _totals(con) == {"2026-12": (2, Decimal("2.000000"))}
    con.close()


def test_the_cli_exits_1_and_names_a_rejected_new_version_of_a_loaded_month(
    tmp_path: Path, export: Cur2Export
) -> None:
    from click.testing import CliRunner

    from pipelines.cli import main

    _restate_with_truncated_part(tmp_path, export)
    result = CliRunner().invoke(main, ["--config", str(tmp_path / "wastewatch.yaml"), "ingest"])
    assert result.exit_code == 1, result.output
    assert "rejected: " in result.output and "the gzip stream is truncated" in result.output
