"""Units every layer prices with, defined once (the SQL side is the `days_per_month()` macro)."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

# A month's storage price turns into a week's as price x 7 / DAYS_PER_MONTH; weekly waste x DAYS_PER_MONTH / 7
# is its monthly run-rate. 30.44 is the Gregorian year's 365.2425 days / 12, rounded as AWS's GB-Mo is.
DAYS_PER_MONTH = Decimal("30.44")
# A billed "GB" of storage is 2^30 bytes (AWS's GB-Mo).
GIB = 1024**3
HOURS_PER_WEEK = 168

DURATION = re.compile(r"^\s*(\d+)\s*(m|h|d|w)\s*$")
_UNIT = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


def parse_duration(text: str) -> timedelta:
    """`90m`, `36h`, `3d`, `1w` as a timedelta (ValueError naming the value otherwise)."""
    m = DURATION.match(text)
    if not m:
        raise ValueError(f"{text!r}: expected a duration such as 90m, 36h, 3d or 1w")
    return int(m.group(1)) * _UNIT[m.group(2)]


def describe_duration(span: timedelta) -> str:
    """A span as people say it: `5 days 3 hours`, `7 hours`, `40 minutes`."""
    minutes = int(span.total_seconds() // 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    parts = [(days, "day"), (hours, "hour")] if days else [(hours, "hour"), (mins, "minute")]
    words = [f"{n} {unit}{'' if n == 1 else 's'}" for n, unit in parts if n]
    return " ".join(words) or "0 minutes"
