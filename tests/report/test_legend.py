"""What the report's short words mean is on the page that shows them: a rule's status (`preview`) beside
the rule on rules.html with a one-line legend, and in report-full.md; a finding's "week N" tag with its
meaning on hover (and the "Open" column's legend), and under report-full.md's table."""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import Decimal

from pipelines.report.render import environment, page_html, report_markdown_full, team_html
from tests.helpers.report import Built

PREVIEW = "finds real money, but its thresholds, evidence or pricing may still change"


def test_preview_rules_and_week_n_are_explained_where_they_are_shown(built: Built) -> None:
    [gpu001] = [x for x in built.report.by_rule if x["rule_id"] == "GPU001"]  # a stable rule
    sto001 = replace(gpu001, rule_id="STO001", rule_name="orphaned-checkpoint", waste=Decimal(0),
                     monthly_run_rate=Decimal(0))  # fmt: skip
    [counted] = [f for f in built.report.findings if f["counted"]]
    open4 = replace(counted, lifecycle="persisting", weeks_open=4, first_seen="2026-11-02")
    report = replace(
        built.report,
        by_rule=[gpu001, sto001],
        findings=[open4 if f is counted else f for f in built.report.findings],
    )
    env = environment()
    rules = page_html(report, "rules", env)
    assert (
        '<tr data-rule="STO001"><td>STO001 orphaned-checkpoint <span class="tag rule-status" '
        f'title="preview: {PREVIEW}">preview</span></td>' in rules
    )
    assert '<tr data-rule="GPU001"><td>GPU001 idle-gpu-instance</td>' in rules  # stable: no tag
    assert re.search(
        rf'<p class="note" id="rule-status-note">A rule\'s status says how settled it is: <b>preview</b> '
        rf"\(STO001\): {PREVIEW}; a rule without a tag is stable.</p>",
        rules,
    )
    md = report_markdown_full(report, env)
    assert f"Rules in preview ({PREVIEW}): STO001." in md
    assert re.search(r"\| 1 \| GPU001 \| `i-h100` \| nlp \| USD 8,640.00 \| week 4 \|", md)
    assert (
        "Open: new = first found this week; week N = found in each of the last N weeks, this one included; "
        "growing / shrinking = more / less waste than last week." in md
    )
    [nlp] = [t for t in built.report.teams if t.name == "nlp"]
    html = team_html(report, replace(nlp, findings=[open4]), env)
    assert (
        '<span class="tag" title="found in each of the last 4 weeks, this one included (first seen 2026-11-02)">week 4</span>'
        in html
    )
    assert (
        '<th class="hide-narrow" title="new = first found this week; week N = found in each of the last N'
        in html
    )
