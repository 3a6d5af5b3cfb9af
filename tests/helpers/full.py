"""CI's long form of the suite: `WASTEWATCH_FULL_TESTS=1` (`.ci/run` sets it).

Under it the crash test kills at every failpoint, the property tests draw CI's number of examples, and the
tests marked `full` run: repeated end-to-end variants of a promise that another test in `make test` proves
once (tests/README.md lists them).
"""

from __future__ import annotations

import os

FULL = "WASTEWATCH_FULL_TESTS"


def full_run() -> bool:
    """True when the run is CI's long form."""
    return os.environ.get(FULL, "") not in ("", "0")
