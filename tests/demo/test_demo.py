"""`wastewatch demo` end to end: planted waste is found, to the cent, by the real pipeline."""

from __future__ import annotations

import csv
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.units import DAYS_PER_MONTH
from rules import ALL_RULES

pytestmark = pytest.mark.e2e
CENT = Decimal("0.01")


def test_demo_report_matches_the_planted_idle_waste(demo_dir: tuple[Path, str]) -> None:
    directory, output = demo_dir
    expected = json.loads((directory / "expected.json").read_text())
    planted = Decimal(str(expected["report_week"]["rules"]["GPU001"]["waste"]))
    assert planted > 1000  # the dev boxes alone idle most of the week
    with (directory / "reports" / "2026-W48" / "findings.csv").open() as f:
        findings = list(csv.DictReader(f))
    found = sum(
        Decimal(r["estimated_waste"]) for r in findings if r["rule_id"] == "GPU001" and r["status"] == "waste"
    )
    assert abs(found - planted) <= planted * Decimal("0.01")
    assert f"planted USD {planted:,.2f}" in output


def test_demo_findings_name_the_planted_hosts(demo_dir: tuple[Path, str]) -> None:
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text())["report_week"]["rules"]["GPU001"]
    with (directory / "reports" / "2026-W48" / "findings.csv").open() as f:
        findings = list(csv.DictReader(f))
    gpu001 = [r for r in findings if r["rule_id"] == "GPU001"]
    hosts_with_waste = {json.loads(r["evidence"])["host"]: r for r in gpu001 if r["status"] == "waste"}
    assert set(hosts_with_waste) == set(expected["by_host"])
    for host, amount in expected["by_host"].items():
        assert Decimal(hosts_with_waste[host]["estimated_waste"]) == pytest.approx(
            Decimal(str(amount)), abs=Decimal("0.01")
        )
    # the telemetry outage is insufficient data, never "not idle" and never priced
    outage = [r for r in gpu001 if r["status"] == "insufficient_data"]
    assert [json.loads(r["evidence"])["host"] for r in outage] == [expected["insufficient_data"]["host"]]
    assert Decimal(outage[0]["estimated_waste"]) == 0
    assert (
        json.loads(outage[0]["evidence"])["hours_without_telemetry"]
        == expected["insufficient_data"]["hours_without_telemetry"]
    )


def test_demo_spend_and_landing_zone(demo_dir: tuple[Path, str]) -> None:
    directory, output = demo_dir
    expected = json.loads((directory / "expected.json").read_text())
    md = (directory / "reports" / "2026-W48" / "report.md").read_text()
    assert f"USD {Decimal(str(expected['report_week']['spend'])):,.2f}" in md
    # the landing zone holds every kind of input, and the run read them all
    assert any((directory / "landing" / "jobs" / "sacct").iterdir())
    assert (directory / "landing" / "inventory" / "acme-ckpt" / "daily" / "data").is_dir()
    # every rule family has a planted amount
    assert set(expected["report_week"]["rules"]) >= {
        "GPU001",
        "GPU002",
        "GPU003",
        "STO001",
        "STO002",
        "COST001",
        "COST002",
        "COST003",
    }


def _by_rule_rows(md: str) -> dict[str, list[str]]:
    """report-full.md's "Waste by rule" table: rule id -> its cells."""
    section = md.split("## Waste by rule\n", 1)[1].split("\n## ", 1)[0]
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()]
    return {c[0]: c for c in cells if len(c) > 4 and c[0] not in ("Rule", "---", "**Total**")}


