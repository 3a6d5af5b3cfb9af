"""`advice:` in wastewatch.yaml takes exactly the advisors there are: the config's keys (checked at load, below
the advisors in the layers) and the advisors' own keys are the same set."""

from __future__ import annotations

from typing import get_args

from pipelines.advice import ADVISORS
from pipelines.config import AdvisorKey


def test_every_advisor_is_configurable_and_nothing_else() -> None:
    assert set(get_args(AdvisorKey)) == {a.key for a in ADVISORS}
