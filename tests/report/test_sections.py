"""The report's model is typed and each of its tables is written once (pipelines/report/rows.py,
sections.py): a section definition alone puts a table on its HTML page and in report-full.md, and every
defined table is rendered by both."""

from __future__ import annotations

import re
from dataclasses import fields, replace
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.report import rows
from pipelines.report.forms import Column, Section, money, text
from pipelines.report.headline import HEADLINE
from pipelines.report.model import PAGES, TeamPage, WeeklyReport
from pipelines.report.render import environment, page_html, report_markdown, report_markdown_full
from pipelines.report.rows import Action, Headline, RuleWaste
from pipelines.report.sections import SECTIONS
from rules import Window
from tests.helpers.paths import REPO

TEMPLATES = REPO / "pipelines" / "report" / "templates"


def _rule(rule_id: str, name: str, waste: str) -> RuleWaste:
    return RuleWaste(
        rule_id=rule_id, rule_name=name, category="idle", currency="USD", waste_findings=1, suspect_findings=0,
        insufficient_data_findings=0, acknowledged_findings=0, waste=Decimal(waste),
        monthly_run_rate=Decimal(waste) * 30, suspect_amount=Decimal(0), acknowledged_waste=Decimal(0),
    )  # fmt: skip


def _report(tmp_path: Path) -> WeeklyReport:
    return WeeklyReport(
        week="2026-W48", window=Window.containing(date(2026, 11, 23)), directory=tmp_path, headline=[],
        by_rule=[_rule("GPU001", "idle <b>gpu</b> | instance", "12.5"), _rule("STO001", "orphaned", "0.75")],
        by_project=[], spend_by_category=[], findings=[], resolved=[], gpu_fleet=[], idle_cells={},
        util_bands={}, unobserved_gpu_hours=0.0, trend={}, data_quality=[], budgets=[], rejected_files=[],
        idle_util_pct=5.0,
    )  # fmt: skip


SCRATCH = Section(
    name="scratch-rules",
    title="Scratch: waste per rule",
    field="by_rule",
    page="rules",
    table=' id="scratch-table"',
    row=' data-rule="{{ x.rule_id }}"',
    inline=False,
    columns=(
        text("Rule", "rule_id"),
        text("Name", "rule_name"),
        money("Waste", "waste"),
        Column("Run-rate", "{{ x.monthly_run_rate | money }}", None, num=True),
    ),
)


def test_a_section_defined_once_is_rendered_on_its_page_and_in_the_full_markdown(tmp_path: Path) -> None:
    report = _report(tmp_path)
    env = environment(sections=(*SECTIONS, SCRATCH))
    html = page_html(report, "rules", env)
    table = html.split('<h2 id="scratch-rules">Scratch: waste per rule</h2>\n')[1].split("</table></div>")[0]
    assert table.startswith('<div class="scroll"><table id="scratch-table">\n')
    assert (
        '<thead><tr><th>Rule</th><th>Name</th><th class="num">Waste</th><th class="num">Run-rate</th></tr></thead>'
        in table
    )
    # each row from the model field, its text escaped for HTML; an HTML-only column is in HTML only
    assert re.findall(r'<tr data-rule="(\w+)">', table) == ["GPU001", "STO001"]
    assert (
        '<td>idle &lt;b&gt;gpu&lt;/b&gt; | instance</td><td class="num">USD 12.50</td><td class="num">375.00</td>'
        in table
    )
    md = report_markdown_full(report, env)
    part = md.split("\n## Scratch: waste per rule\n\n")[1]
    assert part.splitlines()[:4] == [
        "| Rule | Name | Waste |",
        "|---|---|---:|",
        "| GPU001 | idle &lt;b&gt;gpu&lt;/b&gt; \\| instance | USD 12.50 |",
        "| STO001 | orphaned | USD 0.75 |",
    ]
    # on no other page, and not at all without its definition
    assert "scratch-rules" not in page_html(report, "fleet", env)
    plain = environment()
    assert "Scratch" not in page_html(report, "rules", plain) and "Scratch" not in report_markdown_full(
        report, plain
    )


