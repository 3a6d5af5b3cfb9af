"""Output safe for its medium: hostile team names, resource ids and reasons in findings.csv, report.md, the
Slack post, the e-mail and the HTML (in a real Chromium), and team page names that are bounded, stable and
never take the untagged page's file."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipelines.config import load_config
from pipelines.report import WeeklyReport, write_report
from pipelines.report.model import SLUG_MAX, slugify
from pipelines.report.notify import NotifyConfig, deliver, slack_payload
from pipelines.report.render import csv_cell, md_code, md_text, shorten_middle
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.report import W48, fleet, put_findings

XSS_TEAM = "<img src=x onerror=\"document.title='pwned'\"> *bold* [link](http://evil.example)"
LONG_TEAM = "t" * 250  # longer than a file name may be
FORMULA_ID = '=HYPERLINK("http://evil.example","click")'
MENTION_TEAM = "<!channel> <http://evil.example|click here> & co"


@dataclass
class Hostile:
    report: WeeklyReport
    directory: Path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, empty_marts: Path) -> Iterator[Hostile]:
    directory = tmp_path_factory.mktemp("hostile")
    write_config(directory, "{}\n")
    config = load_config(directory / "wastewatch.yaml")
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        fleet(con)  # the hand-worked fleet's spend, so the findings' waste fits in it
        put_findings(
            con, W48, "GPU001",
            [
                {"resource_id": FORMULA_ID, "team": XSS_TEAM, "estimated_waste": 100},
                {"resource_id": "-2+3", "team": "untagged", "estimated_waste": 50},
                {"resource_id": "@SUM(A1:A9)", "team": LONG_TEAM, "estimated_waste": 25},
                {"resource_id": "i-`code`|pipe", "team": MENTION_TEAM, "estimated_waste": 10},
                {"resource_id": "-12.5", "estimated_waste": 5},  # untagged: the "(untagged)" bucket
            ],
        )  # fmt: skip
        report = write_report(con, config, W48)
    finally:
        con.close()
    yield Hostile(report, config.reports_path / "2026-W48")


def test_findings_csv_neutralises_formulas_and_keeps_numbers(hostile: Hostile) -> None:
    with (hostile.directory / "findings.csv").open(newline="", encoding="utf-8") as f:
        rows = {r["estimated_waste"]: r for r in csv.DictReader(f)}
    assert rows["100.000000"]["resource_id"] == "'" + FORMULA_ID
    assert rows["50.000000"]["resource_id"] == "'-2+3"
    assert rows["25.000000"]["resource_id"] == "'@SUM(A1:A9)"
    assert rows["5.000000"]["resource_id"] == "-12.5"  # a number is not a formula
    # the parquet file keeps the raw values
    raw = pl.read_parquet(hostile.directory / "findings.parquet")
    assert FORMULA_ID in raw.get_column("resource_id").to_list()


def test_csv_cell_follows_owasp() -> None:
    for bad in ("=1+1", "+cmd", "-1+2", "@A1", "\tx", "\rx"):
        assert csv_cell(bad) == "'" + bad
    for fine in ("-12.5", "+3", "1e-3", "ok", "a=b", -12.5, None):
        assert csv_cell(fine) == fine


def test_markdown_escapes_html_and_control_characters(hostile: Hostile) -> None:
    md = (hostile.directory / "report-full.md").read_text(encoding="utf-8")
    assert "<img" not in md and "&lt;img src=x" in md
    assert "[link](http" not in md and "\\[link\\]" in md and "\\*bold\\*" in md
    assert "<!channel>" not in md
    assert md_text(XSS_TEAM) in md
    # a resource id with a backtick and a pipe stays one code span in one table cell
    assert "`` i-`code`\\|pipe ``" in md
    assert md_code("a`b") == "`` a`b ``" and md_code("i-1") == "`i-1`"


def test_slack_text_cannot_mention_or_link(hostile: Hostile) -> None:
    text = slack_payload(hostile.report, NotifyConfig(teams=True))["text"]
    assert "<!channel>" not in text and "<http://evil" not in text and "<img" not in text
    assert "&lt;!channel&gt; &lt;http://evil.example|click here&gt; &amp; co" in text
    # the only `<...>` left is none: no report_url was configured
    assert not re.search(r"<[^>]*>", text)


def test_email_html_is_escaped(hostile: Hostile) -> None:
    done, problems = deliver(hostile.report, {"email_html": True, "teams": True})
    html = (hostile.directory / "email.html").read_text(encoding="utf-8")
    assert not problems and "<img" not in html and "&lt;img src=x" in html


def test_team_pages_are_bounded_stable_unique_and_never_the_untagged_page(hostile: Hostile) -> None:
    pages = {t.name: t.slug for t in hostile.report.teams}
    assert pages["(untagged)"] == "untagged"
    assert pages["untagged"] != "untagged" and pages["untagged"].startswith("untagged-")
    assert all(len(s) <= SLUG_MAX for s in pages.values())
    assert len(set(pages.values())) == len(pages)
    # stable: the same name always gets the same slug, whatever else is on the page
    assert slugify(LONG_TEAM, {"x"}) == pages[LONG_TEAM]
    files = {p.name for p in (hostile.directory / "teams").iterdir()}
    assert files == {f"{s}.html" for s in pages.values()}
    untagged = (hostile.directory / "teams" / "untagged.html").read_text(encoding="utf-8")
    assert "-12.5" in untagged and "-2+3" not in untagged


def test_hostile_strings_render_as_text_in_chromium(browser: Any, hostile: Hostile) -> None:
    slug = {t.name: t.slug for t in hostile.report.teams}[XSS_TEAM]
    for path in (hostile.directory / "report.html", hostile.directory / "teams" / f"{slug}.html"):
        page = browser.new_page()
        page.goto(path.as_uri())
        assert page.title() != "pwned"
        assert page.locator("img").count() == 0
        # the name is text: in full on the team's page, shortened in the middle on the main page's tables
        # with its full text on hover
        if path.name == "report.html":
            assert shorten_middle(XSS_TEAM) in page.inner_text("body")
            titles = page.eval_on_selector_all("[title]", "es => es.map(e => e.getAttribute('title'))")
            assert XSS_TEAM in titles
        else:
            assert XSS_TEAM in page.inner_text("body")
        page.close()
