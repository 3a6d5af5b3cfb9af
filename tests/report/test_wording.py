"""Numbers that say what they are: a change against a week with no or part of a week's data reads "new"
or "partial week" (never a percentage), the trend chart starts at the first whole week with data, and the
finding count names a rule's rolled-up small findings apart ("2 findings + 12 orphaned checkpoints (USD
6.00)"); a long identifier is shortened in the middle with its full text on hover. Each fleet is billed USD 10 an hour from its first hour of data; GPU001 finds 500 of waste in
both weeks."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from pipelines.config import load_config
from pipelines.report import WeeklyReport, write_report
from pipelines.report.notify import headline_lines
from pipelines.report.render import ID_CHARS, idcode, idtext, shorten_middle
from rules import Window
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.report import W48, Marts, put_findings

W47 = Window.iso_week("2026-W47")


def _report(tmp_path: Path, empty_marts: Path, first_hour: datetime) -> WeeklyReport:
    tmp_path.mkdir(exist_ok=True)
    config = load_config(write_config(tmp_path, "{}\n"))
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        m = Marts(con)
        m.resource("i-a", team="nlp", project="llm")
        m.bill("i-a", first_hour, W48.end, 10.0)
        m.flush()
        for window in (W47, W48):
            put_findings(con, window, "GPU001", [{"resource_id": "i-a", "estimated_waste": 500}])
        return write_report(con, config, W48)
    finally:
        con.close()


@pytest.mark.parametrize(
    ("first_hour", "previous", "spend_text", "waste_text"),
    [
        # data from W46: last week was whole, the change is a percentage
        (W47.start - timedelta(weeks=1), "full", "+0.0 % (±0.00) vs last week (1,680.00)",
         "+0.0 % (±0.00) vs last week (500.00)"),
        # data from W47's Thursday: last week had 4 of its 7 days
        (W47.start + timedelta(days=3), "partial", "last week was a partial week (960.00): no % change",
         "last week was a partial week (500.00): no % change"),
        # data from W48 only: nothing to compare with
        (W48.start, "none", "new: the data starts this week", "new: the data starts this week"),
    ],
)  # fmt: skip
def test_a_change_against_missing_or_partial_data_is_never_a_percentage(
    tmp_path: Path, empty_marts: Path, first_hour: datetime, previous: str, spend_text: str, waste_text: str
) -> None:
    report = _report(tmp_path, empty_marts, first_hour)
    assert report.previous_data("USD") == previous
    html = report.files["report.html"].read_text(encoding="utf-8")
    assert f'id="spend-change-USD" data-previous="{previous}">{spend_text}<' in html
    assert f'id="waste-change-USD" data-previous="{previous}">{waste_text}<' in html
    md = report.files["report.md"].read_text(encoding="utf-8")
    if previous == "full":
        assert "**Waste:** USD 500.00; +0.0 % (±0.00) vs last week (500.00)" in md
    else:
        assert "%) vs last week" not in md and ("partial week" in md or "new: the data starts" in md)
    # report-full.md carries the same headline lines, word for word (one definition: sections.HEADLINE)
    full = report.files["report-full.md"].read_text(encoding="utf-8")

    def headline(text: str) -> str:
        return text.split("## Headline\n", 1)[1].split("\n## ", 1)[0].strip()

    assert headline(md) in headline(full) and headline(md).startswith("- **Spend:** USD 1,680.00")
    # and the weekly chat post says what last week was
    [line] = headline_lines(report)
    chat = {"full": "; last week USD 500.00", "partial": "; last week USD 500.00 (a partial week)"}
    assert chat.get(previous, "; new: the data starts this week") in line


def test_the_trend_starts_at_the_first_whole_week_with_data(tmp_path: Path, empty_marts: Path) -> None:
    # data from W46's Thursday: W46 is part of a week, so the chart starts at W47 and says why
    report = _report(tmp_path, empty_marts, W47.start - timedelta(days=4))
    [(currency, weeks)] = report.trend.items()
    assert currency == "USD" and [w["label"] for w in weeks] == ["2026-W47", "2026-W48"]
    assert weeks[0]["after_partial"] == "2026-W46"
    html = report.files["report.html"].read_text(encoding="utf-8")
    assert "USD data starts part-way through 2026-W46, not drawn" in html
    # data from a Monday 00:00: that week is whole and is drawn
    whole = _report(tmp_path / "whole", empty_marts, W47.start)
    assert [w["label"] for w in whole.trend["USD"]] == ["2026-W47", "2026-W48"]
    assert whole.trend["USD"][0]["after_partial"] is None


def test_the_data_starts_where_the_bills_usage_starts(tmp_path: Path, empty_marts: Path) -> None:
    """A monthly fee spread from W46 (a `Purchase` line) before a bill whose usage starts in W48: W47 held no
    data to compare with, and the trend starts at W48."""
    config = load_config(write_config(tmp_path, "{}\n"))
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        m = Marts(con)
        m.resource("i-a", team="nlp", project="llm")
        m.bill(None, W47.start - timedelta(weeks=1), W48.end, 1.0, service="AWS Support (Business)")
        m.bill("i-a", W48.start, W48.end, 10.0)
        m.flush()
        con.execute("update cost_hourly set charge_category = 'Purchase' where resource_id is null")
        put_findings(con, W48, "GPU001", [{"resource_id": "i-a", "estimated_waste": 500}])
        report = write_report(con, config, W48)
    finally:
        con.close()
    assert report.previous_data("USD") == "none"
    assert [w["label"] for w in report.trend["USD"]] == ["2026-W48"]
    html = report.files["report.html"].read_text(encoding="utf-8")
    assert 'id="spend-change-USD" data-previous="none">new: the data starts this week<' in html


def test_the_finding_count_names_the_rolled_up_small_findings(tmp_path: Path, empty_marts: Path) -> None:
    config = load_config(write_config(tmp_path, "{}\n"))
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        m = Marts(con)
        m.resource("i-a", team="nlp", project="llm")
        m.bill("i-a", W48.start, W48.end, 10.0)
        m.flush()
        put_findings(con, W48, "GPU001", [{"resource_id": f"i-{n}", "estimated_waste": 400} for n in "ab"])
        checkpoints = [{"resource_id": f"s3://ckpt/run-{n}/", "estimated_waste": 0.5} for n in range(12)]
        put_findings(con, W48, "STO001", checkpoints)
        report = write_report(con, config, W48)
    finally:
        con.close()
    # 12 checkpoints of 0.50 are each under 1 % of the week's 806.00 of waste: one line
    text = "2 findings + 12 orphaned checkpoints (USD 6.00)"
    assert report.finding_count("USD") == text
    assert report.headline[0]["waste_findings"] == 14
    html = report.files["report.html"].read_text(encoding="utf-8")
    assert f'id="findings-count-USD">{text}<' in html
    assert f"- **Waste findings:** {text}\n" in report.files["report.md"].read_text(encoding="utf-8")
    # the top findings: the two instances, then the checkpoints as one line
    top = report.top_groups()
    assert [g["rollup"]["count"] if "rollup" in g else g["finding"]["resource_id"] for g in top] == [
        "i-a",
        "i-b",
        12,
    ]


def test_long_ids_are_shortened_in_the_middle_with_the_full_text_on_hover() -> None:
    azure = (
        "/subscriptions/0b1f6471-1bf0-4dda-aec3-cb9272f09590/resourceGroups/rg-ml/providers/"
        "Microsoft.Compute/virtualMachines/nd96amsr-a100-v4-007"
    )
    short = shorten_middle(azure)
    assert (
        len(short) == ID_CHARS and short.startswith("/subscripti") and short.endswith("nd96amsr-a100-v4-007")
    )
    assert str(idcode(azure)) == f'<code title="{azure}">{short}</code>'
    assert str(idcode("i-0123")) == "<code>i-0123</code>"  # short ids stay as they are
    # a hostile id stays text in the title and the cell
    hostile = str(idcode('"><img/src=x>' * 4))
    assert hostile.startswith('<code title="&#34;&gt;&lt;img/src=x&gt;') and "<img" not in hostile
    # a one-word team name is kept on one line; a name of words may wrap between them
    assert str(idtext("platform-059")) == '<span class="id">platform-059</span>'
    assert str(idtext("speech research group 7")) == "speech research group 7"
