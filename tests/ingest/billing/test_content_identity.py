"""Billing content is loaded exactly once: a file with the same bytes (sha256) as one the warehouse holds is
`duplicate`, names its original and is never loaded, whatever its name, run, source or period folder; a
restatement's unchanged parts still load, because what it replaces is left out of the comparison."""

from __future__ import annotations

import shutil
import uuid
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import boto3
import duckdb
import pytest

import pipelines.net.s3 as s3_module
from pipelines.config import load_config
from pipelines.ingest import IngestReport, ingest
from tests.helpers.billing_exports import Cur2Export, csv_bytes, hours, total
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

NOV = datetime(2026, 11, 2)
DEC = datetime(2026, 12, 3)


def _run(root: Path) -> tuple[IngestReport, duckdb.DuckDBPyConnection]:
    config = load_config(root / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    return ingest(con, config), con


def _spend(con: duckdb.DuckDBPyConnection) -> tuple[int, Decimal]:
    n, billed = con.execute("select count(*), sum(billed_cost) from billing_line_items").fetchall()[0]
    return n, billed


def _hourly(con: duckdb.DuckDBPyConnection) -> Decimal:
    from pipelines.transform.build import build_mart

    build_mart(con, "cost_hourly")
    return con.execute("select sum(billed_cost) from cost_hourly").fetchall()[0][0]


def _by_status(report: IngestReport, status: str) -> list[str]:
    return sorted(Path(o.uri).name for o in report.outcomes if o.status == status)


def _ledger(con: duckdb.DuckDBPyConnection, name: str) -> tuple[str, str | None]:
    status, original = con.execute(
        "select status, duplicate_of from ingest_files where uri like '%/' || $n", {"n": name}
    ).fetchall()[0]
    return status, original and Path(original).name


@pytest.fixture
def two_sources(tmp_path: Path) -> tuple[Path, Path]:
    """Two CUR 2.0 sources in one project: `a/` and `b/` (plain files, no export layout)."""
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    write_config(
        tmp_path,
        "sources:\n  - {name: cur-a, kind: aws_cur2, uri: a/}\n  - {name: cur-b, kind: aws_cur2, uri: b/}\n",
    )
    return tmp_path / "a", tmp_path / "b"


def test_the_same_bytes_under_two_names_in_one_run_load_once(tmp_path: Path, two_sources: tuple) -> None:
    a, _ = two_sources
    lines = hours("i-a", NOV, 6, "1.50")
    (a / "nov.csv.gz").write_bytes(csv_bytes(lines))
    (a / "nov-copy.csv.gz").write_bytes(csv_bytes(lines))
    report, con = _run(tmp_path)
    assert not report.rejected, report.summary()
    assert _by_status(report, "loaded") == ["nov-copy.csv.gz"]  # the first by name is the original
    assert _by_status(report, "duplicate") == ["nov.csv.gz"]
    assert _spend(con) == (6, Decimal("9"))
    assert _hourly(con) == Decimal("9")
    assert _ledger(con, "nov.csv.gz") == ("duplicate", "nov-copy.csv.gz")
    assert "  duplicate: " in report.summary() and "same bytes as" in report.summary()
    assert report.exit_code == 0
    con.close()

    # the next run reads neither again and still reports the copy
    report, con = _run(tmp_path)
    assert _by_status(report, "unchanged") == ["nov-copy.csv.gz"]
    assert _by_status(report, "duplicate") == ["nov.csv.gz"]
    assert _spend(con) == (6, Decimal("9"))
    con.close()


def test_a_copy_in_another_source_in_a_later_run_is_not_loaded(tmp_path: Path, two_sources: tuple) -> None:
    a, b = two_sources
    (a / "nov.csv.gz").write_bytes(csv_bytes(hours("i-a", NOV, 6, "1.50")))
    (a / "oct.csv.gz").write_bytes(csv_bytes(hours("i-a", datetime(2026, 10, 5), 2, "1.00")))
    _, con = _run(tmp_path)
    con.close()
    shutil.copyfile(a / "nov.csv.gz", b / "november.csv.gz")
    (b / "dec.csv.gz").write_bytes(csv_bytes(hours("i-a", DEC, 4, "2.00")))
    report, con = _run(tmp_path)
    assert _by_status(report, "duplicate") == ["november.csv.gz"]
    assert _by_status(report, "loaded") == ["dec.csv.gz"]
    assert _spend(con) == (12, Decimal("19"))
    assert _ledger(con, "november.csv.gz") == ("duplicate", "nov.csv.gz")
    con.close()

    # the original goes (its rows with it): the copy is new content again and loads
    (a / "nov.csv.gz").unlink()
    report, con = _run(tmp_path)
    assert _by_status(report, "removed") == ["nov.csv.gz"]
    assert _by_status(report, "loaded") == ["november.csv.gz"]
    assert _spend(con) == (12, Decimal("19"))
    assert _ledger(con, "november.csv.gz") == ("loaded", None)
    con.close()


def test_a_copy_inside_a_billing_period_folder_is_not_loaded(tmp_path: Path, two_sources: tuple) -> None:
    a, b = two_sources
    nov = hours("i-a", NOV, 6, "1.50")
    (a / "nov.csv.gz").write_bytes(csv_bytes(nov))
    _, con = _run(tmp_path)
    con.close()
    # a later run: the same bytes arrive inside a CUR 2.0 period folder (no manifest) with a new part
    folder = b / "cur2" / "data" / "BILLING_PERIOD=2026-11"
    folder.mkdir(parents=True)
    (folder / "part-00001.csv.gz").write_bytes(csv_bytes(nov))
    (folder / "part-00002.csv.gz").write_bytes(csv_bytes(hours("i-b", NOV, 3, "4.00")))
    report, con = _run(tmp_path)
    assert not report.rejected, report.summary()
    assert _by_status(report, "duplicate") == ["part-00001.csv.gz"]
    assert _by_status(report, "loaded") == ["part-00002.csv.gz"]
    assert _spend(con) == (9, Decimal("21"))
    con.close()

    # the period is unchanged on the next run: nothing is read again, the copy is still reported
    report, con = _run(tmp_path)
    assert _by_status(report, "unchanged") == ["nov.csv.gz", "part-00002.csv.gz"]
    assert _by_status(report, "duplicate") == ["part-00001.csv.gz"]
    assert _spend(con) == (9, Decimal("21"))
    con.close()


def test_two_copies_in_one_period_folder_load_once(tmp_path: Path) -> None:
    folder = tmp_path / "landing" / "BILLING_PERIOD=2026-11"
    folder.mkdir(parents=True)
    data = csv_bytes(hours("i-a", NOV, 5, "2.00"))
    (folder / "part-1.csv.gz").write_bytes(data)
    (folder / "part-1 (1).csv.gz").write_bytes(data)
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    report, con = _run(tmp_path)
    assert _by_status(report, "loaded") == ["part-1 (1).csv.gz"]
    assert _by_status(report, "duplicate") == ["part-1.csv.gz"]
    assert _spend(con) == (5, Decimal("10"))
    con.close()


def test_a_manifest_listing_the_same_bytes_twice_rejects_its_delivery(tmp_path: Path) -> None:
    (tmp_path / "landing").mkdir()
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    part = hours("i-a", NOV, 5, "2.00")
    Cur2Export(tmp_path / "landing").deliver("2026-11", [part, part], "exec-1")
    report, con = _run(tmp_path)
    assert report.exit_code == 1
    [why] = {o.error for o in report.rejected if o.uri.endswith("Manifest.json")}
    assert "lists the same bytes twice" in (why or "")
    assert "cur2-00001.csv.gz" in (why or "") and "cur2-00002.csv.gz" in (why or "")
    assert len(report.rejected) == 3  # the manifest and both parts
    assert _spend(con) == (0, None)
    con.close()


@pytest.mark.parametrize("subfolder", [None, "20261104T0100Z"], ids=["overwrite", "create-new"])
def test_a_restatement_reloads_its_unchanged_parts(tmp_path: Path, subfolder: str | None) -> None:
    (tmp_path / "landing").mkdir()
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    export = Cur2Export(tmp_path / "landing")
    same = hours("i-a", NOV, 24, "3.00")
    export.deliver(
        "2026-11", [same, hours("i-b", NOV, 24, "5.00")], "exec-1", subfolder=subfolder and "20261103T0100Z"
    )
    _, con = _run(tmp_path)
    assert _spend(con) == (48, Decimal("192"))
    con.close()
    # AWS restates the month: part 1 is byte for byte what exec-1 delivered (under its old name in
    # overwrite mode, under a new folder in create-new mode), part 2 changed
    restated = hours("i-b", NOV, 24, "4.00")
    export.deliver("2026-11", [same, restated], "exec-2", subfolder=subfolder)
    report, con = _run(tmp_path)
    assert not report.rejected, report.summary()
    assert not _by_status(report, "duplicate")
    assert _by_status(report, "loaded") == ["cur2-00001.csv.gz", "cur2-00002.csv.gz", "cur2-Manifest.json"]
    assert _spend(con) == (48, total(same) + total(restated))
    assert _hourly(con) == total(same) + total(restated)
    con.close()


def test_an_s3_copy_of_a_local_file_is_not_loaded_nor_downloaded_again(
    tmp_path: Path, s3_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "local").mkdir()
    data = csv_bytes(hours("i-a", NOV, 6, "1.50"))
    (tmp_path / "local" / "nov.csv.gz").write_bytes(data)
    bucket = f"dup-{uuid.uuid4().hex[:8]}"
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="cur/2026-11/nov-final.csv.gz", Body=data)
    s3.put_object(Bucket=bucket, Key="cur/2026-11/dec.csv.gz", Body=csv_bytes(hours("i-a", DEC, 4, "2.00")))
    write_config(
        tmp_path,
        "sources:\n  - {name: local, kind: aws_cur2, uri: local/}\n"
        f"  - {{name: remote, kind: aws_cur2, uri: 's3://{bucket}/cur/', endpoint_url: '{s3_server}', "
        "region: us-east-1}\n",
    )
    report, con = _run(tmp_path)
    assert not report.rejected, report.summary()
    assert _by_status(report, "duplicate") == ["nov-final.csv.gz"]
    assert _spend(con) == (10, Decimal("17"))
    assert _ledger(con, "nov-final.csv.gz") == ("duplicate", "nov.csv.gz")
    con.close()

    # the next run knows the copy by its ETag and size: not downloaded, still reported
    fetched: list[str] = []
    real_download = s3_module.download

    def counting_download(client, obj, dest):  # noqa: ANN001, ANN202 - a spy that delegates to the real function
        fetched.append(obj.uri)
        return real_download(client, obj, dest)

    monkeypatch.setattr(s3_module, "download", counting_download)
    report, con = _run(tmp_path)
    assert fetched == []
    assert _by_status(report, "duplicate") == ["nov-final.csv.gz"]
    assert _spend(con) == (10, Decimal("17"))
    con.close()
