"""Inline SVG charts for the HTML report: no scripts, no fonts, no network; they scale to the page width.

Each chart carries its numbers twice: drawn, and in `data-*` attributes and `<title>` tooltips, so a
test (or a screen reader) can read what was drawn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from markupsafe import Markup, escape

WASTE = "#c2410c"
SPEND = "#93c5fd"
INK = "#1d2433"
MUTED = "#5b6578"
LINE = "#d9dee7"
IDLE = "#b45309"
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _num(value: Any) -> float:
    return float(value) if value is not None else 0.0


def _short(value: float) -> str:
    """1250000 -> 1.25M, 45300 -> 45.3k, 120000 -> 120k, 0.25 -> 0.25: axis labels that fit a phone."""
    a = abs(value)
    div, suffix = (1e6, "M") if a >= 1e6 else (1e3, "k") if a >= 1e3 else (1.0, "")
    digits = 1 if a >= 1e3 and a / div < 100 else 0  # 45.3k, 1.2M; 120k, 950
    text = f"{value / div:.{digits + 1}f}".rstrip("0").rstrip(".")  # an axis step of 2.5 keeps its .5
    return text + suffix


MAX_INTERVALS = 6  # grid intervals of a value axis: few enough to read, enough to end near the maximum


def axis_ticks(value: float) -> list[float]:
    """The value axis from 0 to the first round number at or above `value`, in 1-2-2.5-5 steps: a 110k
    maximum gets 0, 20k ... 120k rather than an axis up to 200k."""
    if value <= 0:
        return [0.0, 1.0]
    exponent = math.floor(math.log10(value)) - 2
    while True:
        for mantissa in (1, 2, 2.5, 5):
            step = mantissa * 10.0**exponent
            intervals = math.ceil(value / step - 1e-9)
            if intervals <= MAX_INTERVALS:
                return [step * i for i in range(intervals + 1)]
        exponent += 1


def _nice_max(value: float) -> float:
    return axis_ticks(value)[-1]


# font size of chart text in the drawing's own units: the trend and histogram are 560 units wide, so on a
# 390 px phone (about 366 px of drawing) their text is 16 x 366 / 560 = 10.5 px; the heatmap's is larger
# because the heatmap is wider
FONT = 16
HEATMAP_FONT = 18
# the trend charts sit up to three in a row on the main page (about 340 px wide at 1280 px): 18 units are
# 18 x 340 / 560 = 10.9 px there
TREND_FONT = 18


def _grid(ticks: list[float], x0: float, x1: float, top: float, plot_h: float, font: int = FONT) -> list[str]:
    """Horizontal grid lines with their value labels, 0 at the bottom and ticks[-1] at the top."""
    out = []
    for v in ticks:
        y = top + plot_h - plot_h * v / ticks[-1]
        out.append(
            f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="{LINE}"/>'
            f'<text x="{x0 - 6}" y="{y + 5:.1f}" text-anchor="end" font-size="{font}" fill="{MUTED}">'
            f"{_short(v)}</text>"
        )
    return out


def trend(weeks: Sequence[dict[str, Any]], currency: str) -> Markup:
    """Spend (light bars) and counted waste (dark bars in front) per ISO week, oldest first."""
    width, height, left, bottom, top = 560, 224, 52, 46, 14
    plot_w, plot_h = width - left - 10, height - bottom - top
    ticks = axis_ticks(max((_num(w["spend"]) for w in weeks), default=0))
    top_value = ticks[-1]
    n = max(len(weeks), 1)
    slot = plot_w / n
    bar = min(slot * 0.7, 60)
    parts = [
        f'<svg class="chart" id="chart-trend-{escape(currency)}" viewBox="0 0 {width} {height}" '
        f'width="100%" role="img" aria-label="Spend and waste per week, {escape(currency)}" '
        f'preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg">'
    ]
    parts.extend(_grid(ticks, left, width - 10, top, plot_h, TREND_FONT))
    for i, w in enumerate(weeks):
        spend, waste = _num(w["spend"]), w.get("waste")
        x = left + slot * i + (slot - bar) / 2
        h = plot_h * spend / top_value
        label = escape(w["label"])
        waste_text = "not evaluated" if waste is None else f"{currency} {Decimal(waste):,.2f}"
        parts.append(
            f'<g class="week" data-week="{label}" data-spend="{spend:.2f}" '
            f'data-waste="{"" if waste is None else f"{_num(waste):.2f}"}">'
            f"<title>{label}: spend {escape(currency)} {Decimal(str(spend)):,.2f}, waste {waste_text}</title>"
            f'<rect class="spend" x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar:.1f}" '
            f'height="{h:.1f}" fill="{SPEND}"/>'
        )
        if waste is not None:
            wh = plot_h * _num(waste) / top_value
            parts.append(
                f'<rect class="waste" x="{x + bar * 0.2:.1f}" y="{top + plot_h - wh:.1f}" '
                f'width="{bar * 0.6:.1f}" height="{wh:.1f}" fill="{WASTE}"/>'
            )
        parts.append(
            f'<text x="{x + bar / 2:.1f}" y="{height - bottom + 20}" text-anchor="middle" font-size="{TREND_FONT}" '
            f'fill="{INK}">{label[-3:]}</text></g>'
        )
    parts.append(
        f'<rect x="{left}" y="{height - 12}" width="10" height="10" fill="{SPEND}"/>'
        f'<text x="{left + 14}" y="{height - 3}" font-size="{TREND_FONT}" fill="{INK}">spend</text>'
        f'<rect x="{left + 70}" y="{height - 12}" width="10" height="10" fill="{WASTE}"/>'
        f'<text x="{left + 84}" y="{height - 3}" font-size="{TREND_FONT}" fill="{INK}">waste</text></svg>'
    )
    return Markup("".join(parts))


def heatmap(cells: dict[tuple[int, int], float]) -> Markup:
    """Idle GPU-hours by ISO weekday (rows, Mon..Sun) and hour of day (columns, 0..23, UTC)."""
    cell, left, top = 24, 50, 22
    width, height = left + 24 * cell + 4, top + 7 * cell + 4
    peak = max(cells.values(), default=0.0)
    parts = [
        f'<svg class="chart" id="chart-idle-heatmap" viewBox="0 0 {width} {height + 26}" width="100%" role="img" '
        f'aria-label="Idle GPU-hours by weekday and hour of day (UTC)" xmlns="http://www.w3.org/2000/svg">'
    ]
    for h in range(0, 24, 3):
        parts.append(
            f'<text x="{left + h * cell + cell / 2}" y="{top - 6}" text-anchor="middle" font-size="{HEATMAP_FONT}" '
            f'fill="{MUTED}">{h:02d}</text>'
        )
    for d in range(7):
        y = top + d * cell
        parts.append(
            f'<text x="{left - 6}" y="{y + cell / 2 + 6}" text-anchor="end" font-size="{HEATMAP_FONT}" '
            f'fill="{INK}">{DAYS[d]}</text>'
        )
        for h in range(24):
            value = cells.get((d + 1, h), 0.0)
            opacity = 0.06 + 0.94 * (value / peak) if peak > 0 and value > 0 else 0.0
            fill = IDLE if value > 0 else "#f1f3f6"
            parts.append(
                f'<rect class="cell" data-day="{DAYS[d]}" data-hour="{h}" data-idle="{value:.0f}" '
                f'x="{left + h * cell + 1}" y="{y + 1}" width="{cell - 2}" height="{cell - 2}" '
                f'fill="{fill}" fill-opacity="{opacity if value > 0 else 1:.2f}">'
                f"<title>{DAYS[d]} {h:02d}:00 UTC: {value:,.0f} idle GPU-hours</title></rect>"
            )
    parts.append(
        f'<text x="{left}" y="{height + 20}" font-size="{HEATMAP_FONT}" fill="{MUTED}">darkest: {peak:,.0f} idle GPU-hours '
        "in one hour</text></svg>"
    )
    return Markup("".join(parts))


def histogram(bands: dict[int, float], unobserved: float) -> Markup:
    """GPU-hours per 10 %-wide utilisation band, plus the billed GPU-hours without telemetry."""
    labels = [(b, f"{b}–{b + 10}") for b in range(0, 100, 10)] + [(-1, "no data")]
    values = {**{b: bands.get(b, 0.0) for b in range(0, 100, 10)}, -1: unobserved}
    width, height, left, bottom, top = 560, 230, 52, 48, 14
    plot_w, plot_h = width - left - 10, height - bottom - top
    ticks = axis_ticks(max(values.values(), default=0))
    top_value = ticks[-1]
    slot = plot_w / len(labels)
    parts = [
        f'<svg class="chart" id="chart-util-histogram" viewBox="0 0 {width} {height}" width="100%" '
        f'role="img" aria-label="Billed GPU-hours by mean utilisation" xmlns="http://www.w3.org/2000/svg">'
    ]
    parts.extend(_grid(ticks, left, width - 10, top, plot_h))
    for i, (band, label) in enumerate(labels):
        value = values[band]
        h = plot_h * value / top_value
        x = left + slot * i + slot * 0.12
        fill = MUTED if band < 0 else (IDLE if band == 0 else "#2563eb")
        parts.append(
            f'<g class="band" data-band="{label}" data-gpu-hours="{value:.0f}">'
            f"<title>{label}{' %' if band >= 0 else ''}: {value:,.0f} GPU-hours</title>"
            f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{slot * 0.76:.1f}" height="{h:.1f}" '
            f'fill="{fill}"/>'
            f'<text x="{x + slot * 0.38:.1f}" y="{height - bottom + 20}" text-anchor="middle" font-size="{FONT}" '
            f'fill="{INK}">{label if band < 0 else band}</text></g>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 4}" text-anchor="middle" font-size="{FONT}" fill="{MUTED}">'
        "mean GPU utilisation of the hour, %</text></svg>"
    )
    return Markup("".join(parts))


def share_bar(value: Any, maximum: Any, color: str = WASTE) -> Markup:
    """A thin horizontal bar for table cells (value as a share of the largest)."""
    top = _num(maximum)
    pct = 100 * _num(value) / top if top > 0 else 0
    return Markup(
        f'<svg width="100%" height="10" role="img" aria-label="{pct:.0f}% of the largest">'
        f'<rect width="{pct:.1f}%" height="10" fill="{color}"/></svg>'
    )
