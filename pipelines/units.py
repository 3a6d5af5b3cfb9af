"""Units every layer prices with, defined once (the SQL side is the `days_per_month()` macro)."""

from __future__ import annotations

from decimal import Decimal

# A month's storage price turns into a week's as price x 7 / DAYS_PER_MONTH; weekly waste x DAYS_PER_MONTH / 7
# is its monthly run-rate. 30.44 is the Gregorian year's 365.2425 days / 12, rounded as AWS's GB-Mo is.
DAYS_PER_MONTH = Decimal("30.44")
# A billed "GB" of storage is 2^30 bytes (AWS's GB-Mo).
GIB = 1024**3
HOURS_PER_WEEK = 168
