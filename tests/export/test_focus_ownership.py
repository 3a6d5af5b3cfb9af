"""An export deletes or replaces only files it can show it wrote (listed in its manifest, or in a write
record put before the upload started); a folder or prefix holding anything else is refused, exit 2, with
nothing touched, locally, on S3 and through the Dagster asset. What a killed export left (an S3 upload no
manifest names, temp folders of a dead pid) is cleared by the next export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from pipelines.config import load_config
from pipelines.defs.exports.assets import _focus_export_asset, monthly_partitions_from
from pipelines.defs.resources import WastewatchResource
from pipelines.export.focus import (
    MANIFEST,
    UsageError,
    clean_scratch,
    export_focus,
    read_manifest,
)
from tests.export.test_focus import _cli, _costs, _dead_pid, _ingest, _project, _restate_october, _two_periods
from tests.helpers.paths import REPO

MINE = b"my notes, not an export\n"


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _s3(endpoint: str, bucket: str) -> Any:
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    return s3


def _objects(s3: Any, bucket: str) -> dict[str, bytes]:
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    return {k: s3.get_object(Bucket=bucket, Key=k)["Body"].read() for k in sorted(keys)}


# ---------------------------------------------------------------------------------------------------------
# a foreign file is refused and left as it was


def test_a_foreign_file_in_a_partition_folder_is_refused_and_left_byte_identical(tmp_path: Path) -> None:
    """The issue's case: `billing_period=2024-10/mine.txt` and no manifest. Before, the export renamed the
    folder aside and deleted it; now nothing at all is written there."""
    root = _project(tmp_path / "project")
    con = _two_periods(root)
    out = tmp_path / "out"
    (out / "billing_period=2024-10").mkdir(parents=True)
    (out / "billing_period=2024-10" / "mine.txt").write_bytes(MINE)
    with pytest.raises(UsageError) as refused:
        export_focus(con, str(out))
    con.close()
    assert str(refused.value) == (
        f"{out}: holds 1 file(s) no wastewatch FOCUS export wrote (billing_period=2024-10/mine.txt); "
        "nothing was touched: move them away, or export into an empty or new folder or prefix"
    )
    assert _tree(out) == {"billing_period=2024-10/mine.txt": MINE}
    assert sorted(p.name for p in out.iterdir()) == ["billing_period=2024-10"]  # no scratch, no manifest


def test_beside_a_manifest_only_the_files_it_lists_are_ours(tmp_path: Path) -> None:
    """After a good export, a file dropped into a partition, one beside the manifest, an empty folder and a
    link are each foreign: all are named, and the export's own files are not touched either."""
    root = _project(tmp_path / "project")
    con = _two_periods(root)
    out = tmp_path / "out"
    export_focus(con, str(out))
    (out / "billing_period=2024-09" / "mine.txt").write_bytes(MINE)
    (out / "README.md").write_bytes(MINE)
    (out / "billing_period=2030-01").mkdir()
    (out / "latest").symlink_to(out / "billing_period=2024-09")
    before = _tree(out)
    with pytest.raises(UsageError) as refused:
        export_focus(con, str(out), periods=["2024-09"])
    con.close()
    assert (
        "holds 4 file(s) no wastewatch FOCUS export wrote (README.md, billing_period=2024-09/mine.txt, "
        "billing_period=2030-01/, latest)" in str(refused.value)
    )
    assert _tree(out) == before
    assert (out / "latest").is_symlink()


def test_the_cli_refuses_a_foreign_file_with_exit_2_in_one_line(tmp_path: Path, s3_server: str) -> None:
    """Locally and on S3 (the issue's `--out s3://bucket/other/` that deleted `theirs.parquet`)."""
    root = _project(tmp_path / "project")
    _two_periods(root).close()
    out = tmp_path / "out"
    (out / "billing_period=2026-11").mkdir(parents=True)
    (out / "billing_period=2026-11" / "mine.txt").write_bytes(MINE)
    local = _cli(root, "export", "focus", "--out", str(out))
    assert local.exit_code == 2, local.output
    errors = [line for line in local.output.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: {out}: holds 1 file(s) no wastewatch FOCUS export wrote (billing_period=2026-11/mine.txt); "
        "nothing was touched: move them away, or export into an empty or new folder or prefix"
    ]
    assert "Traceback" not in local.output
    assert _tree(out) == {"billing_period=2026-11/mine.txt": MINE}

    s3 = _s3(s3_server, "own-cli")
    s3.put_object(Bucket="own-cli", Key="other/billing_period=2026-11/theirs.parquet", Body=b"PAR1 theirs")
    remote = _cli(root, "export", "focus", "--out", "s3://own-cli/other/", "--endpoint-url", s3_server)
    assert remote.exit_code == 2, remote.output
    assert (
        "error: s3://own-cli/other: holds 1 file(s) no wastewatch FOCUS export wrote "
        "(billing_period=2026-11/theirs.parquet); nothing was touched" in remote.output
    )
    assert _objects(s3, "own-cli") == {"other/billing_period=2026-11/theirs.parquet": b"PAR1 theirs"}


