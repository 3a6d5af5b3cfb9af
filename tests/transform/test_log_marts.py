"""log_storage_lines (the bill's CloudWatch Logs lines, classified by pipelines/catalog/log_usage_types.csv) and
log_groups_current (the newest log-group listing with each group's growth), from a CUR 2.0 bill and two saved
`describe-log-groups` listings a week apart."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from decimal import Decimal
from pathlib import Path

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.transform import build_mart
from pipelines.warehouse import connect, rows
from tests.helpers.billing_exports import csv_bytes, line
from tests.helpers.config import write_config
from tests.helpers.paths import FIXTURES

DAY = datetime(2026, 11, 24, 3)
GROUP = "arn:aws:logs:us-east-1:111122223333:log-group:/aws/sagemaker/TrainingJobs"


def _line(
    resource: str, usage_type: str, product: str, service: str, quantity: str, unit: str
) -> dict[str, str]:
    row = line(resource, DAY, "1.50", instance_type="")
    row["line_item_usage_type"] = usage_type
    row["line_item_product_code"] = product
    row["line_item_usage_amount"] = quantity
    row["pricing_unit"] = unit
    row["product"] = json.dumps({"product_name": service, "region_code": "us-east-1"})
    row["identity_line_item_id"] = f"{resource}-{usage_type}"
    return row


def test_log_lines_are_classified_and_groups_get_their_growth(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    rows_ = [
        _line(
            GROUP + ":*", "USE1-TimedStorage-ByteHrs", "AmazonCloudWatch", "AmazonCloudWatch", "29.0", "GB-Mo"
        ),
        _line(GROUP, "USE1-DataProcessing-Bytes", "AmazonCloudWatch", "AmazonCloudWatch", "3.0", "GB"),
        # S3 bills its storage under the same usage type: not a log line
        _line(
            "acme-ckpt", "TimedStorage-ByteHrs", "AmazonS3", "Amazon Simple Storage Service", "900", "GB-Mo"
        ),
        _line("i-gpu", "USE1-BoxUsage:p5.48xlarge", "AmazonEC2", "Amazon Elastic Compute Cloud", "1", "Hrs"),
    ]
    (landing / "bill.csv.gz").write_bytes(csv_bytes(rows_))
    shutil.copytree(FIXTURES / "storage" / "cloudwatch_logs", tmp_path / "logs")
    # a second copy of the newest listing under another name counts once
    shutil.copyfile(
        tmp_path / "logs" / "describe-log-groups-2026-11-29.json", tmp_path / "logs" / "copy-2026-11-29.json"
    )
    write_config(
        tmp_path,
        "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n"
        "  - {name: saved, kind: cloudwatch_logs, uri: logs/}\n",
    )
    config = load_config(tmp_path / "wastewatch.yaml")
    con = connect(config.warehouse_path)
    try:
        report = ingest(con, config)
        assert not report.rejected, report.summary()
        assert build_mart(con, "log_storage_lines") == 2
        got = rows(con, "select * from log_storage_lines order by kind")
        assert [(r["kind"], r["usage_type"], r["log_group_arn"]) for r in got] == [
            ("ingestion", "USE1-DataProcessing-Bytes", GROUP),
            ("storage", "USE1-TimedStorage-ByteHrs", GROUP),  # the trailing :* dropped
        ]
        assert got[1]["quantity"] == 29.0 and got[1]["effective_cost"] == Decimal("1.5")
        assert build_mart(con, "log_groups_current") == 3
        groups = {r["log_group"]: r for r in rows(con, "select * from log_groups_current")}
        train = groups["/aws/sagemaker/TrainingJobs"]
        assert train["listed_at"] == datetime(2026, 11, 29) and train["prev_listed_at"] == datetime(
            2026, 11, 22
        )
        assert train["stored_bytes"] - train["prev_stored_bytes"] == 74169778176
        assert train["growth_bytes_per_day"] == 74169778176 / 7  # 69.1 GiB over the week
        assert round(train["age_days"], 6) == (datetime(2026, 11, 29) - datetime(2025, 9, 1)).days
        assert groups["/eks/gpu-cluster/application"]["growth_bytes_per_day"] == 0
        assert groups["/aws/batch/job"]["retention_in_days"] == 365
    finally:
        con.close()
