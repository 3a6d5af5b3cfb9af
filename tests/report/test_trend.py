"""The report's 8-week trend of spend vs waste, checked for values: the query, the report and the SVG bars.

Nine weeks of spend, 2026-W40 to 2026-W48, each at its own hourly rate (week n of the nine bills
10 × n an hour, so 1,680 × n a week), and findings for some of them, as the rules would write them:

| week | findings | counted waste |
|---|---|---|
| W40 | (before the trend span) | – |
| W41 | none: never evaluated | NULL |
| W42 | GPU001 i-a 100 | 100 |
| W43 | none: never evaluated | NULL |
| W44 | GPU001 i-a 200, i-maybe 50 `suspect`, i-acked 70 acknowledged until 2026-11-01 | 200 |
| W45 | none: never evaluated | NULL |
| W46 | only a COST001 attention item (evaluated, nothing wasted) | 0 |
| W47 | GPU001 i-a 300, STO001 25 | 325 |
| W48 | GPU001 i-a 400, i-acked 80 (its ack lapsed) | 480 |

The trend of the report for 2026-W48 spans W41-W48: 8 points; a week never evaluated has NULL waste
(no waste bar, never a zero), a week evaluated with nothing wasted has 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pipelines.config import Config, load_config
from pipelines.report import WeeklyReport, write_report
from pipelines.report.acks import record, resolve
from pipelines.report.collect import _params, _query
from rules import Window
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.report import Marts, put_findings

WEEKS = [Window.iso_week(f"2026-W{n}") for n in range(40, 49)]  # W40 .. W48
W = dict(zip(range(40, 49), WEEKS, strict=True))
SPEND = {n: Decimal(10 * (n - 39) * 168) for n in range(40, 49)}  # 1,680 x week number in the nine
WASTE: dict[int, Decimal | None] = {
    41: None,
    42: Decimal(100),
    43: None,
    44: Decimal(200),
    45: None,
    46: Decimal(0),
    47: Decimal(325),
    48: Decimal(480),
}


@pytest.fixture(scope="module")
def trend_report(
    tmp_path_factory: pytest.TempPathFactory,
    empty_marts: Path,
) -> Iterator[tuple[Config, WeeklyReport, str, list[dict[str, Any]]]]:
    directory = tmp_path_factory.mktemp("trend")
    config = load_config(write_config(directory, "{}\n"))
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        m = Marts(con)
        m.resource("i-spend", team="nlp", project="llm")
        for n, w in W.items():
            m.bill("i-spend", w.start, w.end, float(10 * (n - 39)))
        m.flush()
        put_findings(con, W[42], "GPU001", [{"resource_id": "i-a", "estimated_waste": 100}])
        put_findings(
            con, W[44], "GPU001",
            [
                {"resource_id": "i-a", "estimated_waste": 200},
                {"resource_id": "i-maybe", "estimated_waste": 50, "status": "suspect"},
                {"resource_id": "i-acked", "estimated_waste": 70},
            ],
        )  # fmt: skip
        record(con, resolve(con, "GPU001:i-acked"), date(2026, 11, 1), "warm pool for the launch", "test")
        put_findings(con, W[46], "COST001", [{"resource_id": "i-untagged", "estimated_waste": 900}])
        put_findings(con, W[47], "GPU001", [{"resource_id": "i-a", "estimated_waste": 300}])
        put_findings(con, W[47], "STO001", [{"resource_id": "s3://ckpt/run-1/", "estimated_waste": 25}])
        put_findings(
            con, W[48], "GPU001",
            [{"resource_id": "i-a", "estimated_waste": 400}, {"resource_id": "i-acked", "estimated_waste": 80}],
        )  # fmt: skip
        report = write_report(con, config, W[48])
        query_rows = _query(con, "rpt_weekly_trend", _params(W[48], config))
    finally:
        con.close()
    html = (config.reports_path / "2026-W48" / "report.html").read_text(encoding="utf-8")
    yield config, report, html, query_rows


def test_trend_query_gives_eight_weeks_with_their_spend_and_counted_waste(
    trend_report: tuple[Config, WeeklyReport, str, list],
) -> None:
    _, _, _, query_rows = trend_report
    assert [(r["week_start"], r["currency"], r["spend"], r["waste"]) for r in query_rows] == [
        (W[n].start.date(), "USD", SPEND[n], WASTE[n]) for n in range(41, 49)
    ]
    # never evaluated: NULL, not 0; evaluated with only an attention item (never waste): 0
    assert [r["waste"] is None for r in query_rows] == [n in (41, 43, 45) for n in range(41, 49)]
    assert query_rows[46 - 41]["waste"] == Decimal("0.00")


def test_report_trend_and_headline_agree_with_the_query(
    trend_report: tuple[Config, WeeklyReport, str, list],
) -> None:
    _, report, _, _ = trend_report
    [(currency, weeks)] = report.trend.items()
    assert currency == "USD"
    assert [(w["label"], w["spend"], w["waste"]) for w in weeks] == [
        (f"2026-W{n}", SPEND[n], WASTE[n]) for n in range(41, 49)
    ]
    [h] = report.headline
    assert (h["spend"], h["waste"], h["prev_spend"], h["prev_waste"]) == (
        SPEND[48],
        WASTE[48],
        SPEND[47],
        WASTE[47],
    )


def _trend_bars(html: str) -> list[dict[str, Any]]:
    """The trend chart's week groups, in drawing order: labels and data-* values, and bar heights in px."""
    [svg] = re.findall(r'<svg class="chart" id="chart-trend-USD".*?</svg>', html, flags=re.S)
    bars = []
    for attrs, body in re.findall(r'<g class="week" ([^>]*)>(.*?)</g>', svg, flags=re.S):
        data = dict(re.findall(r'data-([\w-]+)="([^"]*)"', attrs))
        px = {c: float(h) for c, h in re.findall(r'<rect class="(\w+)"[^>]*? height="([\d.]+)"', body)}
        bars.append({**data, "spend_px": px.get("spend"), "waste_px": px.get("waste")})
    return bars


