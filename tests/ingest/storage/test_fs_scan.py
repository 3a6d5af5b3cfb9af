"""The fs_scan reader on a real folder tree: a parallel walk, sizes and mtimes, content fingerprints (full
SHA-256 for small files, sampled for large ones), excludes, and checkpoint lineage of file-system paths."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from pipelines.config import ConfigError
from pipelines.ingest.readers.fs_scan import fingerprint
from pipelines.warehouse import scalar
from rules import Window, get_rule
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.storage import OBJECTS, build_storage_marts, project, run_ingest, table


def _tree(root: Path) -> None:
    files = {
        "llm/run-1/step_100/model.pt": b"a" * 3000,
        "llm/run-1/step_200/model.pt": b"b" * 3000,
        "llm/run-2/step_100/model.pt": b"c" * 10,
        "llm/run-2/notes.txt": b"hello",
        ".snapshot/old/model.pt": b"x" * 50,
        "deep/" + "/".join(f"d{i}" for i in range(12)) + "/leaf.bin": b"z",
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (1_790_000_000, 1_790_000_000))  # 2026-09-21T14:13:20Z
    (root / "llm" / "link.pt").symlink_to(root / "llm" / "run-2" / "notes.txt")


def test_a_scan_walks_every_folder_and_records_sizes_times_and_fingerprints(tmp_path: Path) -> None:
    root = tmp_path / "lustre" / "ckpt"
    _tree(root)
    config = project(
        tmp_path,
        "  - {name: lustre, kind: fs_scan, uri: lustre/ckpt, "
        "options: {workers: 4, fingerprint: true, full_hash_max_bytes: 1024, sample_blocks: 4, "
        "sample_block_bytes: 100, exclude: ['.snapshot/*'], storage_class: fsx_lustre, resource_id: fs-0abc}}\n",
    )
    con = new_warehouse(config.warehouse_path)
    report = run_ingest(con, config)
    assert not report.rejected, report.summary()
    got = {r["key"]: r for r in table(con, f"select * from {OBJECTS}")}
    assert sorted(got) == [
        "deep/" + "/".join(f"d{i}" for i in range(12)) + "/leaf.bin",
        "llm/run-1/step_100/model.pt",
        "llm/run-1/step_200/model.pt",
        "llm/run-2/notes.txt",
        "llm/run-2/step_100/model.pt",
    ]  # no symlink, nothing under the excluded .snapshot
    small = got["llm/run-2/notes.txt"]
    assert (small["store"], small["bucket"], small["size_bytes"]) == ("fs", str(root.resolve()), 5)
    assert small["last_modified"] == datetime(2026, 9, 21, 14, 13, 20)
    assert (small["checksum_algorithm"], small["checksum_type"]) == ("SHA256", "FULL_OBJECT")
    # base64 like S3's ChecksumSHA256, so a file-system copy matches an S3 copy's full-object checksum
    assert small["checksum"] == base64.b64encode(hashlib.sha256(b"hello").digest()).decode()
    big = got["llm/run-1/step_100/model.pt"]
    assert (big["checksum_algorithm"], big["checksum_type"]) == ("SAMPLED_SHA256", "SAMPLED")
    assert big["checksum"] != got["llm/run-1/step_200/model.pt"]["checksum"]
    assert (big["storage_class"], big["resource_id"], big["etag"]) == ("FSX_LUSTRE", "fs-0abc", None)
    con.close()


def test_sampled_fingerprints_are_the_same_for_the_same_bytes_and_change_with_a_sampled_block(
    tmp_path: Path,
) -> None:
    data = bytes(range(256)) * 64  # 16 KiB
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    a.write_bytes(data)
    b.write_bytes(data)
    changed = bytearray(data)
    changed[-1] ^= 0xFF  # the last block is always sampled
    c.write_bytes(bytes(changed))
    fp = [fingerprint(p, len(data), 1024, 4, 256) for p in (a, b, c)]
    assert fp[0] == fp[1] and fp[0][:2] == ("SAMPLED_SHA256", "SAMPLED")
    assert fp[2][2] != fp[0][2]
    full = fingerprint(a, len(data), len(data), 4, 256)
    assert full == ("SHA256", "FULL_OBJECT", base64.b64encode(hashlib.sha256(data).digest()).decode())


def test_a_missing_root_is_refused_and_the_previous_scan_stays(tmp_path: Path) -> None:
    root = tmp_path / "mnt" / "data"
    _tree(root)
    config = project(tmp_path, "  - {name: mnt, kind: fs_scan, uri: mnt/data}\n")
    con = new_warehouse(config.warehouse_path)
    assert not run_ingest(con, config).rejected
    (tmp_path / "mnt").rename(tmp_path / "unmounted")
    report = run_ingest(con, config)
    assert report.rejected[0].error == f"{root.resolve()}: no such folder (is the file system mounted?)"
    assert scalar(con, "select count(*) from storage_objects") == 6
    con.close()


def test_option_types_are_config_errors(tmp_path: Path) -> None:
    """A mistyped option stops the run before anything is read, naming the line and the key."""
    _tree(tmp_path / "data")
    with pytest.raises(ConfigError) as err:
        project(
            tmp_path,
            "  - {name: a, kind: fs_scan, uri: data, options: {exclude: '*.tmp'}}\n"
            "  - {name: b, kind: fs_scan, uri: data, options: {fingerprint: 'yes'}}\n"
            "  - {name: c, kind: fs_scan, uri: data, options: {workers: 0}}\n",
        )
    lines = str(err.value).splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == [
        "sources[0].options.exclude: Input should be a valid list",
        "sources[1].options.fingerprint: Input should be a valid boolean",
        "sources[2].options.workers: Input should be greater than or equal to 1",
    ]
    assert [line.split(": ", 1)[0].rsplit(":", 1)[1] for line in lines] == ["2", "3", "4"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder; permissions cannot be denied")
def test_an_unreadable_folder_is_skipped_with_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "data"
    _tree(root)
    locked = root / "llm" / "run-1"
    locked.chmod(0)
    try:
        config = project(tmp_path, "  - {name: data, kind: fs_scan, uri: data}\n")
        con = new_warehouse(config.warehouse_path)
        assert not run_ingest(con, config).rejected
        assert scalar(con, "select count(*) from storage_objects where key like 'llm/run-1/%'") == 0
        assert scalar(con, "select count(*) from storage_objects where key like 'llm/run-2/%'") == 2
        con.close()
    finally:
        locked.chmod(0o755)


def test_failed_runs_on_a_file_system_are_orphaned_checkpoints(tmp_path: Path) -> None:
    root = tmp_path / "lustre" / "ckpt"
    _tree(root)
    config = project(
        tmp_path,
        "  - {name: lustre, kind: fs_scan, uri: lustre/ckpt, options: {storage_class: FSX_LUSTRE}}\n",
        f'checkpoints:\n  - "{root.resolve()}/{{project}}/{{run_id}}/**"\n'
        "prices:\n  storage_gb_month: {FSX_LUSTRE: 0.14}\n",
    )
    con = new_warehouse(config.warehouse_path)
    run_ingest(con, config)
    con.execute(
        "insert into jobs (job_id, scheduler, job_name, state, started_at, ended_at, source, x_source_file, "
        "x_file_id) values ('7', 'slurm', 'run-2', 'FAILED', '2026-09-20', '2026-09-22', 't', 't', 't'), "
        "('8', 'slurm', 'run-1', 'COMPLETED', '2026-09-20', '2026-09-22', 't', 't', 't')"
    )
    build_storage_marts(con)
    frame = get_rule("STO001").evaluate(con, Window.iso_week("2026-W48"))
    found = {r["resource_id"]: r for r in frame.iter_rows(named=True)}
    base = str(root.resolve())
    # run-2 failed; run-1 completed with two checkpoints (fewer than keep_last); the paths no scheduler knows
    # (`.snapshot/old`, `deep/d0`) match the pattern too and were untouched for over two weeks
    assert {k: json.loads(v["evidence"])["category"] for k, v in found.items()} == {
        f"{base}/llm/run-2/": "failed",
        f"{base}/.snapshot/old/": "unknown",
        f"{base}/deep/d0/": "unknown",
    }
    finding = found[f"{base}/llm/run-2/"]
    assert finding["status"] == "waste" and finding["job_id"] == "7"
    assert float(finding["estimated_waste"]) == pytest.approx(15 / 1024**3 * 0.14 * 7 / 30.44, abs=1e-6)
    assert "config" in finding["evidence"]  # the price came from prices.storage_gb_month
    con.close()
