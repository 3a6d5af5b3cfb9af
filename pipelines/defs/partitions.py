"""ISO weeks (Monday 00:00 UTC) for findings and reports, from `history_start` to the current week.

The weekly partitions are built when the definitions are (never at import): they start at the config's
`history_start`, else at the week of the earliest data in the warehouse (pipelines/health/coverage.py). The config
is the one the definitions are built for: the CLI's (`definitions_for`), else $WASTEWATCH_CONFIG, else
./wastewatch.yaml, as WastewatchResource resolves it. The CLI, which knows the start already (or needs no
weeks: the nightly ingest), hands it to `definitions_for` and nothing reads the warehouse for it.

Dagster is imported by the functions that build partitions, not with the module (the CLI reads its weeks
before it starts a run).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.config import find_config
from rules import Window

if TYPE_CHECKING:
    import dagster as dg

_BUILDING_FOR: ContextVar[Path | None] = ContextVar("wastewatch_definitions_config", default=None)
# history_start as read once for the definitions built inside `definitions_for` (each partitioned module
# asks for it; reading it opens the warehouse)
_STARTS: ContextVar[dict[date, date] | None] = ContextVar("wastewatch_history_starts", default=None)


@contextmanager
def definitions_for(config_path: Path, history_start: date | None = None) -> Iterator[None]:
    """Definitions built inside this block take their weeks from the config at `config_path`, starting at
    the week of `history_start` when given (else read from the config and the warehouse, once)."""
    today = datetime.now(UTC).date()
    token = _BUILDING_FOR.set(config_path)
    starts = _STARTS.set({} if history_start is None else {today: min(history_start, today)})
    try:
        yield
    finally:
        _BUILDING_FOR.reset(token)
        _STARTS.reset(starts)


def definitions_config_path() -> Path:
    return _BUILDING_FOR.get() or find_config()[0]


def definitions_history_start(today: date) -> date:
    """history_start of the config the definitions are being built for (read once per `definitions_for`)."""
    starts = _STARTS.get()
    from pipelines.health.coverage import load_history_start

    if starts is None:
        return load_history_start(definitions_config_path(), today)
    if today not in starts:
        starts[today] = load_history_start(definitions_config_path(), today)
    return starts[today]


def weekly_partitions_from(start: date) -> dg.WeeklyPartitionsDefinition:
    """Every ISO week from the week of `start` to the current one (end_offset=1: the unfinished week too)."""
    import dagster as dg

    monday = Window.containing(start).start.date()
    return dg.WeeklyPartitionsDefinition(start_date=monday.isoformat(), day_offset=1, end_offset=1)


def weekly_partitions() -> dg.WeeklyPartitionsDefinition:
    """The weeks of the config the definitions are being built for (reads it and the warehouse's extent)."""
    today = datetime.now(UTC).date()
    return weekly_partitions_from(definitions_history_start(today))


def week_to_partition(week: str) -> str:
    """`2026-W48` -> `2026-11-23`, the partition key of that ISO week."""
    return Window.iso_week(week).start.strftime("%Y-%m-%d")


def partition_to_window(key: str) -> Window:
    return Window.containing(datetime.strptime(key, "%Y-%m-%d").date())


def last_complete_week(today: date) -> str:
    window = Window.containing(today).previous()
    return window.label
