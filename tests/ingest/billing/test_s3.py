"""Billing sources on S3 (moto's real HTTP server on 127.0.0.1, reached by boto3 with endpoint_url)."""

from __future__ import annotations

import os
import uuid
from datetime import datetime
from pathlib import Path

import boto3
import duckdb
import pytest

import pipelines.net.s3 as s3_module
from pipelines.config import load_config
from pipelines.ingest import ingest
from tests.helpers.billing_exports import Cur2Export, hours
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FIXTURES, REPO

NOV = datetime(2026, 11, 2)
# lineage columns name where a line came from (a path vs an s3:// uri, the ledger row, the run time):
# they differ by design; every other column must be identical
LINEAGE = ("x_source_file", "x_file_id", "x_loaded_at")


def _upload(s3_server: str, bucket: str, folder: Path, prefix: str) -> None:
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            s3.upload_file(str(p), bucket, f"{prefix}/{p.relative_to(folder).as_posix()}")


def _table(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    columns = [
        r[0]
        for r in con.execute(
            "select column_name from information_schema.columns where table_name = 'billing_line_items' "
            "order by ordinal_position"
        ).fetchall()
        if r[0] not in LINEAGE
    ]
    assert len(columns) > 60 and "x_source_name" in columns  # every FOCUS and x_ column but lineage
    select = ", ".join(f'"{c}"' for c in columns)
    return con.execute(f"select {select} from billing_line_items order by all").fetchall()  # noqa: S608 - catalog names


def _project(tmp_path: Path, name: str, uri: str, endpoint: str | None = None) -> Path:
    root = tmp_path / name
    root.mkdir()
    extra = f", endpoint_url: '{endpoint}', region: us-east-1" if endpoint else ""
    write_config(root, f"sources:\n  - {{name: cur2, kind: aws_cur2, uri: '{uri}'{extra}}}\n")
    return root


def test_the_same_export_from_a_folder_and_from_s3_gives_identical_tables(
    tmp_path: Path, s3_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = Cur2Export(tmp_path / "export")
    export.deliver(
        "2026-11",
        [hours("i-a", NOV, 30, "3.25", tags={"user_team": "nlp"}), hours("i-b", NOV, 20, "1.5")],
        "e1",
    )
    bucket = f"billing-{uuid.uuid4().hex[:8]}"
    _upload(s3_server, bucket, tmp_path / "export", "exports")

    local = _project(tmp_path, "local", str(tmp_path / "export"))
    remote = _project(tmp_path, "remote", f"s3://{bucket}/exports/", s3_server)
    tables = []
    for root in (local, remote):
        config = load_config(root / "wastewatch.yaml")
        con = new_warehouse(config.warehouse_path)
        report = ingest(con, config)
        assert not report.rejected, report.summary()
        tables.append(_table(con))
        con.close()
    assert len(tables[0]) == 50
    assert tables[0] == tables[1]

    # the cache is cleaned after the run
    config = load_config(remote / "wastewatch.yaml")
    assert not any(p.is_file() for p in config.cache_path.rglob("*")) if config.cache_path.exists() else True

    # a second run downloads nothing: the ledger knows every object (ETag and size)
    fetched: list[str] = []
    real_download = s3_module.download

    def counting_download(s3, obj, dest):  # noqa: ANN001, ANN202 - a spy that delegates to the real function
        fetched.append(obj.uri)
        return real_download(s3, obj, dest)

    monkeypatch.setattr(s3_module, "download", counting_download)
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    assert {o.status for o in report.outcomes} == {"unchanged"}
    assert fetched == []
    con.close()

    # a restated period on S3: only its new objects are downloaded, and the totals are the new ones
    export.deliver("2026-11", [hours("i-a", NOV, 30, "3.00"), hours("i-b", NOV, 20, "1.5")], "e2")
    _upload_objects(s3_server, bucket, tmp_path / "export", "exports")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    assert sorted(Path(u).name for u in fetched) == [
        "cur2-00001.csv.gz",
        "cur2-00002.csv.gz",
        "cur2-Manifest.json",
    ]
    assert (
        con.execute("select sum(billed_cost) from billing_line_items").fetchall()[0][0] == 30 * 3 + 20 * 1.5
    )
    con.close()


def _upload_objects(s3_server: str, bucket: str, folder: Path, prefix: str) -> None:
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            s3.upload_file(str(p), bucket, f"{prefix}/{p.relative_to(folder).as_posix()}")


def test_every_billing_kind_reads_s3(tmp_path: Path, s3_server: str) -> None:
    bucket = f"kinds-{uuid.uuid4().hex[:8]}"
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    samples = {
        "focus": FIXTURES / "billing" / "focus_sample_1.0.csv",
        "aws_cur": FIXTURES / "billing" / "aws" / "2023-06-01.csv",
        "azure": FIXTURES / "billing" / "azure" / "azure_ea_sample-anonymous-ea-export-dataset.csv",
        "gcp": FIXTURES / "billing" / "gcp" / "2022-08-01_5.csv",
    }
    lines = []
    for kind, path in samples.items():
        s3.upload_file(str(path), bucket, f"{kind}/{path.name}")
        lines.append(
            f"  - {{name: {kind.replace('_', '-')}, kind: {kind}, uri: 's3://{bucket}/{kind}/', endpoint_url: '{s3_server}'}}"
        )
    write_config(tmp_path, "sources:\n" + "\n".join(lines) + "\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    got = dict(con.execute("select x_source_format, count(*) from billing_line_items group by 1").fetchall())
    assert got == {"focus": 1000, "aws_cur": 3, "azure": 27, "gcp": 9}
    uris = {r[0] for r in con.execute("select distinct x_source_file from billing_line_items").fetchall()}
    assert all(u.startswith(f"s3://{bucket}/") for u in uris)
    con.close()


def test_a_missing_bucket_is_reported_and_other_sources_still_load(tmp_path: Path, s3_server: str) -> None:
    (tmp_path / "landing").mkdir()
    (tmp_path / "landing" / "f.csv").write_bytes((FIXTURES / "billing" / "focus_sample_1.0.csv").read_bytes())
    write_config(
        tmp_path,
        f"sources:\n  - {{name: gone, kind: aws_cur2, uri: 's3://no-such-bucket-{uuid.uuid4().hex[:6]}/x/', "
        f"endpoint_url: '{s3_server}'}}\n  - {{name: f, kind: focus, uri: landing/}}\n",
    )
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    [bad] = report.rejected
    assert "no-such-bucket" in (bad.error or "") and "NoSuchBucket" in (bad.error or "")
    assert report.rows_into("billing_line_items") == 1000
    con.close()


STREAM_CHILD = """
import json, os, resource, sys
from datetime import datetime
import boto3
from pipelines.net.s3 import S3Object, download
endpoint, bucket, key, size, etag, dest = sys.argv[1:7]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
s3.head_object(Bucket=bucket, Key=key)  # warm up the client before the baseline
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
download(s3, S3Object(bucket, key, int(size), etag, datetime(2026, 1, 1)), __import__("pathlib").Path(dest), chunk=1 << 20)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"before_kib": before, "after_kib": after}))
"""


def test_large_objects_are_streamed_to_disk_not_held_in_memory(tmp_path: Path, s3_server: str) -> None:
    """A 48 MiB object is downloaded by a separate process whose peak RSS grows by far less than that (under
    32 MiB: an object held in memory would grow it by its whole size)."""
    import json
    import subprocess
    import sys

    bucket = f"big-{uuid.uuid4().hex[:8]}"
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    size = 48 << 20
    blob = tmp_path / "blob.bin"
    with blob.open("wb") as f:
        for _ in range(size >> 20):
            f.write(os.urandom(1 << 20))
    s3.upload_file(str(blob), bucket, "big/blob.bin")
    etag = s3.head_object(Bucket=bucket, Key="big/blob.bin")["ETag"].strip('"')
    dest = tmp_path / "cache" / "blob.bin"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", STREAM_CHILD, s3_server, bucket, "big/blob.bin", str(size), etag, str(dest)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=120,
    )
    rss = json.loads(out.stdout.strip().splitlines()[-1])
    assert dest.stat().st_size == size and dest.read_bytes() == blob.read_bytes()
    grew_mib = (rss["after_kib"] - rss["before_kib"]) / 1024
    assert grew_mib < 32, f"peak RSS grew by {grew_mib:.0f} MiB while downloading a {size >> 20} MiB object"
