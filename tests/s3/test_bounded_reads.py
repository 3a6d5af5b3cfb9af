"""Bounded reads through boto3 and by hand (pipelines/net/limits.py): an S3 download that falls below its
throughput floor fails in about one window, naming the object, the floor and the options that move it, and
leaves no partial file; an answer's size cap holds whether or not the answer declares its length."""

from __future__ import annotations

import io
import time
from datetime import datetime
from pathlib import Path

import pytest

from pipelines.config import Source, load_config
from pipelines.errors import ConfigError, S3Error
from pipelines.net import s3 as s3mod
from pipelines.net.limits import AnswerLimits, DownloadFloor, LimitHit, read_answer
from tests.helpers.config import write_config
from tests.helpers.ingest_run import ingest_project
from tests.helpers.slow_peer import slow_peer

OBJECT = b"billing,data\n" * 200  # 2,600 bytes: over eight minutes at the drip's 5 bytes a second
FLOOR = DownloadFloor(min_kbps=1, window_s=1)  # 1 KB/s over each second


@pytest.fixture(autouse=True)
def _credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy credentials: the peer checks no signature, boto3 still signs."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


def _listing(prefix: str, key: str) -> bytes:
    """A ListObjectsV2 answer naming one object of OBJECT's size under `prefix` of bucket `bkt`."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        f"<Name>bkt</Name><Prefix>{prefix}</Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys>"
        f"<IsTruncated>false</IsTruncated><Contents><Key>{key}</Key>"
        f"<LastModified>2026-11-30T00:00:00.000Z</LastModified><ETag>&quot;0f1e2d&quot;</ETag><Size>{len(OBJECT)}</Size>"
        "<StorageClass>STANDARD</StorageClass></Contents></ListBucketResult>"
    ).encode()


def _object(size: int) -> s3mod.S3Object:
    return s3mod.S3Object("bkt", "exports/focus.csv", size, "0f1e2d", datetime(2026, 11, 30))


def test_a_download_below_the_floor_fails_in_about_one_window_and_leaves_no_file(tmp_path: Path) -> None:
    with slow_peer(OBJECT, interval=0.2, content_type="text/csv", headers={"ETag": '"0f1e2d"'}) as peer:
        client = s3mod.client_at(peer.url, "us-east-1", retries=1, floor=FLOOR)
        dest = tmp_path / "cache" / "focus.csv"
        started = time.monotonic()
        with pytest.raises(S3Error) as caught:
            s3mod.download(client, _object(len(OBJECT)), dest)
        took = time.monotonic() - started
    assert str(caught.value).startswith(
        f"s3://bkt/exports/focus.csv: cannot download: {peer.url}/bkt/exports/focus.csv: the download fell "
        "below min_download_kbps = 1 KB/s ("
    ), str(caught.value)
    assert str(caught.value).endswith(
        "download_window = 1 s); lower the source's `min_download_kbps` option or lengthen its `download_window`"
    )
    assert 1.0 <= took < 5.0, took  # the object alone would take over eight minutes
    assert not dest.exists() and not dest.with_name("focus.csv.part").exists()
    assert len(peer.paths) == 1  # not retried


def test_a_download_above_the_floor_arrives_whole(tmp_path: Path) -> None:
    with slow_peer(OBJECT, content_type="text/csv", headers={"ETag": '"0f1e2d"'}) as peer:
        client = s3mod.client_at(peer.url, "us-east-1", retries=1, floor=FLOOR)
        dest = tmp_path / "focus.csv"
        s3mod.download(client, _object(len(OBJECT)), dest)
    assert dest.read_bytes() == OBJECT


def test_an_inventory_source_s_floor_reaches_boto3_s_download_file(tmp_path: Path) -> None:
    """s3_inventory reads its data files with download_file (s3transfer's threads): the client made for the
    source carries its options there too."""
    source = Source(
        name="inv",
        kind="s3_inventory",
        uri="s3://bkt/inventory/",
        options={"min_download_kbps": 1, "download_window": 1, "retries": 1},
    )
    with slow_peer(OBJECT, interval=0.2, content_type="text/csv", headers={"ETag": '"0f1e2d"'}) as peer:
        client = s3mod.client(source.model_copy(update={"endpoint_url": peer.url}), retries=1)
        started = time.monotonic()
        with pytest.raises(LimitHit, match=r"the download fell below min_download_kbps = 1 KB/s"):
            client.download_file("bkt", "inventory/data/1.csv.gz", str(tmp_path / "1.csv.gz"))
        took = time.monotonic() - started
    assert took < 6, took


def test_a_billing_file_below_its_floor_is_rejected_and_the_other_sources_load(tmp_path: Path) -> None:
    """The `min_download_kbps` and `download_window` options of a billing source on S3 reach its downloads."""
    listing = _listing("exports/", "exports/focus.csv")
    with slow_peer(OBJECT, interval=0.2, content_type="text/csv", fast={"/bkt": listing}) as peer:
        sources = (
            f"  - {{name: bill, kind: focus, uri: 's3://bkt/exports/', endpoint_url: '{peer.url}', "
            "options: {min_download_kbps: 1, download_window: 1}}\n"
            "  - {name: slurm, kind: jobs_csv, uri: jobs/}\n"
        )
        jobs = "job_id,user,state,started_at,ended_at,hosts,gpus\nj1,ann,COMPLETED,2026-11-30 01:00:00,2026-11-30 02:00:00,h1,1\n"
        started = time.monotonic()
        report, got = ingest_project(tmp_path, sources, {"jobs/jobs.csv": jobs}, "select job_id from jobs")
        took = time.monotonic() - started
    assert len(report.rejected) == 1, report.summary()
    error = report.rejected[0].error or ""
    assert error.startswith(
        f"s3://bkt/exports/focus.csv: cannot download: {peer.url}/bkt/exports/focus.csv: the download fell "
        "below min_download_kbps = 1 KB/s ("
    ) and error.endswith(
        "download_window = 1 s); lower the source's `min_download_kbps` option or lengthen its `download_window`"
    ), error
    assert got == [{"job_id": "j1"}]
    assert took < 8, took


def test_an_answer_over_its_cap_fails_whether_or_not_it_declares_its_length() -> None:
    limits = AnswerLimits(timeout=5, max_mb=1 / 1024)  # 1 KB
    started = time.monotonic()
    assert read_answer(io.BytesIO(b"x" * 1024), limits, started, "http://h/p") == b"x" * 1024
    with pytest.raises(
        LimitHit, match=r"^http://h/p: the answer is larger than max_response_mb = 0.000976562 MB"
    ):
        read_answer(io.BytesIO(b"x" * 1025), limits, started, "http://u:pw@h/p?token=t")

    class Unread(io.BytesIO):
        def read1(self, size: int = -1) -> bytes:
            raise AssertionError("a body declared too large is not read")

    with pytest.raises(LimitHit, match="larger than max_response_mb"):
        read_answer(Unread(), limits, started, "http://h/p", length="1025")


@pytest.mark.parametrize(
    ("kind", "options", "problem"),
    [
        ("prometheus", "{max_response_mb: 0}", "max_response_mb"),
        ("ec2_instances", "{timeout: -1}", "timeout"),
        ("focus", "{min_download_kbps: 0}", "min_download_kbps"),
        ("s3_listing", "{download_window: 30}", "download_window"),  # a listing downloads nothing
    ],
    ids=["cap-zero", "negative-timeout", "floor-zero", "not-an-option-of-the-kind"],
)
def test_a_limit_that_cannot_be_is_a_config_error_naming_the_key(
    tmp_path: Path, kind: str, options: str, problem: str
) -> None:
    uri = "http://prometheus.internal:9090" if kind == "prometheus" else "s3://b/"  # a URL for the API kind
    write_config(tmp_path, f"sources:\n  - {{name: s, kind: {kind}, uri: '{uri}', options: {options}}}\n")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "wastewatch.yaml")
    assert problem in str(err.value) and "wastewatch.yaml" in str(err.value)


def test_a_jobs_file_below_its_floor_fails_that_file_and_the_other_sources_load(tmp_path: Path) -> None:
    """A non-billing kind downloads its files before loading them: one that fails is a failure of its
    source (named, not loaded, tried again next run), never the end of the ingest."""
    listing = _listing("jobs/", "jobs/jobs.csv")
    with slow_peer(OBJECT, interval=0.2, content_type="text/csv", fast={"/bkt": listing}) as peer:
        sources = (
            f"  - {{name: remote, kind: jobs_csv, uri: 's3://bkt/jobs/', endpoint_url: '{peer.url}', "
            "options: {min_download_kbps: 1, download_window: 1}}\n"
            "  - {name: slurm, kind: jobs_csv, uri: jobs/}\n"
        )
        jobs = "job_id,user,state,started_at,ended_at,hosts,gpus\nj1,ann,COMPLETED,2026-11-30 01:00:00,2026-11-30 02:00:00,h1,1\n"
        report, got = ingest_project(tmp_path, sources, {"jobs/jobs.csv": jobs}, "select job_id from jobs")
    [failure] = report.failures
    assert failure.startswith("source 'remote': s3://bkt/jobs/jobs.csv: cannot download:"), failure
    assert "min_download_kbps = 1 KB/s" in failure
    assert got == [{"job_id": "j1"}]
