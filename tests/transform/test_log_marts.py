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
from pipelines.transform.build import build_mart
from pipelines.warehouse import rows
from tests.helpers.billing_exports import csv_bytes, line
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FIXTURES

DAY = datetime(2026, 11, 24, 3)
GROUP = "arn:aws:logs:us-east-1:111122223333:log-group:/aws/sagemaker/TrainingJobs"
EA_SAMPLE = FIXTURES / "billing" / "azure" / "EA_AmortizedCost_Small.csv"
GCP_SAMPLE = (
    FIXTURES / "billing" / "gcp" / "202011_30c31bca571d9b7f3b2c8459dd8bc34a_2020-11-08_2020-11-11.csv"
)


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
    con = new_warehouse(config.warehouse_path)
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


def test_managed_prometheus_storage_is_metric_storage(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    workspace = "arn:aws:aps:eu-west-1:111122223333:workspace/ws-3f2c9a1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b"
    service = "Amazon Managed Service for Prometheus"
    rows_ = [
        _line(workspace, "EU-AMP:MetricStorageByteHrs", "AmazonPrometheus", service, "12.5", "GB-Mo"),
        # ingested samples and query samples are not storage
        _line(workspace, "EU-AMP:MetricSampleCount", "AmazonPrometheus", service, "40000000", "Samples"),
        _line(workspace, "AMP:QuerySamplesProcessed", "AmazonPrometheus", service, "920", "Samples"),
        # CloudWatch's storage usage type on an AMP line would still not be a log line, nor AMP's on CloudWatch
        _line(GROUP, "EU-AMP:MetricStorageByteHrs", "AmazonCloudWatch", "AmazonCloudWatch", "1.0", "GB-Mo"),
    ]
    (landing / "bill.csv.gz").write_bytes(csv_bytes(rows_))
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        assert not ingest(con, config).rejected
        assert build_mart(con, "log_storage_lines") == 1
        (got,) = rows(con, "select * from log_storage_lines")
        assert (got["kind"], got["usage_type"], got["resource_id"], got["log_group_arn"]) == (
            "metric_storage",
            "EU-AMP:MetricStorageByteHrs",
            workspace,
            None,
        )
        assert got["quantity"] == 12.5 and got["included_days"] is None
    finally:
        con.close()


def test_the_real_azure_and_google_log_meters_are_classified(tmp_path: Path) -> None:
    """The Log Analytics retention lines of Microsoft's EA sample (finops-toolkit: MeterCategory Log Analytics,
    MeterName Pay-as-you-go Data Retention, 1 GB/Month) and the Cloud Logging lines of koku's Google export
    (service Stackdriver Logging, SKU Log Volume, usage in bytes) land in log_storage_lines as retention and
    ingestion; no other line of those bills does."""
    for folder, src in (("az", EA_SAMPLE), ("gcp", GCP_SAMPLE)):
        (tmp_path / folder).mkdir()
        shutil.copy(src, tmp_path / folder / src.name)
    write_config(
        tmp_path, "sources:\n  - {name: az, kind: azure, uri: az/}\n  - {name: gcp, kind: gcp, uri: gcp/}\n"
    )
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        assert not ingest(con, config).rejected
        assert build_mart(con, "log_storage_lines") == 12
        got = rows(
            con,
            "select provider, service_name, kind, included_days, unit, count(*) as n, sum(quantity) as quantity, "
            "sum(effective_cost) as cost, min(resource_id) as resource_id from log_storage_lines "
            "group by all order by provider",
        )
        kinds = [
            (r["provider"], r["service_name"], r["kind"], r["included_days"], r["unit"], r["n"]) for r in got
        ]
        assert kinds == [
            ("Google Cloud", "Stackdriver Logging", "ingestion", None, "B", 10),
            ("Microsoft", "Log Analytics", "retention", 31, "GB/Month", 2),
        ]
        google, azure = got
        assert google["quantity"] == 16387.0  # bytes, as the export gives usage.amount
        assert round(azure["quantity"], 8) == round(24.80634996 + 24.86951242, 8)
        assert round(azure["cost"], 6) == Decimal("4.967586")
        assert azure["resource_id"].endswith("/workspaces/sapmon-log-133913327cb44f")
    finally:
        con.close()
