"""The s3_listing reader against moto's S3 server over HTTP: objects page by page, checksums, incomplete multipart
uploads and their parts, the bucket's region; a listing cut off mid-pagination is refused and the previous
listing stays."""

from __future__ import annotations

import http.client
import os
import threading
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import boto3
import pytest

from pipelines.warehouse import scalar
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.storage import OBJECTS, build_storage_marts, project, run_ingest, table

MIB = 1024 * 1024


@pytest.fixture
def s3(s3_server: str):  # noqa: ANN201 - a boto3 client
    return boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")


class _Proxy(BaseHTTPRequestHandler):
    """Forwards every request to the moto server; while `cut` is set, drops the connection of any
    ListObjectsV2 request that continues a listing (a network failure mid-pagination)."""

    upstream: tuple[str, int]
    cut = threading.Event()
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if self.cut.is_set() and "continuation-token=" in self.path:
            self.close_connection = True
            self.connection.shutdown(2)  # the peer sees the connection reset, no response
            return
        conn = http.client.HTTPConnection(*self.upstream, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        conn.close()

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward  # noqa: N815 - http.server's names


@pytest.fixture
def proxy(s3_server: str) -> Iterator[tuple[str, threading.Event]]:
    parts = urlsplit(s3_server)
    handler = type("Proxy", (_Proxy,), {"upstream": (parts.hostname, parts.port), "cut": threading.Event()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.cut
    finally:
        server.shutdown()
        server.server_close()


def test_a_listing_reads_every_page_strips_etag_quotes_and_finds_the_region(
    tmp_path: Path, s3, s3_server: str
) -> None:
    s3.create_bucket(Bucket="list-us-1")
    s3.create_bucket(Bucket="list-eu-1", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    for i in range(5):
        s3.put_object(Bucket="list-us-1", Key=f"runs/r{i}/step 100{i}/x.pt", Body=b"x" * (i + 1))
    s3.put_object(Bucket="list-us-1", Key="elsewhere/y", Body=b"y")
    s3.put_object(Bucket="list-eu-1", Key="d/a.bin", Body=b"abc", StorageClass="STANDARD_IA")
    config = project(
        tmp_path,
        f"  - {{name: us, kind: s3_listing, uri: 's3://list-us-1/runs/', endpoint_url: '{s3_server}', "
        "options: {page_size: 2}}\n"
        f"  - {{name: eu, kind: s3_listing, uri: 's3://list-eu-1/', endpoint_url: '{s3_server}'}}\n",
    )
    con = new_warehouse(config.warehouse_path)
    report = run_ingest(con, config)
    assert not report.rejected, report.summary()
    got = table(con, f"select * from {OBJECTS} order by bucket, key")
    assert [(r["bucket"], r["key"], r["size_bytes"]) for r in got] == [
        ("list-eu-1", "d/a.bin", 3),
        *[("list-us-1", f"runs/r{i}/step 100{i}/x.pt", i + 1) for i in range(5)],  # only the prefix
    ]
    eu, first = got[0], got[1]
    assert first["etag"] == "9dd4e461268c8034f5c8564e155c67a6"  # md5(b"x"), without the quotes
    assert not first["is_multipart"] and first["storage_class"] == "STANDARD"
    assert (first["region_id"], eu["region_id"], eu["storage_class"]) == (
        "us-east-1",
        "eu-west-1",
        "STANDARD_IA",
    )
    assert isinstance(first["inventory_at"], datetime)
    assert first["inventory_date"] == first["inventory_at"].date()
    # a second run replaces the first listing (one snapshot per source), it does not append
    s3.delete_object(Bucket="list-us-1", Key="runs/r0/step 1000/x.pt")
    run_ingest(con, config)
    assert scalar(con, "select count(*) from storage_objects where bucket = 'list-us-1'") == 4
    con.close()


def test_checksums_and_incomplete_multipart_uploads(tmp_path: Path, s3, s3_server: str) -> None:
    s3.create_bucket(Bucket="list-ck-1")
    s3.put_object(Bucket="list-ck-1", Key="a/one.bin", Body=b"hello", ChecksumAlgorithm="SHA256")
    s3.put_object(Bucket="list-ck-1", Key="a/plain.bin", Body=b"plain")
    up = s3.create_multipart_upload(Bucket="list-ck-1", Key="ckpt/run-9/step_5/model.pt")
    for n, size in ((1, 5 * MIB), (2, 2 * MIB)):
        s3.upload_part(
            Bucket="list-ck-1",
            Key="ckpt/run-9/step_5/model.pt",
            UploadId=up["UploadId"],
            PartNumber=n,
            Body=os.urandom(size),
        )
    config = project(
        tmp_path,
        f"  - {{name: ck, kind: s3_listing, uri: 's3://list-ck-1/', endpoint_url: '{s3_server}', "
        "options: {checksums: true}}\n",
        "prices:\n  storage_gb_month: {STANDARD: 0.023}\n",
    )
    con = new_warehouse(config.warehouse_path)
    assert not run_ingest(con, config).rejected
    objs = {r["key"]: r for r in table(con, "select * from storage_objects")}
    assert objs["a/one.bin"]["checksum_algorithm"] == "SHA256"
    assert (
        objs["a/one.bin"]["checksum"] == "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="
    )  # base64 sha256("hello")
    assert objs["a/one.bin"]["checksum_type"] == "FULL_OBJECT"
    # recent SDKs add a CRC32 to every upload by default: a full-object checksum for single-part objects
    assert objs["a/plain.bin"]["checksum_algorithm"] == "CRC32"
    assert objs["a/plain.bin"]["checksum_type"] == "FULL_OBJECT"
    uploads = table(con, "select * from storage_uploads")
    assert [(u["key"], u["parts"], u["size_bytes"], u["storage_class"]) for u in uploads] == [
        ("ckpt/run-9/step_5/model.pt", 2, 7 * MIB, "STANDARD")
    ]
    assert uploads[0]["upload_id"] == up["UploadId"] and uploads[0]["initiated"] is not None
    build_storage_marts(con)
    from rules import Window, get_rule

    frame = get_rule("STO004").evaluate(con, Window.iso_week("2026-W48"))
    assert frame.height == 1
    finding = frame.row(0, named=True)
    assert finding["resource_id"] == "s3://list-ck-1/" and finding["status"] == "waste"
    assert float(finding["estimated_waste"]) == pytest.approx(7 / 1024 * 0.023 * 7 / 30.44, abs=1e-6)
    assert '"price_source":"config"' in finding["evidence"].replace(" ", "")
    con.close()


def test_a_listing_cut_off_mid_pagination_is_refused_and_the_previous_listing_stays(
    tmp_path: Path, s3, proxy: tuple[str, threading.Event], s3_server: str
) -> None:
    endpoint, cut = proxy
    s3.create_bucket(Bucket="list-cut-1")
    s3.create_bucket(Bucket="list-cut-2")
    for i in range(3):
        s3.put_object(Bucket="list-cut-1", Key=f"k{i}", Body=b"1")
    s3.put_object(Bucket="list-cut-2", Key="other", Body=b"2")
    config = project(
        tmp_path,
        f"  - {{name: cut, kind: s3_listing, uri: 's3://list-cut-1/', endpoint_url: '{endpoint}', "
        "options: {page_size: 2, retries: 2}}\n"
        f"  - {{name: other, kind: s3_listing, uri: 's3://list-cut-2/', endpoint_url: '{s3_server}'}}\n",
    )
    con = new_warehouse(config.warehouse_path)
    assert not run_ingest(con, config).rejected  # through the proxy, all pages arrive
    assert scalar(con, "select count(*) from storage_objects where bucket = 'list-cut-1'") == 3
    for i in range(3, 6):
        s3.put_object(Bucket="list-cut-1", Key=f"k{i}", Body=b"1")
    cut.set()
    report = run_ingest(con, config)
    assert [r.source for r in report.rejected] == ["cut"]  # the other source still loaded
    error = report.rejected[0].error or ""
    assert error.startswith("s3://list-cut-1/: listing interrupted after 1 page(s) (2 objects): ")
    assert "the previous one is kept" in error
    assert scalar(con, "select count(*) from storage_objects where bucket = 'list-cut-1'") == 3
    assert scalar(con, "select count(*) from storage_objects where bucket = 'list-cut-2'") == 1
    cut.clear()
    assert not run_ingest(con, config).rejected
    assert scalar(con, "select count(*) from storage_objects where bucket = 'list-cut-1'") == 6
    con.close()


def test_a_missing_bucket_is_refused_clearly(tmp_path: Path, s3_server: str) -> None:
    config = project(
        tmp_path,
        f"  - {{name: gone, kind: s3_listing, uri: 's3://no-such-bucket-7/', endpoint_url: '{s3_server}', "
        "options: {retries: 1}}\n",
    )
    con = new_warehouse(config.warehouse_path)
    error = run_ingest(con, config).rejected[0].error or ""
    assert error.startswith(
        "s3://no-such-bucket-7/: listing interrupted after 0 page(s) (0 objects): NoSuchBucket"
    )
    con.close()
