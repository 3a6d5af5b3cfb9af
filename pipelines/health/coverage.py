"""Which weeks the warehouse holds data for: the first week wastewatch can evaluate (`history_start`) and
the plain answer to a run on a week without any data.

The weekly partitions (pipelines/defs/partitions.py) start at `history_start` from wastewatch.yaml, else at
the earliest data in the warehouse (sql/reports/rpt_data_span.sql), so a historical trace can be reported
on; the CLI says when a week has no data at all, naming the weeks that do, instead of writing an empty
report that reads as "all fine".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

import duckdb

from pipelines.config import Config, load_config
from pipelines.errors import ConfigError, WarehouseError
from pipelines.warehouse import connect, rows, sql_text
from rules import Window


@dataclass(frozen=True)
class Span:
    """One kind of data (billing, GPU telemetry, jobs, storage inventories) and the time it covers."""

    kind: str
    first_at: datetime
    last_at: datetime
    in_window: int

    def weeks(self) -> str:
        first, last = Window.containing(self.first_at.date()).label, Window.containing(self.last_at.date())
        return first if first == last.label else f"{first} to {last.label}"


def data_spans(con: duckdb.DuckDBPyConnection, window: Window) -> list[Span]:
    """The kinds of data the warehouse holds (kinds without rows left out), with their rows in `window`."""
    got = rows(
        con, sql_text("reports", "rpt_data_span"), {"window_start": window.start, "window_end": window.end}
    )
    return [
        Span(r["kind"], r["first_at"], r["last_at"] or r["first_at"], int(r["in_window"]))
        for r in got
        if r["first_at"] is not None
    ]


def earliest_data(con: duckdb.DuckDBPyConnection) -> date | None:
    """The day of the earliest row of any kind, or None when the warehouse holds nothing."""
    spans = data_spans(con, Window.containing(date.today()))
    return min((s.first_at.date() for s in spans), default=None)


def _readable(config: Config) -> Path | None:
    """The file to read the warehouse's extent from: the published copy (readable while a run writes the
    live file), else the live file, else None."""
    for path in (config.published_path, config.warehouse_path):
        if path.exists():
            return path
    return None


def history_start(config: Config | None, today: date, con: duckdb.DuckDBPyConnection | None = None) -> date:
    """The first day of the first week wastewatch evaluates and reports.

    `history_start` from wastewatch.yaml when set; else the earliest data in the warehouse (read through
    `con` when given, a connection to it the caller keeps; else its published copy when there is one); else,
    with no config or no data yet, the current week (nothing before it can be reported). Never later than
    today: the current week is always a week.
    """
    if config is not None and config.history_start is not None:
        return min(config.history_start, today)
    if con is not None:
        first = earliest_data(con)
        return min(first, today) if first is not None else Window.containing(today).start.date()
    path = _readable(config) if config is not None else None
    if path is None:
        return Window.containing(today).start.date()
    try:
        own = connect(path, read_only=True, wait=0)
    except WarehouseError:
        return Window.containing(today).start.date()  # held by a writer: its next load sees the data
    try:
        first = earliest_data(own)
    except duckdb.Error:  # an older warehouse missing a table: nothing to date the history by
        first = None
    finally:
        own.close()
    return min(first, today) if first is not None else Window.containing(today).start.date()


def load_history_start(config_path: Path, today: date) -> date:
    """history_start for the config at `config_path`; a missing or broken config gives the current week
    (the run itself then fails on that config, saying why)."""
    try:
        config = load_config(config_path) if config_path.is_file() else None
    except ConfigError:
        config = None
    return history_start(config, today)


def no_data_message(
    config: Config,
    window: Window,
    con: duckdb.DuckDBPyConnection | None = None,
    outcome: str = "nothing was evaluated and no report was written",
) -> str | None:
    """None when the week has data; else what to tell the user: that the week has none and which weeks do.

    Worded so that it never reads as an all-clear: `outcome` says what was not done. Reads `con` when given
    (a run's own connection), else opens the warehouse read-only.
    """
    path = config.warehouse_path
    spans: list[Span] = []
    if con is not None:
        spans = data_spans(con, window)
    elif path.exists():
        own = connect(path, read_only=True)
        try:
            spans = data_spans(own, window)
        finally:
            own.close()
    if any(s.in_window for s in spans):
        return None
    held = (
        "; ".join(f"{s.kind} {s.weeks()}" for s in spans)
        if spans
        else "nothing yet (run `wastewatch ingest`)"
    )
    return (
        f"{window.label}: no data in this week (no billing, GPU telemetry, jobs or storage inventory falls in "
        f"it), so {outcome}; this is not an all-clear. "
        f"The warehouse holds: {held}."
    )
