"""Money as the command line prints it: to the cent, with the currency code first."""

from __future__ import annotations

from decimal import Decimal
from typing import Any


def fmt_money(amount: Any, currency: str) -> str:
    return f"{currency} {Decimal(str(amount)):,.2f}"


def cents(amount: Any) -> Decimal:
    return Decimal(str(amount)).quantize(Decimal("0.01"))


def rounding_note(lines: list[Decimal], total: Decimal, currency: str) -> str | None:
    """Say why the per-rule waste lines do not add up to the total waste, when they do not."""
    added = sum(lines, Decimal(0))
    if not lines or added == total:
        return None
    why = (
        "each line is rounded to the cent"
        if abs(added - total) <= Decimal("0.005") * len(lines)
        else "acknowledged findings are left out of the total"
    )
    return f"(the rule lines add to {fmt_money(added, currency)}: {why})"
