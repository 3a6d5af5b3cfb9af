"""transfer_lines: the bill's data-transfer lines, classified by pipelines/catalog/transfer_usage_types.csv,
with the regions their usage type names (AWS region codes from aws_region_codes.csv)."""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.transform.build import build_mart
from tests.helpers.billing_exports import csv_bytes, line
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

DAY = datetime(2026, 11, 24, 3)
EC2 = "Amazon Elastic Compute Cloud"


def _transfer(
    resource: str,
    usage_type: str,
    cost: str,
    region: str = "us-east-1",
    service: str = "Amazon Simple Storage Service",
) -> dict[str, str]:
    row = line(resource, DAY, cost, instance_type="")
    row["line_item_usage_type"] = usage_type
    row["line_item_product_code"] = "AmazonS3"
    row["line_item_usage_amount"] = str(Decimal(cost) / Decimal("0.02"))
    row["pricing_unit"] = "GB"
    row["product"] = json.dumps({"product_name": service, "region_code": region})
    row["identity_line_item_id"] = f"{resource}-{usage_type}"
    return row


def test_cur_usage_types_give_direction_and_regions(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    rows = [
        _transfer("acme-datasets-eu", "EUC1-USE1-AWS-Out-Bytes", "12.00", region="eu-central-1"),
        _transfer("acme-data", "USE1-USW2-AWS-Out-Bytes", "4.00"),
        _transfer("acme-ireland", "EU-APN1-AWS-Out-Bytes", "2.00", region="eu-west-1"),
        _transfer("i-0abc", "USW2-DataTransfer-Regional-Bytes", "1.00", region="us-west-2", service=EC2),
        _transfer("nat-0a", "DataTransfer-Out-Bytes", "9.00", service=EC2),
        _transfer("acme-data", "USW2-USE1-AWS-In-Bytes", "0.50"),  # inbound: free on AWS, not a transfer out
        line("i-gpu", DAY, "98.32"),  # an instance hour
    ]
    (landing / "bill.csv.gz").write_bytes(csv_bytes(rows))
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    assert not report.rejected, report.summary()
    assert build_mart(con, "transfer_lines") == 5

    got = con.execute(
        "select resource_id, bucket, direction, source_region, destination_region, quantity, effective_cost "
        "from transfer_lines order by resource_id, usage_type"
    ).fetchall()
    assert got == [
        ("acme-data", "acme-data", "inter_region", "us-east-1", "us-west-2", 200.0, Decimal("4.000000")),
        ("acme-datasets-eu", "acme-datasets-eu", "inter_region", "eu-central-1", "us-east-1", 600.0, Decimal("12.000000")),
        ("acme-ireland", "acme-ireland", "inter_region", "eu-west-1", "ap-northeast-1", 100.0, Decimal("2.000000")),
        ("i-0abc", None, "inter_zone", "us-west-2", "us-west-2", 50.0, Decimal("1.000000")),
        # no prefix: us-east-1
        ("nat-0a", None, "internet", "us-east-1", "internet", 450.0, Decimal("9.000000")),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("provider", "meter", "direction"),
    [
        ("Microsoft", "Inter-Region Inter Continent Data Transfer Out", "inter_region"),
        ("Microsoft", "Inter-Region Intra Continent Data Transfer Out", "inter_region"),
        ("Microsoft", "Bandwidth Inter Availability Zone Data Transfer Out", "inter_zone"),
        ("Microsoft", "Bandwidth Standard Data Transfer Out", "internet"),
        ("Google Cloud", "Network Inter Region Data Transfer Out from Americas to EMEA", "inter_region"),
        ("Google Cloud", "Network Inter Zone Data Transfer Out", "inter_zone"),
        ("Google Cloud", "Network Internet Data Transfer Out from Americas to EMEA", "internet"),
        ("Google Cloud", "Download Worldwide Destinations (excluding Asia & Australia)", "internet"),
        ("Google Cloud", "Nvidia Tesla H100 GPU running in Americas", None),
        ("Microsoft", "Hot LRS Data Stored", None),
    ],
)
def test_azure_and_google_meters_are_classified(
    tmp_path: Path, provider: str, meter: str, direction: str | None
) -> None:
    con = new_warehouse(tmp_path / "w.duckdb")
    row = con.execute(
        "select direction from transfer_usage_types where field = 'meter' "
        "and starts_with(lower($provider), lower(provider)) and regexp_matches($meter, pattern) "
        "order by priority limit 1",
        {"provider": provider, "meter": meter},
    ).fetchall()
    assert (row[0][0] if row else None) == direction