def test_on_s3_only_files_a_manifest_or_a_write_record_names_are_ours(tmp_path: Path, s3_server: str) -> None:
    """An upload nothing names (what a killed export of an older wastewatch left), and a write record that
    names a file outside its own write folder, are foreign: the export refuses and deletes none of them. A
    neighbouring prefix that merely starts alike is not the destination."""
    s3 = _s3(s3_server, "own-s3")
    root = _project(tmp_path / "project")
    con = _two_periods(root)
    dest = "s3://own-s3/finops/focus"
    export_focus(con, dest, s3_client=lambda: s3)
    s3.put_object(Bucket="own-s3", Key="finops/focus-old/notes.txt", Body=MINE)  # another prefix
    unnamed = "finops/focus/billing_period=2024-10/19990101T000000Z-deadbeef/part-0.parquet"
    s3.put_object(Bucket="own-s3", Key=unnamed, Body=b"PAR1 half")
    theirs = "finops/focus/billing_period=2024-10/theirs.parquet"
    s3.put_object(Bucket="own-s3", Key=theirs, Body=b"PAR1 theirs")
    forged = "finops/focus/_writes/19990101T000000Z-0badcafe.json"
    record = {
        "kind": "wastewatch-focus-export-write", "write_id": "19990101T000000Z-0badcafe", "period": "2024-10",
        "files": ["billing_period=2024-10/theirs.parquet"], "replaces": [], "host": "elsewhere", "pid": 1,
    }  # fmt: skip
    s3.put_object(Bucket="own-s3", Key=forged, Body=json.dumps(record).encode())
    before = _objects(s3, "own-s3")
    with pytest.raises(UsageError) as refused:
        export_focus(con, dest, periods=["2024-10"], s3_client=lambda: s3)
    con.close()
    assert (
        "s3://own-s3/finops/focus: holds 3 file(s) no wastewatch FOCUS export wrote "
        "(_writes/19990101T000000Z-0badcafe.json, billing_period=2024-10/19990101T000000Z-deadbeef/part-0.parquet, "
        "billing_period=2024-10/theirs.parquet)" in str(refused.value)
    )
    assert _objects(s3, "own-s3") == before


def test_the_dagster_asset_refuses_a_foreign_file_too(tmp_path: Path) -> None:
    root = _project(tmp_path / "project")
    _two_periods(root).close()
    out = tmp_path / "out"
    (out / "billing_period=2024-09").mkdir(parents=True)
    (out / "billing_period=2024-09" / "mine.txt").write_bytes(MINE)
    asset = _focus_export_asset(monthly_partitions_from(date(2024, 9, 17)))
    result = dg.materialize(
        [asset],
        partition_key="2024-09",
        resources={"wastewatch": WastewatchResource(config_path=str(root / "wastewatch.yaml"))},
        run_config={"ops": {"exports__focus": {"config": {"out": str(out)}}}},
        raise_on_error=False,
    )
    assert not result.success
    failure = result.failure_data_for_node("exports__focus")
    assert failure is not None and failure.user_failure_data is not None
    assert failure.user_failure_data.description == (
        f"{out}: holds 1 file(s) no wastewatch FOCUS export wrote (billing_period=2024-09/mine.txt); "
        "nothing was touched: move them away, or export into an empty or new folder or prefix"
    )
    assert _tree(out) == {"billing_period=2024-09/mine.txt": MINE}


# ---------------------------------------------------------------------------------------------------------
# what a killed export left is ours, and the next export clears it

# an export of October to S3 that SIGKILLs itself at a chosen request (a boto3 event hook on a real client):
# right before the manifest names the new upload, or right before the replaced files are deleted
_KILLED_EXPORT = """
import os, signal, sys
import boto3
from pipelines.export.focus import export_focus
from pipelines.warehouse import connect

endpoint, warehouse, dest, point = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")

def die(params, **_):
    if point == "delete" or params["Key"].endswith("_manifest.json"):
        os.kill(os.getpid(), signal.SIGKILL)

event = "DeleteObjects" if point == "delete" else "PutObject"
s3.meta.events.register(f"before-parameter-build.s3.{event}", die)
export_focus(connect(warehouse), dest, periods=["2024-10"], s3_client=lambda: s3)
"""


