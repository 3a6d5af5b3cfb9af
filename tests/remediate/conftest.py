"""A project whose warehouse holds findings and whose remediation section points at moto's server."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rules import Window
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


def this_week() -> Window:
    """The ISO week of the wall clock: findings put in it judge instances the test launches (moto dates them now)."""
    return Window.containing(datetime.now(UTC).date())


@pytest.fixture(autouse=True)
def _clear_of_a_weeks_end() -> None:
    """A test that would begin in a week's last two minutes waits for the next week, so every instance it
    launches falls in the week its findings are put in (apply refuses one started after its finding's week)."""
    left = (this_week().end - datetime.now(UTC).replace(tzinfo=None)).total_seconds()
    if left < 120:
        time.sleep(left + 1)
