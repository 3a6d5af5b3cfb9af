"""Inline SVG charts for the HTML report: no scripts, no fonts, no network; they scale to the page width.

Each chart carries its numbers twice: drawn, and in `data-*` attributes and `<title>` tooltips, so a
test (or a screen reader) can read what was drawn.
"""

from __future__ import annotations

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
    """1234567 -> 1.2M, 45300 -> 45.3k: axis labels that fit a phone."""
    a = abs(value)
    if a >= 1e6:
        return f"{value / 1e6:.1f}M"
    if a >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}"


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** (len(str(int(value))) - 1)
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return step * magnitude
    return 10.0 * magnitude


def trend(weeks: Sequence[dict[str, Any]], currency: str) -> Markup:
    """Spend (light bars) and counted waste (dark bars in front) per ISO week, oldest first."""
    width, height, left, bottom, top = 560, 210, 52, 36, 14
    plot_w, plot_h = width - left - 10, height - bottom - top
    top_value = _nice_max(max((_num(w["spend"]) for w in weeks), default=0))
    n = max(len(weeks), 1)
    slot = plot_w / n
    bar = min(slot * 0.7, 60)
    parts = [
        f'<svg class="chart" id="chart-trend-{escape(currency)}" viewBox="0 0 {width} {height}" '
        f'width="100%" role="img" aria-label="Spend and waste per week, {escape(currency)}" '
        f'preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg">'
    ]
    for i in range(5):
        v = top_value * i / 4
        y = top + plot_h - plot_h * i / 4
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{width - 10}" y2="{y:.1f}" stroke="{LINE}"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="13" fill="{MUTED}">'
            f"{_short(v)}</text>"
        )
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
            f'<text x="{x + bar / 2:.1f}" y="{height - bottom + 16}" text-anchor="middle" font-size="13" '
            f'fill="{INK}">{label[-3:]}</text></g>'
        )
    parts.append(
        f'<rect x="{left}" y="{height - 12}" width="10" height="10" fill="{SPEND}"/>'
        f'<text x="{left + 14}" y="{height - 3}" font-size="13" fill="{INK}">spend</text>'
        f'<rect x="{left + 70}" y="{height - 12}" width="10" height="10" fill="{WASTE}"/>'
        f'<text x="{left + 84}" y="{height - 3}" font-size="13" fill="{INK}">waste</text></svg>'
    )
    return Markup("".join(parts))


def heatmap(cells: dict[tuple[int, int], float]) -> Markup:
    """Idle GPU-hours by ISO weekday (rows, Mon..Sun) and hour of day (columns, 0..23, UTC)."""
    cell, left, top = 24, 40, 18
    width, height = left + 24 * cell + 4, top + 7 * cell + 4
    peak = max(cells.values(), default=0.0)
    parts = [
        f'<svg class="chart" id="chart-idle-heatmap" viewBox="0 0 {width} {height + 20}" width="100%" role="img" '
        f'aria-label="Idle GPU-hours by weekday and hour of day (UTC)" xmlns="http://www.w3.org/2000/svg">'
    ]
    for h in range(0, 24, 3):
        parts.append(
            f'<text x="{left + h * cell + cell / 2}" y="{top - 5}" text-anchor="middle" font-size="12" '
            f'fill="{MUTED}">{h:02d}</text>'
        )
    for d in range(7):
        y = top + d * cell
        parts.append(
            f'<text x="{left - 6}" y="{y + cell / 2 + 4}" text-anchor="end" font-size="13" '
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
        f'<text x="{left}" y="{height + 14}" font-size="13" fill="{MUTED}">darkest: {peak:,.0f} idle GPU-hours '
        "in one hour</text></svg>"
    )
    return Markup("".join(parts))


def histogram(bands: dict[int, float], unobserved: float) -> Markup:
    """GPU-hours per 10 %-wide utilisation band, plus the billed GPU-hours without telemetry."""
    labels = [(b, f"{b}–{b + 10}") for b in range(0, 100, 10)] + [(-1, "no data")]
    values = {**{b: bands.get(b, 0.0) for b in range(0, 100, 10)}, -1: unobserved}
    width, height, left, bottom, top = 560, 220, 52, 40, 14
    plot_w, plot_h = width - left - 10, height - bottom - top
    top_value = _nice_max(max(values.values(), default=0))
    slot = plot_w / len(labels)
    parts = [
        f'<svg class="chart" id="chart-util-histogram" viewBox="0 0 {width} {height}" width="100%" '
        f'role="img" aria-label="Billed GPU-hours by mean utilisation" xmlns="http://www.w3.org/2000/svg">'
    ]
    for i in range(5):
        y = top + plot_h - plot_h * i / 4
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{width - 10}" y2="{y:.1f}" stroke="{LINE}"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="13" fill="{MUTED}">'
            f"{_short(top_value * i / 4)}</text>"
        )
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
            f'<text x="{x + slot * 0.38:.1f}" y="{height - bottom + 15}" text-anchor="middle" font-size="12" '
            f'fill="{INK}">{label if band < 0 else band}</text></g>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 4}" text-anchor="middle" font-size="13" fill="{MUTED}">'
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
