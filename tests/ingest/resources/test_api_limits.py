"""Bounded DescribeInstances pages (pipelines/net/limits.py): a page larger than `max_response_mb` (real pages
from moto's server) or still dripping at `timeout` fails the ec2_instances source with one line naming the
endpoint and the option to raise; its earlier rows stay and the other sources load."""

from __future__ import annotations

import time
from pathlib import Path

import boto3

from tests.helpers.ingest_run import ingest_project
from tests.helpers.paths import FIXTURES
from tests.helpers.slow_peer import slow_peer

HOSTS = FIXTURES / "resources" / "cmdb_hosts.csv"
QUERY = "select source, instance_id from inventory_hosts order by source, instance_id"
CMDB = "  - {name: cmdb, kind: hosts_csv, uri: hosts/, options: {columns: {instance_id: aws_id}}}\n"


def test_a_page_over_max_response_mb_fails_the_source_and_keeps_its_rows(
    tmp_path: Path, s3_server: str
) -> None:
    region = "sa-east-1"
    ec2 = boto3.client("ec2", endpoint_url=s3_server, region_name=region)
    ec2.run_instances(ImageId="ami-12c6146b", MinCount=3, MaxCount=3, InstanceType="p5.48xlarge")
    source = (
        f"  - {{name: ec2, kind: ec2_instances, uri: 'ec2://{region}', endpoint_url: '{s3_server}', "
        "options: {max_response_mb: %s}}\n"
    )
    report, got = ingest_project(tmp_path, source % 1 + CMDB, {"hosts/cmdb.csv": HOSTS}, QUERY)
    assert not report.failures, report.summary()
    assert sum(r["source"] == "ec2" for r in got) == 3  # three instances: a page of ~10 KB

    report, again = ingest_project(tmp_path, source % 0.004 + CMDB, {}, QUERY)  # 4 KB
    assert report.failures == [
        f"source 'ec2': DescribeInstances: {s3_server}/: the answer is larger than max_response_mb = 0.004 MB; "
        "raise the source's `max_response_mb` option"
    ]
    assert again == got  # the earlier listing stays, the hosts CSV loaded again


def test_a_dripping_endpoint_fails_the_source_at_its_timeout(tmp_path: Path) -> None:
    page = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<DescribeInstancesResponse '
        b'xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><reservationSet/>'
        b"</DescribeInstancesResponse>"
    )
    with slow_peer(page, interval=0.2, content_type="text/xml") as peer:
        source = (
            f"  - {{name: ec2, kind: ec2_instances, uri: 'ec2://us-east-1', endpoint_url: '{peer.url}', "
            "options: {timeout: 1}}\n"
        )
        started = time.monotonic()
        report, got = ingest_project(tmp_path, source + CMDB, {"hosts/cmdb.csv": HOSTS}, QUERY)
        took = time.monotonic() - started
    assert report.failures == [
        f"source 'ec2': DescribeInstances: {peer.url}/: the answer did not arrive whole within timeout = 1 s; "
        "raise the source's `timeout` option"
    ]
    assert took < 8, took  # the page alone would take 40 s
    assert len(peer.paths) == 1  # not retried
    assert {r["source"] for r in got} == {"cmdb"}
