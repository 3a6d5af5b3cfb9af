"""Bounded listing pages (pipelines/net/limits.py): an s3_listing page larger than `max_response_mb` (real
ListObjectsV2 pages from moto's server) rejects the listing and keeps the previous one; a DescribeLogGroups
endpoint that drips its page fails the cloudwatch_logs source at `timeout`. Each names the endpoint, the
limit and the option to raise."""

from __future__ import annotations

import time
from pathlib import Path

import boto3

from tests.helpers.ingest_run import ingest_project
from tests.helpers.slow_peer import slow_peer


def test_a_listing_page_over_max_response_mb_is_refused_and_the_previous_listing_stays(
    tmp_path: Path, s3_server: str
) -> None:
    bucket = "bounded-listing"
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    for i in range(20):
        s3.put_object(Bucket=bucket, Key=f"datasets/{'k' * 200}-{i:02d}.bin", Body=b"x")
    source = (
        f"  - {{name: lst, kind: s3_listing, uri: 's3://{bucket}/', endpoint_url: '{s3_server}', "
        "options: {multipart_uploads: false, max_response_mb: %s}}\n"
    )
    query = "select count(*) as n from storage_objects"
    report, got = ingest_project(tmp_path, source % 1, {}, query)
    assert not report.failures and not report.rejected, report.summary()
    assert got == [{"n": 20}]  # one page of 20 keys of ~220 characters: ~9 KB

    report, again = ingest_project(tmp_path, source % 0.004, {}, query)  # 4 KB
    assert [o.error for o in report.rejected] == [
        f"s3://{bucket}/: listing interrupted after 0 page(s) (0 objects): {s3_server}/{bucket}: the answer "
        "is larger than max_response_mb = 0.004 MB; raise the source's `max_response_mb` option; nothing of "
        "this listing was written, the previous one is kept"
    ]
    assert again == [{"n": 20}]


def test_a_dripping_describe_log_groups_fails_the_source_at_its_timeout(tmp_path: Path) -> None:
    with slow_peer(
        b'{"logGroups": []}' + b" " * 200, interval=0.2, content_type="application/x-amz-json-1.1"
    ) as peer:
        source = (
            f"  - {{name: logs, kind: cloudwatch_logs, uri: 'logs://us-east-1', endpoint_url: '{peer.url}', "
            "options: {timeout: 1}}\n"
        )
        started = time.monotonic()
        report, _ = ingest_project(tmp_path, source, {}, "select count(*) as n from log_groups")
        took = time.monotonic() - started
    assert report.failures == [
        f"source 'logs': DescribeLogGroups: {peer.url}/: the answer did not arrive whole within timeout = 1 s; "
        "raise the source's `timeout` option"
    ]
    assert took < 8, took  # the page alone would take 40 s
    assert len(peer.paths) == 1  # not retried