def test_every_defined_section_is_rendered_by_both_templates() -> None:
    """An inline section is placed by name in the HTML templates and in report-full.md's or report.md's: a
    table or a list of lines is never in one rendering only."""
    html = "".join(p.read_text(encoding="utf-8") for p in TEMPLATES.glob("*.html.j2"))
    md = "".join((TEMPLATES / f).read_text(encoding="utf-8") for f in ("report-full.md.j2", "report.md.j2"))
    stems = {stem for stem, _ in PAGES} | {"report"}  # the pages, and the main page (report.html)
    for s in SECTIONS:
        assert s.page in stems, s.name
        # a field of the model, or one of its views (the week's attention items, the training summary)
        view = isinstance(getattr(WeeklyReport, s.field, None), property) or callable(
            getattr(WeeklyReport, s.field, None)
        )
        assert s.field in {f.name for f in fields(WeeklyReport)} or view, s.name
        assert not s.totals or callable(getattr(WeeklyReport, s.totals, None)), s.name
        if s.inline:
            assert f"section_html('{s.name}'" in html or f"show_html('{s.name}'" in html, s.name
            assert f"section_md('{s.name}'" in md or f"show_md('{s.name}'" in md, s.name
        assert all(c.html is not None or c.md is not None for c in s.columns), s.name


def test_the_model_has_typed_rows_only() -> None:
    """No public field of the report or a team page holds untyped dict rows; every row type is a frozen
    dataclass with slots."""
    untyped = [
        f"{cls.__name__}.{f.name}"
        for cls in (WeeklyReport, TeamPage)
        for f in fields(cls)
        if "dict[str, Any]" in str(f.type)
    ]
    assert untyped == []
    kinds = [
        k
        for k in vars(rows).values()
        if isinstance(k, type) and issubclass(k, rows.Row) and k is not rows.Row
    ]
    assert len(kinds) >= 20
    for kind in kinds:
        params = kind.__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen and vars(kind).get("__slots__"), kind.__name__


def test_a_row_is_built_by_its_column_names_and_refuses_a_missing_one() -> None:
    row = {
        "action_id": "a1", "kind": "stop_instance", "rule_id": "GPU001", "target": "i-1", "team": "nlp",
        "owner": None, "estimated_waste": Decimal("5.00"), "currency": "USD", "state": "planned",
        "executable": True, "approved_by": None, "column_added_later": 1,
    }  # fmt: skip
    action = Action.of(row)
    assert action.state == "planned" and action["target"] == "i-1" and action.get("nothing") is None
    assert "kind" in action and "column_added_later" not in action
    with pytest.raises(TypeError, match="state"):
        Action.of({k: v for k, v in row.items() if k != "state"})
    with pytest.raises(AttributeError):
        action.state = "applied"  # type: ignore[misc]


LINES = Section(
    name="scratch-lines",
    title="Scratch: rules as lines",
    field="by_rule",
    page="rules",
    table=' id="scratch-lines"',
    row=' data-rule="{{ x.rule_id }}"',
    inline=False,
    line="{rule}: {waste}",
    columns=(text("Rule", "rule_id", name="rule"), money("Waste", "waste", name="waste")),
)


def _headline(currency: str, spend: str, waste: str) -> Headline:
    return Headline(
        currency=currency, spend=Decimal(spend), waste=Decimal(waste), waste_pct=Decimal("10.0"),
        waste_findings=2, findings=2, acknowledged_waste=Decimal(0), acknowledged_findings=0,
        attention_findings=0, prev_spend=None, prev_waste=None, spend_change_pct=None, prev_waste_pct=None,
    )  # fmt: skip


def test_a_section_of_lines_and_the_headline_render_both_forms_from_one_definition(tmp_path: Path) -> None:
    report = _report(tmp_path)
    env = environment(sections=(*SECTIONS, LINES))
    # lines: a table on the HTML page, a list of the same cells in Markdown
    html = page_html(report, "rules", env)
    assert '<tr data-rule="GPU001"><td>GPU001</td><td class="num">USD 12.50</td></tr>' in html
    md = report_markdown_full(report, env)
    assert "\n## Scratch: rules as lines\n\n- GPU001: USD 12.50\n- STO001: USD 0.75\n" in md
    # the headline: one currency as cards, several as a table, each figure with the same id; the same
    # figures as report.md's and report-full.md's lines
    one = replace(report, headline=[_headline("USD", "125", "12.5")])
    cards = str(env.globals["headline_html"](one, one.headline))
    two = replace(report, headline=[_headline("USD", "125", "12.5"), _headline("EUR", "80", "8")])
    table = str(env.globals["headline_html"](two, two.headline))
    assert 'id="headline-table"' in table and 'class="cards"' in cards
    shown = [f for f in HEADLINE if f.id in ("spend", "waste", "waste-pct", "findings")]
    for f in shown:
        assert f'id="{f.id}-USD"' in cards and f'id="{f.id}-EUR"' in table, f.id
        assert f"- **{f.md_label or f.label}:** " in env.globals["headline_md"](one), f.id
    assert 'id="billed-USD"' not in cards  # a figure shown only when it holds (no modelled spend)
    full = report_markdown_full(one, env)
    digest = report_markdown(one, env)
    lines = env.globals["headline_md"](one)
    assert lines in full and lines in digest and "- **Spend:** USD 125.00 (effective cost; " in lines
