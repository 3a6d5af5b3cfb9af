"""The HTML report in a real headless Chromium: self-contained, correct totals, charts drawn, readable on a phone
and printed, one page per team.

Needs Debian's chromium (`.ci/run` installs it). Without it these tests skip, unless
WASTEWATCH_REQUIRE_BROWSER=1 (set by CI), where a missing browser is a failure. Screenshots are kept under
the test's temp dir.
"""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pipelines.report.model import MAIN_TOP, slugify
from rules import ALL_RULES
from tests.report.test_scale import MAIN_HEIGHT, MIN_CHARS_PER_LINE, NARROW_CELLS

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def report(demo_dir: tuple[Path, str]) -> tuple[Path, list[dict[str, str]], dict[str, Any]]:
    directory, _ = demo_dir
    week = directory / "reports" / "2026-W48"
    with (week / "findings.csv").open() as f:
        findings = list(csv.DictReader(f))
    expected = json.loads((directory / "expected.json").read_text())
    return week / "report.html", findings, expected


def _money(text: str) -> Decimal:
    return Decimal(text.replace(",", "").replace("USD", "").strip())


def _open(browser: Any, path: Path, **kw: Any) -> tuple[Any, list[str]]:
    page = browser.new_page(**kw)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    return page, requests


def test_report_is_self_contained_and_its_totals_reconcile(
    browser: Any, report: tuple[Path, list, dict], tmp_path: Path
) -> None:
    path, findings, expected = report
    page, requests = _open(browser, path)
    assert requests == [path.as_uri()]  # no fonts, scripts, images or styles fetched
    waste = _money(page.inner_text("#waste-USD"))
    counted = [r for r in findings if r["counted"] == "true"]
    assert waste == sum(Decimal(r["estimated_waste"]) for r in counted).quantize(Decimal("0.01"))
    spend = _money(page.inner_text("#spend-USD"))
    # the bill's spend and the cost models' (the research cluster's owned and contract hosts) shown apart
    billed, modelled = _money(page.inner_text("#billed-USD")), _money(page.inner_text("#modelled-USD"))
    assert billed == Decimal(str(expected["report_week"]["spend"])) and waste <= spend
    planted = expected["report_week"]["modelled_spend"]
    assert abs(modelled - Decimal(str(planted["owned"])) - Decimal(str(planted["contract"]))) <= Decimal(
        "0.01"
    )
    assert abs(spend - billed - modelled) <= Decimal("0.01")
    # every planted waste item is under its rule with the planted dollars, and no rule without a plant
    # has a row. Each row is the sum of its counted findings, and the planted amount to the cent
    # (expected.json rounds an exact decimal sum once; the report rounds the findings' 6-decimal amounts,
    # which the GPU rules compute in double precision: a sum on a half cent may round either way)
    planted = expected["report_week"]["rules"]
    waste_rules = {r.id for r in ALL_RULES if not r.attention}
    # the waste by rule is on rules.html, linked from the main page
    rules, _ = _open(browser, path.parent / "rules.html")
    assert page.locator('nav.toc a[href="rules.html"]').count() == 1
    rows = {
        row.get_attribute("data-rule"): row
        for row in rules.locator("#waste-by-rule tbody tr[data-rule]").all()
    }
    assert set(rows) == {r for r in waste_rules if planted[r]["waste"] > 0}
    assert set(rows) == {r["rule_id"] for r in counted if r["rule_id"] in waste_rules}
    for rule_id, row in rows.items():
        shown = _money(row.locator("td.waste").inner_text())
        listed = sum(Decimal(r["estimated_waste"]) for r in counted if r["rule_id"] == rule_id)
        assert shown == listed.quantize(Decimal("0.01")), rule_id
        assert abs(shown - Decimal(str(planted[rule_id]["waste"]))) <= Decimal("0.01"), rule_id
        # the monthly run-rate beside it: the week's waste x 30.44 / 7; for storage, the planted bytes'
        # monthly cost (what deleting them saves a month)
        monthly = _money(row.locator("td.monthly").inner_text())
        assert abs(monthly - listed * Decimal("30.44") / 7) <= Decimal("0.005"), rule_id
        if "monthly_cost" in planted[rule_id]:
            assert abs(monthly - Decimal(str(planted[rule_id]["monthly_cost"]))) <= Decimal("0.01"), rule_id
    # the attention items are listed apart with the planted amounts at stake
    at_stake = {
        row.get_attribute("data-rule"): _money(row.locator("td.num").last.inner_text())
        for row in page.locator("#attention-summary tbody tr[data-rule]").all()
    }
    assert at_stake["COST001"] == Decimal(str(planted["COST001"]["spend"]))
    # COST003: the planted egress spike and the scaling-test pool's day of research's contract spend
    spikes = (planted["COST003"]["excess"], planted["COST003"]["scaling_pool_day"]["excess"])
    assert at_stake["COST003"] == sum(Decimal(str(x)) for x in spikes)
    rules.close()
    # the main page's top findings: at most MAIN_TOP lines (a rule's many small findings are one), the
    # biggest first
    top = page.locator("#top-findings tbody tr")
    assert top.count() == min(MAIN_TOP, len(counted))
    biggest = max(counted, key=lambda r: Decimal(r["estimated_waste"]))
    assert biggest["resource_id"] in top.first.inner_text()
    shown = [_money(a.inner_text()) for a in top.locator("a.evidence").all()]
    assert shown == sorted(shown, reverse=True)
    # every finding has its evidence on findings.html, and the top table links to it
    everything, _ = _open(browser, path.parent / "findings.html")
    assert everything.locator('details[id^="f-"]').count() == len(findings)
    href = top.first.locator("a.evidence").get_attribute("href")
    assert href == f"findings.html#f-{biggest['finding_id']}"
    assert everything.locator(href.split("findings.html", 1)[1]).count() == 1
    everything.close()
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    page.close()


