"""A project whose warehouse holds findings and whose remediation section points at moto's server."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.config import write_config


@dataclass
class Site:
    config_path: Path
    endpoint: str
    bucket: str  # a bucket name of this test's own (the server is shared by the session)

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(service, endpoint_url=self.endpoint, region_name="us-east-1")


@pytest.fixture
def site(tmp_path: Path, s3_server: str) -> Site:
    path = write_config(
        tmp_path,
        f"""
        remediation:
          s3_endpoint_url: {s3_server}
          ec2_endpoint_url: {s3_server}
          ec2_region: us-east-1
        """,
    )
    return Site(path, s3_server, f"ckpt-{uuid.uuid4().hex[:12]}")
