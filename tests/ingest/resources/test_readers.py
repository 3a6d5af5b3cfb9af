"""Resources: EC2 DescribeInstances through moto's HTTP server, a hosts CSV, the GPU instance-type catalogue."""

from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import boto3
import pytest

from pipelines.ingest import IngestReport
from pipelines.warehouse import connect, rows
from tests.helpers.ingest_run import ingest_project
from tests.helpers.paths import FIXTURES

HOSTS = FIXTURES / "resources" / "cmdb_hosts.csv"


def _run(
    tmp_path: Path, sources: str, files: dict[str, Path | str] | None = None
) -> tuple[IngestReport, list[dict[str, Any]]]:
    query = "select * from inventory_hosts order by source, host, instance_id"
    return ingest_project(tmp_path, sources, files or {}, query)


def _launch(endpoint: str, region: str) -> dict[str, str]:
    """Five GPU instances in a fresh moto region (regions keep tests apart on the shared server)."""
    ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name=region)
    ids: dict[str, str] = {}
    for i, (itype, name_tag) in enumerate(
        [
            ("p5.48xlarge", "Name"),
            ("p5.48xlarge", "Name"),
            ("p4d.24xlarge", "hostname"),
            ("g6e.12xlarge", None),
            ("p5en.48xlarge", "Name"),
        ]
    ):
        tags = [
            {"Key": "Team", "Value": "nlp" if i < 2 else "vision"},
            {"Key": "user:project", "Value": f"p{i}"},
        ]
        if name_tag:
            tags.append({"Key": name_tag, "Value": f"gpu-{i:02d}"})
        r = ec2.run_instances(
            ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType=itype,
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        )  # fmt: skip
        ids[f"gpu-{i:02d}"] = r["Instances"][0]["InstanceId"]
    ec2.terminate_instances(InstanceIds=[ids["gpu-04"]])
    return ids


def test_ec2_instances_paginated_with_hosts_tags_and_termination(tmp_path: Path, s3_server: str) -> None:
    region = "eu-north-1"
    ids = _launch(s3_server, region)
    source = f"  - {{name: ec2, kind: ec2_instances, uri: 'ec2://{region}', endpoint_url: '{s3_server}', options: {{page_size: 2}}}}\n"
    report, got = _run(tmp_path, source)
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    assert len(got) == 5  # three pages of at most 2
    by_id = {r["instance_id"]: r for r in got}
    assert set(by_id) == set(ids.values())
    first = by_id[ids["gpu-00"]]
    assert (first["host"], first["instance_type"], first["provider"], first["region_id"]) == (
        "gpu-00",
        "p5.48xlarge",
        "AWS",
        region,
    )
    assert first["resource_id"] == first["instance_id"] and first["private_dns"].endswith(".internal")
    assert first["private_ip"].startswith("10.") and isinstance(first["launched_at"], datetime)
    assert (
        first["tags"]["team"] == "nlp"
        and first["tags"]["project"] == "p0"
        and first["tags"]["state"] == "running"
    )
    assert by_id[ids["gpu-02"]]["host"] == "gpu-02"  # a `hostname` tag
    no_tag = by_id[ids["gpu-03"]]
    assert no_tag["host"] == no_tag["private_dns"]  # no host tag: the private DNS name
    gone = by_id[ids["gpu-04"]]
    assert gone["tags"]["state"] == "terminated" and gone["terminated_at"] is not None
    assert first["terminated_at"] is None
    # a second run replaces the listing (whole-source reader), never appends
    report, again = _run(tmp_path, source)
    assert [o.status for o in report.outcomes] == ["loaded"] and len(again) == 5


def test_ec2_filters_and_unreachable_endpoint(tmp_path: Path, s3_server: str) -> None:
    region = "ap-south-1"
    _launch(s3_server, region)
    sources = (
        f"  - {{name: ec2-p5, kind: ec2_instances, uri: 'ec2://{region}', endpoint_url: '{s3_server}', "
        "options: {filters: {instance-type: [p5.48xlarge]}}}\n"
        "  - {name: ec2-down, kind: ec2_instances, uri: 'ec2://us-east-1', endpoint_url: 'http://127.0.0.1:9'}\n"
        "  - {name: cmdb, kind: hosts_csv, uri: hosts/, options: {columns: {instance_id: aws_id}}}\n"
    )
    report, got = _run(tmp_path, sources, {"hosts/cmdb.csv": HOSTS})
    outcome = {o.source: o for o in report.outcomes}
    assert outcome["ec2-p5"].status == "loaded" and outcome["ec2-p5"].rows == 2
    assert outcome["cmdb"].status == "loaded" and outcome["cmdb"].rows == 4
    assert outcome["ec2-down"].status == "rejected"
    assert "ec2://us-east-1: DescribeInstances failed: Could not connect to the endpoint URL" in (
        outcome["ec2-down"].error or ""
    )
    assert {r["instance_type"] for r in got if r["source"] == "ec2-p5"} == {"p5.48xlarge"}


