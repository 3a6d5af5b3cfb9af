"""Fixtures of the Dagster tests: a project folder for the new-files sensor."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.config import write_config
from tests.helpers.paths import FOCUS_SAMPLE, copy_into


@pytest.fixture
def sensor_config(tmp_path: Path) -> Path:
    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "billing")
    (tmp_path / "landing" / "telemetry").mkdir(parents=True)
    return write_config(
        tmp_path,
        """
        sources:
          - {name: focus, kind: focus, uri: landing/billing/}
          - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
        """,
    )