def test_demo_report_shows_every_planted_waste_item_under_its_rule(demo_dir: tuple[Path, str]) -> None:
    """Each waste rule's row holds the dollars expected.json planted for it, and no rule without a plant
    has a row. Tolerance one cent: expected.json rounds an exact decimal sum once; the report rounds the
    sum of the findings' 6-decimal amounts (the GPU rules compute in double precision), so a sum lying on
    a half cent may round the other way."""
    directory, _ = demo_dir
    planted = json.loads((directory / "expected.json").read_text())["report_week"]["rules"]
    waste_rules = {r.id for r in ALL_RULES if not r.attention}
    assert waste_rules <= set(planted)  # every waste rule is stated, 0 where nothing is planted
    md = (directory / "reports" / "2026-W48" / "report-full.md").read_text()
    rows = _by_rule_rows(md)
    assert set(rows) == {r for r in waste_rules if planted[r]["waste"] > 0}
    with (directory / "reports" / "2026-W48" / "findings.csv").open() as f:
        counted = [r for r in csv.DictReader(f) if r["counted"] == "true"]
    for rule_id, cells in rows.items():
        waste, monthly = (Decimal(c.replace(",", "")) for c in cells[3:5])
        assert abs(waste - Decimal(str(planted[rule_id]["waste"]))) <= CENT, rule_id
        # the monthly run-rate is the week's waste x 30.44 / 7 ...
        found = sum(Decimal(r["estimated_waste"]) for r in counted if r["rule_id"] == rule_id)
        assert abs(monthly - found * DAYS_PER_MONTH / 7) <= Decimal("0.005"), rule_id
        # ... which for storage is the planted bytes' monthly cost (what deleting them saves a month)
        if "monthly_cost" in planted[rule_id]:
            assert abs(monthly - Decimal(str(planted[rule_id]["monthly_cost"]))) <= CENT, rule_id
    assert "STO001" in rows and "STO002" in rows  # the storage plants have their run-rate checked


def test_the_cli_rule_lines_add_up_to_the_headline_or_say_why(demo_dir: tuple[Path, str]) -> None:
    _, output = demo_dir
    lines = output.splitlines()
    rule_waste = [
        Decimal(m.group(1).replace(",", ""))
        for m in (re.search(r"^findings/\S+: \d+ finding\(s\); waste USD ([\d,.]+)$", ln) for ln in lines)
        if m
    ]
    assert len(rule_waste) >= 5
    [at] = [i for i, ln in enumerate(lines) if re.match(r"^  spend USD [\d,.]+, waste USD [\d,.]+$", ln)]
    total = Decimal(lines[at].rsplit("USD ", 1)[1].replace(",", ""))
    added = sum(rule_waste, Decimal(0))
    if added == total:
        assert not lines[at + 1].startswith("  (the rule lines")
    else:
        assert (
            lines[at + 1] == f"  (the rule lines add to USD {added:,.2f}: each line is rounded to the cent)"
        )


@pytest.mark.parametrize(
    ("lines", "total", "note"),
    [
        (["1.00", "2.00"], "3.00", None),
        (
            ["0.01", "0.01", "0.01"],
            "0.02",
            "(the rule lines add to USD 0.03: each line is rounded to the cent)",
        ),
        (
            ["10.00", "5.00"],
            "10.00",
            "(the rule lines add to USD 15.00: acknowledged findings are left out of the total)",
        ),
        ([], "3.00", None),
    ],
)
def test_rounding_note(lines: list[str], total: str, note: str | None) -> None:
    from pipelines.cli.money import rounding_note

    assert rounding_note([Decimal(x) for x in lines], Decimal(total), "USD") == note


def test_the_readme_demo_excerpt_is_what_the_demo_prints(demo_dir: tuple[Path, str]) -> None:
    """The README's excerpt of `make demo` (four weeks) against this one-week demo of the same seed: the
    rule lines and the planted line print the same; the week's spend and waste differ (four weeks of
    checkpoints and datasets are stored by W48), so that line is checked for its form only."""
    directory, output = demo_dir
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("and ends like this:\n\n```\n", 1)[1].split("```", 1)[0]
    printed = output.replace(str(directory), "demo").splitlines()
    excerpt = [ln for ln in block.splitlines() if ln.startswith(("findings/gpu", "GPU001 ", "report: "))]
    assert len(excerpt) == 4
    for line in excerpt:
        assert line in printed, f"README shows {line!r}; the demo prints other figures"
    [spend] = [ln for ln in block.splitlines() if ln.startswith("  spend ")]
    assert re.fullmatch(r"  spend USD [\d,]+\.\d\d, waste USD [\d,]+\.\d\d", spend)