def test_attention_lists_the_planted_untagged_spend_apart_from_waste(
    browser: Any, report: tuple[Path, list, dict]
) -> None:
    path, findings, expected = report
    page, _ = _open(browser, path)
    planted = expected["report_week"]["rules"]["COST001"]
    row = page.locator('#attention-summary tr[data-rule="COST001"] td.num').last
    assert _money(row.inner_text()) == Decimal(str(planted["spend"]))
    gpu = [r for r in findings if r["rule_id"] == "COST001" and json.loads(r["evidence"])["gpu"]]
    assert sum(Decimal(r["estimated_waste"]) for r in gpu) == pytest.approx(
        Decimal(str(planted["gpu_spend"]))
    )
    assert all(r["counted"] == "false" for r in findings if r["attention"] == "true")
    page.close()
    each, _ = _open(browser, path.parent / "attention.html")  # each item on the attention page
    assert each.locator('table.attention tr[data-resource^="i-"]').count() >= 1
    each.close()


def test_charts_draw_as_inline_svg(browser: Any, report: tuple[Path, list, dict]) -> None:
    path, _, _ = report
    page, _ = _open(browser, path)
    weeks = page.locator("#chart-trend-USD g.week")
    assert weeks.count() >= 1
    last = weeks.last
    assert last.get_attribute("data-week") == "2026-W48"
    assert last.locator("rect.spend").bounding_box()["height"] > 0
    assert (
        float(last.get_attribute("data-waste")) > 0
        and last.locator("rect.waste").bounding_box()["height"] > 0
    )
    page.close()
    page, _ = _open(browser, path.parent / "fleet.html")  # the fleet's charts are on its page
    cells = page.locator("#chart-idle-heatmap rect.cell")
    assert cells.count() == 7 * 24
    # the dev boxes sit idle every night: 03:00 on Tuesday has idle GPU-hours, drawn darker than nothing
    assert (
        float(
            page.locator('#chart-idle-heatmap rect[data-day="Tue"][data-hour="3"]').get_attribute("data-idle")
        )
        > 0
    )
    bands = page.locator("#chart-util-histogram g.band")
    assert bands.count() == 11
    drawn = sum(float(bands.nth(i).get_attribute("data-gpu-hours")) for i in range(11))
    fleet = page.locator("#gpu-fleet-table tbody tr td:nth-child(4)")  # GPU-hours priced
    billed = sum(Decimal(fleet.nth(i).inner_text().replace(",", "")) for i in range(fleet.count()))
    assert drawn == pytest.approx(float(billed))  # every priced GPU-hour is in one band or "no data"
    for svg in page.locator("svg.chart").all():
        box = svg.bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 50
    page.close()


def test_team_pages_are_self_contained_and_link_back(browser: Any, report: tuple[Path, list, dict]) -> None:
    path, findings, _ = report
    teams = sorted((path.parent / "teams").glob("*.html"))
    expected_teams = {r["team"] or "(untagged)" for r in findings} | {"nlp", "vision", "speech"}
    # one page per team, named by its stable slug (the untagged bucket's is plain `untagged`)
    assert {p.stem for p in teams} >= {slugify(t, set()) for t in expected_teams}
    assert "untagged" in {p.stem for p in teams}
    for team_page in teams:
        page, requests = _open(browser, team_page, viewport={"width": 390, "height": 844})
        assert requests == [team_page.as_uri()], team_page.name
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, team_page.name
        back = page.locator('a[href="../report.html"]').first
        assert (team_page.parent / back.get_attribute("href")).resolve() == path.resolve()
        page.close()
    nlp, _ = _open(browser, path.parent / "teams" / f"{slugify('nlp', set())}.html")
    rows = nlp.locator("#team-findings tbody tr[data-finding-key]")
    nlp_counted = [r for r in findings if r["team"] == "nlp" and r["counted"] == "true"]
    assert rows.count() == len(nlp_counted) > 0
    nlp.close()