@pytest.mark.parametrize("point", ["manifest", "delete"])
def test_a_killed_s3_export_is_cleared_by_the_next_one(
    tmp_path: Path, s3_server: str, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """A real `kill -9` of an export restating October: before its manifest (its upload is named by its write
    record only) or after it (the replaced files are named by the record only). The next export, of
    September, deletes what the manifest does not name, the record, and the dead pid's temp folder; the
    bucket then holds exactly the manifest and the files it lists."""
    bucket = f"killed-{point}"
    s3 = _s3(s3_server, bucket)
    root = _project(tmp_path / "project")
    con = _two_periods(root)
    dest = f"s3://{bucket}/focus"
    export_focus(con, dest, s3_client=lambda: s3)
    first = read_manifest(dest, s3)
    con.close()
    _restate_october(root)
    con = _ingest(root)
    con.close()

    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(temp)}
    warehouse = str(load_config(root / "wastewatch.yaml").warehouse_path)
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_EXPORT, s3_server, warehouse, dest, point],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    left = _objects(s3, bucket)
    (record_key,) = [k for k in left if k.startswith("focus/_writes/")]
    record = json.loads(left[record_key])
    (upload,) = record["files"]
    assert record["replaces"] == first["periods"]["2024-10"]["files"]
    assert f"focus/{upload}" in left
    (scratch,) = list(temp.iterdir())  # the dead export's temp folder, with its Parquet file
    assert scratch.name.startswith(f".focus-export-{record['pid']}-") and any(scratch.rglob("part-0.parquet"))

    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    con = _ingest(root)
    result = export_focus(con, dest, periods=["2024-09"], s3_client=lambda: s3)
    con.close()
    manifest = read_manifest(dest, s3)
    listed = {f"focus/{f}" for p in manifest["periods"].values() for f in p["files"]}
    assert set(_objects(s3, bucket)) == {"focus/_manifest.json", *listed}
    assert list(temp.iterdir()) == []
    assert f"temporary folder {scratch} removed" in result.cleaned
    if point == "manifest":  # October is still the first export's
        assert manifest["periods"]["2024-10"] == first["periods"]["2024-10"]
        gone = upload
    else:  # October is the killed export's: the files it replaced are gone
        assert manifest["periods"]["2024-10"]["files"] == [upload]
        (gone,) = record["replaces"]
    assert f"{record_key.removeprefix('focus/')}: 1 file(s) of an unfinished export removed ({gone})" in (
        result.cleaned
    )


def test_temp_folders_of_dead_pids_are_removed_and_no_others(tmp_path: Path) -> None:
    dead = _dead_pid()
    stale = tmp_path / f".focus-export-{dead}-0123abcd"
    (stale / "billing_period=2024-09").mkdir(parents=True)
    (stale / "billing_period=2024-09" / "part-0.parquet").write_bytes(b"PAR1" * 1000)
    kept = [
        tmp_path / f".focus-export-{os.getppid()}-0123abcd",  # a live process's
        tmp_path / f".focus-export-{os.getpid()}-0123abcd",  # this process's own
        tmp_path / f".focus-export-{dead}-not-ours",  # not a name an export makes
        tmp_path / f"focus-export-{dead}-0123abcd",
    ]
    for folder in kept:
        folder.mkdir()
    file_alike = tmp_path / f".focus-export-{dead}-89abcdef"  # a file, not an export's folder
    file_alike.write_bytes(MINE)
    assert clean_scratch(tmp_path) == [stale]
    assert sorted(tmp_path.iterdir()) == sorted([*kept, file_alike])


def test_a_partition_a_killed_export_renamed_in_before_its_manifest_is_rolled_back(tmp_path: Path) -> None:
    """Killed between renaming a CSV October into place (the Parquet one moved aside) and writing the
    manifest: the `.old-` folder shows the CSV is that export's, so it is not refused as foreign; the next
    export (of September) puts the October the manifest names back."""
    root = _project(tmp_path / "project")
    con = _two_periods(root)
    out = tmp_path / "out"
    export_focus(con, str(out))
    parquet = (out / "billing_period=2024-10" / "part-0.parquet").read_bytes()
    dead = _dead_pid()
    (out / "billing_period=2024-10").rename(out / f".billing_period=2024-10.old-{dead}-abcd1234")
    (out / "billing_period=2024-10").mkdir()
    (out / "billing_period=2024-10" / "part-0.csv").write_text("BilledCost\n1\n")
    # the `.old-` folder vouches for the export's data files only, not for a file someone put beside them
    (out / "billing_period=2024-10" / "mine.txt").write_bytes(MINE)
    with pytest.raises(UsageError, match=r"\(billing_period=2024-10/mine\.txt\)"):
        export_focus(con, str(out), periods=["2024-09"])
    (out / "billing_period=2024-10" / "mine.txt").unlink()
    result = export_focus(con, str(out), periods=["2024-09"])
    con.close()
    assert result.cleaned == [
        f"billing_period=2024-10 put back from .billing_period=2024-10.old-{dead}-abcd1234"
    ]
    assert _tree(out / "billing_period=2024-10") == {"part-0.parquet": parquet}
    assert sorted(p.name for p in out.iterdir()) == [
        MANIFEST,
        "billing_period=2024-09",
        "billing_period=2024-10",
    ]
    assert len(_costs(out / "billing_period=2024-10" / "part-0.parquet")) == 1