def test_hosts_csv_mapping_aliases_and_extra_columns(tmp_path: Path) -> None:
    report, got = _run(
        tmp_path,
        "  - {name: cmdb, kind: hosts_csv, uri: hosts/, options: {columns: {instance_id: aws_id}, provider: AWS}}\n",
        {"hosts/cmdb.csv": HOSTS},
    )
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    by_host = {r["host"]: r for r in got}
    h = by_host["gpu-a100-01"]
    assert (h["instance_id"], h["resource_id"], h["instance_type"], h["region_id"], h["provider"]) == (
        "i-0a1b2c3d4e5f60003", "i-0a1b2c3d4e5f60003", "p4d.24xlarge", "us-west-2", "AWS",
    )  # fmt: skip
    assert h["tags"] == {"launched": "2026-09-15 10:30:00", "rack": "r07", "team": "vision"}
    bare = by_host["dgx-a100-03"]
    assert (bare["instance_id"], bare["instance_type"], bare["tags"]) == (None, None, {"team": "speech"})


def test_hosts_csv_times_and_bad_lines(tmp_path: Path) -> None:
    text = (
        "host,instance_id,launched_at,terminated_at,tags\n"
        'n1,i-1,2026-11-01T09:00:00,,"{""team"": ""nlp""}"\n'
        "n2,i-2,2026-11-01T09:00:00+01:00,2026-11-20 18:00:00,\n"
    )
    report, got = _run(
        tmp_path,
        "  - {name: h, kind: hosts_csv, uri: h/, options: {timezone: Asia/Tokyo}}\n",
        {"h/a.csv": text},
    )
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    assert [(r["host"], r["launched_at"], r["terminated_at"], r["tags"]) for r in got] == [
        ("n1", datetime(2026, 11, 1, 0, 0), None, {"team": "nlp"}),
        ("n2", datetime(2026, 11, 1, 8, 0), datetime(2026, 11, 20, 9, 0), None),
    ]


@pytest.mark.parametrize(
    ("row", "where", "problem"),
    [
        (",i-9,2026-11-01T09:00:00,,", "bad.csv:3: column 'host'", "empty host"),
        ("n9,i-9,yesterday,,", "bad.csv:3: column 'launched_at'", "expected an ISO 8601 time"),
        ("n9,i-9,,,[1]", "bad.csv:3: column 'tags'", "tags is not a JSON object"),
    ],
)  # fmt: skip
def test_hosts_csv_bad_values_name_line_and_column(
    tmp_path: Path, row: str, where: str, problem: str
) -> None:
    good = "host,instance_id,launched_at,terminated_at,tags\nn1,i-1,2026-11-01T09:00:00,,\n"
    report, got = _run(
        tmp_path,
        "  - {name: h, kind: hosts_csv, uri: h/}\n",
        {"h/bad.csv": good + row + "\n", "h/good.csv": good},
    )
    outcome = {Path(o.uri).name: o for o in report.outcomes}
    assert outcome["good.csv"].status == "loaded" and len(got) == 1
    assert outcome["bad.csv"].status == "rejected"
    assert where in (outcome["bad.csv"].error or "") and problem in (outcome["bad.csv"].error or "")


def test_gpu_instance_type_catalogue(tmp_path: Path) -> None:
    con = connect(tmp_path / f"w-{uuid.uuid4().hex}.duckdb")
    try:
        got = {r["instance_type"]: r for r in rows(con, "select * from gpu_instance_types")}
    finally:
        con.close()
    expect = {
        "p4d.24xlarge": ("AWS", "A100", 8, 40), "p4de.24xlarge": ("AWS", "A100", 8, 80),
        "p5.48xlarge": ("AWS", "H100", 8, 80), "p5e.48xlarge": ("AWS", "H200", 8, 141),
        "p5en.48xlarge": ("AWS", "H200", 8, 141), "g5.48xlarge": ("AWS", "A10G", 8, 24),
        "g6.xlarge": ("AWS", "L4", 1, 24), "g6e.12xlarge": ("AWS", "L40S", 4, 48),
        "a2-highgpu-8g": ("GCP", "A100", 8, 40), "a2-ultragpu-8g": ("GCP", "A100", 8, 80),
        "a3-highgpu-8g": ("GCP", "H100", 8, 80), "a3-megagpu-8g": ("GCP", "H100", 8, 80),
        "a3-ultragpu-8g": ("GCP", "H200", 8, 141),
        "Standard_ND96isr_H100_v5": ("Microsoft", "H100", 8, 80),
        "Standard_ND96isr_H200_v5": ("Microsoft", "H200", 8, 141),
    }  # fmt: skip
    for itype, (provider, model, count, mem) in expect.items():
        r = got[itype]
        assert (r["provider"], r["gpu_model"], r["gpu_count"], r["gpu_memory_gib"]) == (
            provider,
            model,
            count,
            mem,
        ), itype
    families = {t.split(".")[0].split("-")[0] for t in got if "." in t}
    assert {"p4d", "p4de", "p5", "p5e", "p5en", "g5", "g6", "g6e"} <= families
    assert all(r["gpu_count"] >= 1 and r["gpu_memory_gib"] > 0 for r in got.values())
