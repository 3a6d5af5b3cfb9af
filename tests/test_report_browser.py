"""The HTML report in a real headless Chromium: self-contained, correct totals, readable on a phone and printed.

Needs Debian's chromium (`.ci/run` installs it). Without it these tests skip, unless
WASTEWATCH_REQUIRE_BROWSER=1 (set by CI), where a missing browser is a failure.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    if executable is None:
        if os.environ.get("WASTEWATCH_REQUIRE_BROWSER") == "1":
            pytest.fail("no chromium on PATH, and WASTEWATCH_REQUIRE_BROWSER=1")
        pytest.skip("no chromium on PATH (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield b
        b.close()


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


def test_report_is_self_contained_and_its_totals_reconcile(
    browser: Any, report: tuple[Path, list, dict]
) -> None:
    path, findings, expected = report
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    assert requests == [path.as_uri()]  # no fonts, scripts, images or styles fetched
    waste = _money(page.inner_text("#waste-USD"))
    listed = sum(Decimal(r["estimated_waste"]) for r in findings if r["status"] == "waste")
    assert waste == listed.quantize(Decimal("0.01"))
    assert waste == Decimal(str(expected["report_week"]["rules"]["GPU001"]["waste"]))
    spend = _money(page.inner_text("#spend-USD"))
    assert spend == Decimal(str(expected["report_week"]["spend"])) and waste <= spend
    top = page.locator("#top-findings tbody tr")
    assert top.count() == min(20, sum(r["status"] == "waste" for r in findings))
    # the largest finding comes first, with its reason
    biggest = max(
        (r for r in findings if r["status"] == "waste"), key=lambda r: Decimal(r["estimated_waste"])
    )
    assert biggest["resource_id"] in top.first.inner_text()
    assert page.locator("details").count() == len(findings)
    page.close()


def test_report_reads_on_a_phone_without_sideways_scrolling(
    browser: Any, report: tuple[Path, list, dict]
) -> None:
    path, _, _ = report
    page = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=3)
    page.goto(path.as_uri())
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    font = page.evaluate("parseFloat(getComputedStyle(document.body).fontSize)")
    assert font >= 14
    page.close()


def test_report_prints(browser: Any, report: tuple[Path, list, dict], tmp_path: Path) -> None:
    path, findings, _ = report
    page = browser.new_page()
    page.goto(path.as_uri())
    page.emulate_media(media="print")
    # printed, every finding's details are shown (a closed <details> would hide its evidence on paper)
    hidden = page.evaluate(
        "Array.from(document.querySelectorAll('details pre')).filter(e => e.offsetHeight === 0).length"
    )
    assert hidden == 0 and len(findings) > 0
    pdf = page.pdf(format="A4")
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") >= 2
    page.close()
