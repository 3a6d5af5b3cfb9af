"""`WASTEWATCH_RUN_HISTORY`: whether CLI runs are recorded in the config's Dagster instance (pipelines/instance.py).

Read without importing Dagster, so the CLI refuses a bad value before it takes the warehouse's lock or
creates anything.
"""

from __future__ import annotations

import os

from pipelines.errors import ConfigError

HISTORY_ENV = "WASTEWATCH_RUN_HISTORY"
HISTORY_MODES = ("sqlite", "off")


def run_history() -> str:
    """What $WASTEWATCH_RUN_HISTORY asks for: `sqlite` (the default, runs recorded for the UI) or `off`."""
    mode = os.environ.get(HISTORY_ENV, "").strip().lower() or "sqlite"
    if mode not in HISTORY_MODES:
        raise ConfigError(
            f"{HISTORY_ENV}={os.environ[HISTORY_ENV]!r} is not one of {', '.join(HISTORY_MODES)} "
            "(sqlite: record runs for the Dagster UI; off: record nothing)"
        )
    return mode
