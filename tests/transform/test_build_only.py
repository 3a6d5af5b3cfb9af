"""tests/helpers/marts.py: the marts a test builds alone are the mart and every mart it reads, in build order."""

from __future__ import annotations

import pytest

from pipelines.marts.registry import MARTS
from tests.helpers.marts import marts_needed


def test_the_gpu_marts_need_the_resources_and_the_hourly_cost_first() -> None:
    assert marts_needed("gpu_hours", "jobs_enriched") == [
        "resources",
        "cost_hourly",
        "gpu_job_hours",
        "gpu_hours",
        "jobs_enriched",
    ]


@pytest.mark.parametrize("mart", MARTS)
def test_every_mart_comes_after_the_marts_it_reads_and_needs_nothing_more(mart: str) -> None:
    needed = marts_needed(mart)
    assert needed[-1] == mart
    assert needed == [m for m in MARTS if m in needed]
    assert marts_needed(*needed) == needed  # closed: what the others read is there too