def test_html_draws_one_bar_per_week_and_a_waste_bar_only_for_evaluated_weeks(
    trend_report: tuple[Config, WeeklyReport, str, list],
) -> None:
    _, _, html, _ = trend_report
    assert "Spend and waste, last 8 weeks (USD)" in html
    bars = _trend_bars(html)
    assert [b["week"] for b in bars] == [f"2026-W{n}" for n in range(41, 49)]  # W40 is outside the span
    assert [b["spend"] for b in bars] == [f"{SPEND[n]:.2f}" for n in range(41, 49)]
    assert [b["waste"] for b in bars] == [
        "" if WASTE[n] is None else f"{WASTE[n]:.2f}" for n in range(41, 49)
    ]
    # every week has its spend bar; a waste bar only where the week was evaluated (W46's is 0 px high)
    assert all(b["spend_px"] > 0 for b in bars)
    assert [b["waste_px"] is not None for b in bars] == [WASTE[n] is not None for n in range(41, 49)]
    # the bars agree with the chart's y axis: its grid lines (0 at the bottom, the axis top value at the
    # top, e.g. "20k") give the px per dollar; heights are drawn to 0.1 px
    [svg] = re.findall(r'<svg class="chart" id="chart-trend-USD".*?</svg>', html, flags=re.S)
    axis = {
        float(v[:-1]) * 1000 if v.endswith("k") else float(v): float(y)
        for y, v in re.findall(r'<line x1="[\d.]+" y1="([\d.]+)"[^>]*/><text[^>]*>([^<]+)</text>', svg)
    }
    # the axis ends at the first round step at or above the largest week's spend, not far beyond it
    top_spend = max(float(SPEND[n]) for n in range(41, 49))
    ticks = sorted(axis)
    assert 3 <= len(ticks) <= 7 and ticks[-1] >= top_spend > ticks[-2]
    scale = (axis[0] - axis[max(axis)]) / max(axis)
    for b, n in zip(bars, range(41, 49), strict=True):
        assert b["spend_px"] == pytest.approx(float(SPEND[n]) * scale, abs=0.06), b["week"]
        if WASTE[n] is not None:
            assert b["waste_px"] == pytest.approx(float(WASTE[n]) * scale, abs=0.06), b["week"]
    assert bars[46 - 41]["waste_px"] == 0
