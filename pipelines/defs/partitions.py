"""ISO weeks (Monday 00:00 UTC) for findings and reports; the current week is included."""

from __future__ import annotations

from datetime import date, datetime

import dagster as dg

from rules import Window

weekly_partitions = dg.WeeklyPartitionsDefinition(start_date="2023-01-02", day_offset=1, end_offset=1)


def week_to_partition(week: str) -> str:
    """`2026-W48` -> `2026-11-23`, the partition key of that ISO week."""
    return Window.iso_week(week).start.strftime("%Y-%m-%d")


def partition_to_window(key: str) -> Window:
    return Window.containing(datetime.strptime(key, "%Y-%m-%d").date())


def last_complete_week(today: date) -> str:
    window = Window.containing(today).previous()
    return window.label
