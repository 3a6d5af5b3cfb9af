"""The report at scale, in a real Chromium: 200 teams, 2,000 findings, long Azure and GCP resource ids and
bills in three currencies (tests/helpers/report_fleet.py, built straight into a small warehouse).

The main page stays a few screens (at most 2,400 px tall at 1280 px wide, 5,100 px at 390 px); no page
scrolls sideways at 1280 px, nor the main page at 390 px; no table cell wraps its text below 8 characters
a line; every finding is still one click away. Screenshots of every page at both widths are written
under the test's temporary folder (the path is printed) for review. Skips without Chromium, like
test_browser.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.report.model import PAGES
from pipelines.report.notify import NotifyConfig, email_html, slack_posts
from pipelines.report.render import DIGEST_BYTES
from tests.helpers.report_fleet import FINDINGS_PER_TEAM, TEAMS, Fleet, build_fleet, instance_id

pytestmark = pytest.mark.e2e

MAIN_HEIGHT = {1280: 2400, 390: 5100}  # px: 3 screens of 800 px, 6 of 844 px (less the browser's bars)
VIEWPORT = {1280: 800, 390: 844}
MIN_CHARS_PER_LINE = 8

# text nodes of visible table cells that wrap to fewer than MIN_CHARS_PER_LINE characters a line:
# [table id, text, lines]; a line is a distinct top of the text's client rects
NARROW_CELLS = """(minChars) => {
  const bad = [];
  for (const cell of document.querySelectorAll('td, th')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const text = n.textContent.trim();
      if (text.length < minChars) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      const rects = Array.from(range.getClientRects()).filter(r => r.width > 0);
      const lines = new Set(rects.map(r => Math.round(r.top))).size;
      if (lines > 1 && text.length / lines < minChars) {
        const table = cell.closest('table');
        bad.push([table ? table.id : '', text.slice(0, 60), lines]);
      }
    }
  }
  return bad.slice(0, 10);
}"""

# tables wider than the box they sit in (a scroll box or the page): [table id, its width, the box's]
_WIDE_TABLES = """() => Array.from(document.querySelectorAll('table')).map(t => {
  const box = t.closest('.scroll') || document.body;
  return [t.id, t.scrollWidth, box.clientWidth];
}).filter(([, w, room]) => w > room + 1)"""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, empty_marts: Path) -> Fleet:
    return build_fleet(tmp_path_factory.mktemp("fleet"), empty_marts)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("report-screenshots")
    yield folder
    print(f"\nreport screenshots at 1280 and 390 px: {folder}")


def _pages(fleet: Fleet) -> list[Path]:
    teams = sorted((fleet.directory / "teams").glob("*.html"))
    return [fleet.directory / "report.html"] + [fleet.directory / f"{s}.html" for s, _ in PAGES] + teams[:2]


@pytest.mark.parametrize("width", [1280, 390])
def test_every_page_fits_its_width_and_the_main_page_a_few_screens(
    browser: Any, fleet: Fleet, shots: Path, width: int
) -> None:
    heights = {}
    for path in _pages(fleet):
        page = browser.new_page(viewport={"width": width, "height": VIEWPORT[width]})
        page.goto(path.as_uri())
        name = str(path.relative_to(fleet.directory))
        heights[name] = page.evaluate("document.documentElement.scrollHeight")
        page.screenshot(path=str(shots / f"{name.replace('/', '_')}-{width}.jpg"), full_page=True, quality=70)
        # nothing makes the page scroll sideways, and no cell is squeezed to a few characters a line
        assert page.evaluate("document.documentElement.scrollWidth") <= width, name
        narrow = page.evaluate(NARROW_CELLS, MIN_CHARS_PER_LINE)
        assert narrow == [], (name, narrow)
        if width == 1280 or name == "report.html":
            assert page.evaluate(_WIDE_TABLES) == [], name  # no table needs sideways scrolling
        page.close()
    print(f"\npage heights at {width} px: {heights}")
    assert heights["report.html"] <= MAIN_HEIGHT[width]


def test_the_main_page_shows_the_top_and_links_the_rest(browser: Any, fleet: Fleet) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto((fleet.directory / "report.html").as_uri())
    # 15 teams of the 200, the rest one click away; teams without spend or waste are never listed
    assert page.locator("#top-teams tbody tr").count() == 15
    assert "of 200 teams with spend or waste" in page.inner_text("#all-teams")
    assert page.locator('#all-teams a[href="teams.html"]').count() == 1
    listed = {t["team"] for t in fleet.report.listed_teams()}
    assert len(listed) == TEAMS
    # a long Azure path is shortened in the middle, its full text on hover
    azure = instance_id(0)
    assert azure not in page.inner_text("body")
    # every page the main page links to exists beside it, and every finding is on findings.html
    for stem, _ in PAGES:
        assert page.locator(f'nav.toc a[href="{stem}.html"]').count() == 1
        assert (fleet.directory / f"{stem}.html").is_file()
    page.close()
    findings = browser.new_page()
    findings.goto((fleet.directory / "findings.html").as_uri())
    assert (
        findings.locator('details[id^="f-"]').count()
        == len(fleet.report.findings)
        >= TEAMS * FINDINGS_PER_TEAM
    )
    full = findings.locator(f'code.full:text-is("{azure}")')
    assert full.count() == 1  # the full id in its evidence
    findings.close()
    teams = browser.new_page()
    teams.goto((fleet.directory / "teams.html").as_uri())
    assert teams.locator("#waste-by-team tr.total[data-team]").count() == len(fleet.report.listed_teams())
    teams.close()


def test_the_digest_stays_under_4_kb_at_scale(fleet: Fleet) -> None:
    md = (fleet.directory / "report.md").read_bytes()
    assert len(md) <= DIGEST_BYTES
    text = md.decode("utf-8")
    assert "[all teams](teams.html)" in text and text.count("\n- ") >= 15
    # the full Markdown keeps every finding
    full = (fleet.directory / "report-full.md").read_text(encoding="utf-8")
    assert full.count("\n### ") >= len(fleet.report.findings)
    # the weekly chat post and the e-mail follow it: the 15 teams with the most waste of 200, one line each
    [post] = slack_posts(fleet.report, NotifyConfig(report_url="https://finops.example.com/r"))
    chat = post.payload()["text"]
    assert len(chat.encode("utf-8")) <= 4096 and chat.count("\n• ") >= 15
    assert "*Teams by waste* (15 of 200)" in chat and "/2026-W48/teams.html|all 200 teams>" in chat
    mail = email_html(fleet.report, NotifyConfig(email_html=True))
    assert "The 15 with the most waste of 200 teams: all teams in teams.html" in mail