def test_report_reads_on_a_phone_without_sideways_scrolling(
    browser: Any, report: tuple[Path, list, dict], tmp_path: Path
) -> None:
    path, _, _ = report
    page, _ = _open(browser, path, viewport={"width": 390, "height": 844}, device_scale_factor=2)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    font = page.evaluate("parseFloat(getComputedStyle(document.body).fontSize)")
    assert font >= 14
    # the charts shrink to the screen instead of overflowing it
    for svg in page.locator("svg.chart").all():
        assert svg.bounding_box()["width"] <= 390
    page.screenshot(path=str(tmp_path / "report-390px.png"), full_page=True)
    page.close()


def test_report_prints(browser: Any, report: tuple[Path, list, dict], tmp_path: Path) -> None:
    path, findings, _ = report
    main, _ = _open(browser, path)
    main.emulate_media(media="print")
    assert main.pdf(format="A4").startswith(b"%PDF")
    main.close()
    fleet, _ = _open(browser, path.parent / "fleet.html")
    fleet.emulate_media(media="print")
    assert fleet.locator("#chart-idle-heatmap").bounding_box()["height"] > 0
    fleet.close()
    page, _ = _open(browser, path.parent / "findings.html")
    page.emulate_media(media="print")
    # printed, every finding's details are shown (a closed <details> would hide its evidence on paper)
    hidden = page.evaluate(
        "Array.from(document.querySelectorAll('details pre')).filter(e => e.offsetHeight === 0).length"
    )
    assert hidden == 0 and len(findings) > 0
    pdf = page.pdf(format="A4")
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") >= 2
    (tmp_path / "report.pdf").write_bytes(pdf)
    page.close()


# text of every chart, in px on screen: its font size times the drawing's scale
_CHART_TEXT_PX = """Array.from(document.querySelectorAll('svg.chart text')).map(
    t => parseFloat(t.getAttribute('font-size')) * t.getScreenCTM().a)"""

# tables wider than their box: [id or index, inside an overflow-x scroll box, hint shown]
_CLIPPED_TABLES = """Array.from(document.querySelectorAll('table')).map((t, i) => {
    const box = t.closest('.scroll');
    const wide = t.scrollWidth > (box ? box.clientWidth : document.documentElement.clientWidth) + 1;
    if (!wide) return null;
    const scrolls = box && ['auto', 'scroll'].includes(getComputedStyle(box).overflowX);
    const hint = box && box.nextElementSibling && box.nextElementSibling.classList.contains('scroll-hint')
        && box.nextElementSibling.offsetHeight > 0;
    return [t.id || String(i), !!scrolls, !!hint];
}).filter(x => x)"""


