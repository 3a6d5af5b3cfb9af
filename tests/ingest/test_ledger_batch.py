"""The ledger written for a batch of files in one statement, and a text file read once before its load
(pipelines/ingest/ledger.py record_many, pipelines/ingest/sniff.py checksum_and_problem)."""

from __future__ import annotations

import gzip
import hashlib
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.config import Source
from pipelines.ingest import ledger
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadResult
from pipelines.ingest.sniff import HEAD_BYTES, checksum_and_problem, text_problem
from tests.helpers.empty_warehouse import new_warehouse

SMI = "timestamp, index, utilization.gpu [%]\n2026/11/30 00:00:00.000, 0, 5 %\n"


def _file(path: Path, size: int, mtime: datetime) -> SourceFile:
    return SourceFile(uri=str(path), local_path=path, relative=path.name, size=size, modified_at=mtime)


def _row(con, fid: str) -> dict:
    return ledger.previous_many(con, [fid])[fid] | {
        "sums": con.execute(
            "select rows, billed_cost_sum, effective_cost_sum, file_rows, file_billed_cost_sum, "
            "file_effective_cost_sum, currencies, error, delivery_id, loaded_at is not null "
            "from ingest_files where file_id = $id",
            {"id": fid},
        ).fetchone()
    }


def test_a_batch_writes_what_one_statement_a_file_writes_and_keeps_what_a_null_keeps(tmp_path: Path) -> None:
    source = Source(name="bill", kind="focus", uri=str(tmp_path))
    t0, t1 = datetime(2026, 11, 30, 1), datetime(2026, 11, 30, 2)
    files = [_file(tmp_path / f"f{i}.csv", 100 + i, t0) for i in range(3)]
    ids = [ledger.file_id("bill", f) for f in files]
    exact = Decimal("123456789.123456789012")  # every one of the warehouse's 12 decimals
    results = [
        LoadResult(rows=10, billing_period="2026-11", billed_cost_sum=exact, effective_cost_sum=Decimal("-1.5"),
                   file_rows=10, file_billed_cost_sum=exact, file_effective_cost_sum=Decimal("-1.5"),
                   currencies="USD"),
        LoadResult(rows=0, warnings=["a last line cut short"]),
        None,
    ]  # fmt: skip
    one, many = new_warehouse(tmp_path / "one.duckdb"), new_warehouse(tmp_path / "many.duckdb")
    statuses = ["loaded", "loaded", "rejected"]
    errors = [None, "a last line cut short", "f2.csv:3: a NUL byte"]
    for fid, f, r, s, e in zip(ids, files, results, statuses, errors, strict=True):
        ledger.record(one, fid, source, f, "c" * 64, s, e, r, t0, delivery="exec-1")
    ledger.record_many(
        many,
        source,
        t0,
        [
            ledger.Outcome(fid, f, "c" * 64, s, e, r, delivery="exec-1")
            for fid, f, r, s, e in zip(ids, files, results, statuses, errors, strict=True)
        ],
    )
    for fid in ids:
        assert _row(one, fid) == _row(many, fid)
    assert _row(many, ids[0])["sums"][1] == exact

    # a later check that repeats no load (NULL rows, sums, checksum) keeps what the rows held
    moved = [_file(tmp_path / "moved" / f.name, f.size, t1) for f in files]
    ledger.record_many(many, source, t1, [ledger.Outcome(fid, f, None, "loaded") for fid, f in zip(ids, moved, strict=True)])  # fmt: skip
    after = _row(many, ids[0])
    assert after["uri"] == moved[0].uri and after["modified_at"] == t1 and after["checksum"] == "c" * 64
    assert after["sums"][:7] == (10, exact, Decimal("-1.5"), 10, exact, Decimal("-1.5"), "USD")
    assert after["sums"][7:9] == (None, "exec-1")
    assert _row(many, ids[2])["status"] == "loaded" and _row(many, ids[2])["sums"][9]
    ledger.record_many(many, source, t1, [])  # nothing to write is no statement
    assert many.execute("select count(*) from ingest_files").fetchone()[0] == 3


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


CASES = {
    "clean": SMI.encode() * 20_000,
    "nul_in_head": SMI.encode() + b"\0" + SMI.encode(),
    "nul_past_head": SMI.encode() * (HEAD_BYTES // len(SMI) + 50) + b"a\0b\n" + SMI.encode(),
    "utf16_bom": b"\xff\xfe" + SMI.encode("utf-16-le"),
    "all_nul": b"\0" * 1000,
    "empty": b"",
}


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_one_read_gives_the_file_s_sha256_and_the_sniff_s_answer(
    tmp_path: Path, case: str, suffix: str
) -> None:
    path = _write(tmp_path / f"{case}{suffix}", CASES[case])
    digest, found = checksum_and_problem(path)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert found == text_problem(path)
    assert (found is None) == (case in ("clean", "empty"))


def test_a_damaged_gz_is_left_to_the_reader_and_still_hashed(tmp_path: Path) -> None:
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(gzip.compress(SMI.encode() * 5000)[:-40])  # cut short
    assert checksum_and_problem(path) == (hashlib.sha256(path.read_bytes()).hexdigest(), None)
    bad = tmp_path / "not.csv.gz"
    bad.write_bytes(b"plain text named .gz\n")
    assert checksum_and_problem(bad) == (hashlib.sha256(bad.read_bytes()).hexdigest(), None)
