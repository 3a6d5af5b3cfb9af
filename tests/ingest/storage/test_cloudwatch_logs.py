"""CloudWatch Logs log groups: DescribeLogGroups through moto's HTTP server, and saved listings from files."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3

from pipelines.config import load_config
from pipelines.ingest import IngestReport, ingest
from pipelines.warehouse import rows
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FIXTURES

SAVED = FIXTURES / "storage" / "cloudwatch_logs"
QUERY = "select * from log_groups order by source, listed_at, log_group"


def _ingest(tmp_path: Path, sources: str) -> tuple[IngestReport, list[dict[str, Any]]]:
    write_config(tmp_path, "sources:\n" + sources)
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        return ingest(con, config), rows(con, QUERY)
    finally:
        con.close()


def _groups(endpoint: str, region: str) -> None:
    """Four log groups in a fresh moto region (regions keep tests apart on the shared server)."""
    logs = boto3.client("logs", endpoint_url=endpoint, region_name=region)
    for name, days in [("/ml/train/a", None), ("/ml/train/b", 30), ("/ml/eval", 400), ("/web/app", 7)]:
        logs.create_log_group(logGroupName=name)
        if days is not None:
            logs.put_retention_policy(logGroupName=name, retentionInDays=days)


def test_describe_log_groups_paginated_with_retention(tmp_path: Path, s3_server: str) -> None:
    region = "ca-central-1"
    _groups(s3_server, region)
    source = (
        f"  - {{name: cw, kind: cloudwatch_logs, uri: 'logs://{region}', endpoint_url: '{s3_server}', "
        "options: {page_size: 1, prefix: /ml/}}\n"
    )
    before = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    report, got = _ingest(tmp_path, source)
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    # three pages of one group each; /web/app is outside the prefix
    assert [(r["log_group"], r["retention_in_days"]) for r in got] == [
        ("/ml/eval", 400),
        ("/ml/train/a", None),
        ("/ml/train/b", 30),
    ]
    first = got[0]
    assert first["log_group_arn"] == f"arn:aws:logs:{region}:123456789012:log-group:/ml/eval"
    assert (first["provider"], first["account_id"], first["region_id"]) == ("AWS", "123456789012", region)
    assert first["stored_bytes"] == 0 and first["x_source_file"] == f"logs://{region}"
    assert first["listed_at"] >= before and first["created_at"] is not None
    # a second listing the same day replaces that day's listing, never appends
    report, again = _ingest(tmp_path, source)
    assert [o.status for o in report.outcomes] == ["loaded"] and len(again) == 3


def test_saved_listings_are_dated_by_their_names(tmp_path: Path) -> None:
    shutil.copytree(SAVED, tmp_path / "landing" / "logs")
    report, got = _ingest(tmp_path, "  - {name: saved, kind: cloudwatch_logs, uri: landing/logs/}\n")
    assert [o.status for o in report.outcomes] == ["loaded"] and report.outcomes[0].rows == 6
    assert sorted({r["listed_at"] for r in got}) == [datetime(2026, 11, 22), datetime(2026, 11, 29)]
    train = [r for r in got if r["log_group"] == "/aws/sagemaker/TrainingJobs"]
    assert [r["stored_bytes"] for r in train] == [858993459200, 933163237376]  # 800 GiB, then 869.1 GiB
    assert train[0]["retention_in_days"] is None and train[0]["created_at"] == datetime(2025, 9, 1)
    assert (
        train[0]["log_group_arn"]
        == "arn:aws:logs:us-east-1:111122223333:log-group:/aws/sagemaker/TrainingJobs"
    )
    batch = next(r for r in got if r["log_group"] == "/aws/batch/job")
    assert (batch["retention_in_days"], batch["log_group_class"]) == (365, "INFREQUENT_ACCESS")
    assert batch["x_source_file"].endswith("describe-log-groups-2026-11-22.json")
    # reading the folder again replaces the source's rows
    report, again = _ingest(tmp_path, "  - {name: saved, kind: cloudwatch_logs, uri: landing/logs/}\n")
    assert len(again) == 6


def test_bad_listings_name_the_file_and_keep_the_previous_rows(tmp_path: Path, s3_server: str) -> None:
    folder = tmp_path / "landing" / "logs"
    shutil.copytree(SAVED, folder)
    source = "  - {name: saved, kind: cloudwatch_logs, uri: landing/logs/}\n"
    _ingest(tmp_path, source)
    bad = folder / "describe-log-groups-2026-11-30.json"
    bad.write_text('{"logGroups": [\n  {"logGroupName": "/x",}\n]}\n', encoding="utf-8")
    report, got = _ingest(tmp_path, source)
    assert [o.status for o in report.outcomes] == ["rejected"]
    error = report.outcomes[0].error or ""
    assert str(bad) in error and "line 2, column 25: not JSON" in error
    assert len(got) == 6  # the earlier listings are kept
    doc = json.loads((SAVED / "describe-log-groups-2026-11-29.json").read_text(encoding="utf-8"))
    doc["logGroups"][1]["storedBytes"] = "50 GB"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    report, got = _ingest(tmp_path, source)
    assert "logGroups[1].storedBytes: expected a non-negative whole number, got '50 GB'" in (
        report.outcomes[0].error or ""
    )
    bad.write_text('{"groups": []}', encoding="utf-8")
    report, got = _ingest(tmp_path, source)
    assert "an object with a `logGroups` list" in (report.outcomes[0].error or "") and len(got) == 6
    down = "  - {name: cw-down, kind: cloudwatch_logs, uri: 'logs://us-east-1', endpoint_url: 'http://127.0.0.1:9'}\n"
    report, _ = _ingest(tmp_path, down)
    assert report.outcomes[0].status == "rejected"
    assert "logs://us-east-1: DescribeLogGroups failed:" in (report.outcomes[0].error or "")
