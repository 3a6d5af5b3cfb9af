"""report.md is a digest for chat and e-mail: at most 4 KB on the demo, with the headline, the 5 biggest
findings, the teams by waste (a link to all teams) and links to the report's pages; report-full.md keeps
every section and every finding."""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

from pipelines.report.render import DIGEST_BYTES, md_code, shorten_middle


def _week(demo_dir: tuple[Path, str]) -> tuple[Path, list[dict[str, str]]]:
    week = demo_dir[0] / "reports" / "2026-W48"
    with (week / "findings.csv").open(newline="", encoding="utf-8") as f:
        return week, list(csv.DictReader(f))


def test_report_md_is_a_digest_under_4_kb(demo_dir: tuple[Path, str]) -> None:
    week, findings = _week(demo_dir)
    raw = (week / "report.md").read_bytes()
    assert len(raw) <= DIGEST_BYTES == 4096
    md = raw.decode("utf-8")
    counted = [r for r in findings if r["counted"] == "true"]
    waste = sum(Decimal(r["estimated_waste"]) for r in counted).quantize(Decimal("0.01"))
    assert f"**Waste:** USD {waste:,.2f}" in md
    # the 5 biggest counted findings, biggest first, each with its amount
    top = md.split("## Top 5 findings\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in top.splitlines() if line[:2] in {f"{n}." for n in range(1, 6)}]
    biggest = sorted(counted, key=lambda r: -Decimal(r["estimated_waste"]))[:5]
    assert len(lines) == 5
    for line, f in zip(lines, biggest, strict=True):
        assert md_code(shorten_middle(f["resource_id"], 40)) in line
        assert f"USD {Decimal(f['estimated_waste']):,.2f}" in line
    # every team with spend or waste (the demo has fewer than 15), then the link to all of them
    teams = md.split("## Teams by waste\n", 1)[1]
    named = {r["team"] or "(untagged)" for r in counted}
    assert {
        line.split(":", 1)[0][2:].replace("\\", "") for line in teams.splitlines() if line.startswith("- ")
    } >= named
    assert "[All teams and projects](teams.html)" in teams
    for page in ("report.html", "findings.html", "teams.html", "report-full.md"):
        assert f"]({page})" in md


def test_report_full_md_keeps_every_finding(demo_dir: tuple[Path, str]) -> None:
    week, findings = _week(demo_dir)
    full = (week / "report-full.md").read_text(encoding="utf-8")
    assert len(full.encode("utf-8")) > DIGEST_BYTES
    for f in findings:
        assert f"- Finding id: {md_code(f['finding_id'])}" in full, f["finding_id"]
    assert "## Waste by rule" in full and "## Data quality" in full