@pytest.mark.parametrize("width", [1280, 390])
def test_changed_report_parts_at_desktop_and_phone_width(
    browser: Any, report: tuple[Path, list, dict], width: int, tmp_path: Path
) -> None:
    """Issue 19: attention items carry their own badge (never the red waste one), evidence links open
    their section, no table is cut off without a scroll hint, chart labels stay at least 10 px."""
    path, findings, _ = report
    main, _ = _open(browser, path, viewport={"width": width, "height": 900})
    link = main.locator("#top-findings a.evidence").first
    href = link.get_attribute("href")
    page, _ = _open(browser, path.parent / "findings.html", viewport={"width": width, "height": 900})
    # attention findings in "All findings": a purple attention badge and no red `waste` status
    attention = [r for r in findings if r["attention"] == "true"]
    assert attention
    for r in attention[:5]:
        summary = page.locator(f"#f-{r['finding_id']} > summary")
        assert summary.locator(".tag.attention").count() == 1
        assert summary.locator(".status.waste").count() == 0
    badge = page.locator("details .tag.attention").first.evaluate("e => getComputedStyle(e).backgroundColor")
    red = page.locator("details .status.waste").first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert badge != red
    # an evidence link of the main page opens the details it points at on findings.html
    target = href.split("findings.html", 1)[1]
    assert page.locator(target).evaluate("d => d.open") is False
    link.click()
    main.wait_for_function(
        f"document.querySelector('{target}') && document.querySelector('{target}').open", timeout=5000
    )
    assert main.locator(f"{target} pre").bounding_box()["height"] > 0
    # no table of the main page is cut off, and it does not scroll sideways
    main.goto(path.as_uri())
    for table_id, scrolls, hint in main.evaluate(_CLIPPED_TABLES):
        assert scrolls and hint, table_id
    assert main.evaluate("document.documentElement.scrollWidth") <= width
    # the demo's main page is a few screens too, and no cell of it squeezed to a few characters a line
    assert main.evaluate("document.documentElement.scrollHeight") <= MAIN_HEIGHT[width]
    assert main.evaluate(NARROW_CELLS, MIN_CHARS_PER_LINE) == []
    sizes = main.evaluate(_CHART_TEXT_PX)
    assert sizes and min(sizes) >= 10, min(sizes)
    main.screenshot(path=str(tmp_path / f"report-{width}.png"), full_page=True)
    main.close()
    # rolled-up small findings: one line per rule with the sum of its members; a link into one opens it
    for rollup in page.locator("details.rollup").all():
        ids = rollup.locator('details[id^="f-"]').evaluate_all("ds => ds.map(d => d.id.slice(2))")
        members = [r for r in findings if r["finding_id"] in set(ids)]
        assert len(members) == int(rollup.get_attribute("data-count")) >= 10
        total = sum(Decimal(r["estimated_waste"]) for r in members)
        assert Decimal(rollup.get_attribute("data-amount")) == total.quantize(Decimal("0.01"))
    if page.locator("details.rollup").count():
        inner = page.locator("details.rollup details[id^='f-']").first.get_attribute("id")
        page.goto(f"{(path.parent / 'findings.html').as_uri()}#{inner}")
        page.wait_for_function(
            f"(d => d.open && d.parentElement.closest('details').open)(document.getElementById('{inner}'))",
            timeout=5000,
        )
        assert page.locator(f"#{inner} pre").bounding_box()["height"] > 0
    # no table is cut off without a way to scroll it and a visible hint
    for table_id, scrolls, hint in page.evaluate(_CLIPPED_TABLES):
        assert scrolls and hint, table_id
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(tmp_path / f"findings-{width}.png"), full_page=True)
    page.close()


def test_evidence_target_shows_without_scripts(browser: Any, report: tuple[Path, list, dict]) -> None:
    path, findings, _ = report
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    biggest = max(
        (r for r in findings if r["counted"] == "true"), key=lambda r: Decimal(r["estimated_waste"])
    )
    page.goto(f"{(path.parent / 'findings.html').as_uri()}#f-{biggest['finding_id']}")
    assert page.locator(f"#f-{biggest['finding_id']} pre").bounding_box()["height"] > 0
    context.close()


def test_actions_and_advice_lists_the_planted_advice_apart_from_waste(
    browser: Any, report: tuple[Path, list, dict]
) -> None:
    path, _, expected = report
    page, _ = _open(browser, path)
    assert page.inner_text("h2#advice") == "Actions and advice"
    assert "never added to waste or spend" in page.inner_text("#advice-note")
    assert page.locator('nav.toc a[href="actions.html"]').count() == 1
    # one line per advice item on the main page; each item's why, basis and risk on actions.html
    # an item is its advisor's kind and its subject: ADV002 and ADV003 both advise on a job type
    lines = {
        (r.get_attribute("data-kind"), r.get_attribute("data-subject")): r.get_attribute("data-status")
        for r in page.locator("#advice-lines li").all()
    }
    page.close()
    page, _ = _open(browser, path.parent / "actions.html")
    shown = {
        (r.get_attribute("data-kind"), r.get_attribute("data-subject")): r.get_attribute("data-status")
        for r in page.locator("#advice-items tbody tr").all()
    }
    assert lines.items() <= shown.items() and len(lines) == min(5, len(shown))
    advice = expected["advice"]
    for kind, items in (("commitment", advice["commitment"]), ("spot", list(advice["spot"].values()))):
        for item in items:
            assert shown[(kind, item["resource_id"])] == item["status"]
    [commitment] = advice["commitment"]
    row = page.locator(f'#advice-items tr[data-subject="{commitment["resource_id"]}"]')
    assert _money(row.locator("td").nth(3).inner_text()) == Decimal(str(commitment["weekly_saving"]))
    # the headline's waste is the counted findings' and its spend the bill's: no advice in either
    page.close()
    page, _ = _open(browser, path)
    assert _money(page.inner_text("#billed-USD")) == Decimal(str(expected["report_week"]["spend"]))
    # nlp's page lists its own job types' spot advice
    team, _ = _open(browser, path.parent / "teams" / f"{slugify('nlp', set())}.html")
    mine = {r.get_attribute("data-subject") for r in team.locator("#team-advice tbody tr").all()}
    assert {advice["spot"]["safe"]["resource_id"], advice["spot"]["unsafe"]["resource_id"]} <= mine
