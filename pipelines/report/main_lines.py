"""The main page's lines (report.html), each also in report.md or report-full.md: what changed, the top
findings, the attention notes and attention by rule, the teams by waste and the actions by rule and kind."""

from __future__ import annotations

from pipelines.report.forms import Column, Section, money

# The main page's lines ("report": report.html), each also in report.md or report-full.md

_STOPPED_HTML = (
    "{% for s in x.stopped if s.amount %}{{ '; waste that stopped ' if loop.first else ', ' }}"
    '<b id="savings-{{ s.currency }}">{{ s.amount | money(s.currency) }}</b>{% endfor %}'
    '{% for s in x.stopped if not s.amount and s.resolved %}; <span id="stopped-none-{{ s.currency }}">'
    "{% if x.stopped | length > 1 %}{{ s.currency }}: {% endif %}none of the {{ s.resolved }} resolved was "
    "priced waste that stopped</span>{% endfor %}"
)
_STOPPED_MD = (
    "{% for s in x.stopped if s.amount %}{{ '; waste that stopped ' if loop.first else ', ' }}"
    "{{ s.amount | money(s.currency | md) }}{% endfor %}"
    "{% for s in x.stopped if not s.amount and s.resolved %}; {% if x.stopped | length > 1 %}{{ s.currency }}: "
    "{% endif %}none of the {{ s.resolved }} resolved was priced waste that stopped{% endfor %}"
)

CHANGES = Section(
    name="changes",
    title="What changed",
    field="changes",
    page="report",
    table=' id="changes-line"',
    html_lines="p",
    bullet="",
    line="{new} new, {persisting} persisting and {resolved} resolved finding{s}{stopped}.{more}",
    columns=(
        Column("New", '<b id="count-new">{{ x.new }}</b>', "{{ x.new }}", name="new"),
        Column(
            "Persisting",
            '<b id="count-persisting">{{ x.persisting }}</b>',
            "{{ x.persisting }}",
            name="persisting",
        ),
        Column(
            "Resolved", '<b id="count-resolved">{{ x.resolved }}</b>', "{{ x.resolved }}", name="resolved"
        ),
        Column(
            "",
            "{{ '' if x.new + x.persisting + x.resolved == 1 else 's' }}",
            "{{ '' if x.new + x.persisting + x.resolved == 1 else 's' }}",
            name="s",
        ),
        Column("Waste that stopped", _STOPPED_HTML, _STOPPED_MD, name="stopped"),
        Column("", ' <a href="changes.html">Each change</a>.', "", name="more"),
    ),
)

TOP_LINES = Section(
    name="top",
    title="Top findings",
    field="top_groups",
    page="report",
    table=' class="stack" id="top-findings"',
    row='{% if x.rollup %} data-rollup="{{ x.rollup.rule_id }}" data-count="{{ x.rollup.count }}"{% else %}'
    ' data-finding-key="{{ x.finding.finding_key }}"{% endif %}',
    empty="No waste found.",
    line="{rule} {resource} ({team}): {waste}{reason}",
    bullet="1.",
    columns=(
        Column("#", "{{ loop.index }}", None),
        Column(
            "Rule",
            "{{ (x.rollup or x.finding).rule_id }}",
            "{{ (x.rollup or x.finding).rule_id }}",
            name="rule",
        ),
        Column(
            "Resource",
            "{% if x.rollup %}{{ x.rollup.count }} × {{ x.rollup.resource_type }}{% else %}"
            "{{ x.finding.resource_id | idcode }}{% endif %}",
            "{% if x.rollup %}{{ x.rollup.count }} × {{ x.rollup.resource_type | md }}{% else %}"
            "{{ x.finding.resource_id | short(40) | code }}{% endif %}",
            name="resource",
        ),
        Column(
            "Team",
            "{% if x.rollup %}{{ x.rollup.findings | map(attribute='team') | unique | list | length }} team(s)"
            "{% else %}{{ x.finding.team | idtext }}{% endif %}",
            "{% if x.rollup %}{{ x.rollup.findings | map(attribute='team') | unique | list | length }} team(s)"
            "{% else %}{{ x.finding.team | short(30) | md }}{% endif %}",
            td="nowrap",
            name="team",
        ),
        Column(
            "Waste",
            "<a href=\"findings.html#{{ x.rollup.id if x.rollup else 'f-' ~ x.finding.finding_id }}\" "
            'class="evidence">{{ x.amount | money((x.rollup or x.finding).currency) }}</a>'
            "{% if x.finding and x.finding.pricing_basis and x.finding.pricing_basis != 'bill' %} "
            '<small class="basis">{{ x.finding.pricing_basis }} model</small>{% endif %}',
            "**{{ x.amount | money((x.rollup or x.finding).currency | md) }}**"
            "{% if x.finding and x.finding.pricing_basis and x.finding.pricing_basis != 'bill' %} "
            "({{ x.finding.pricing_basis }} model){% endif %}",
            num=True,
            name="waste",
        ),
        Column(
            "Reason",
            "{{ x.reason }}",
            "{% if reasons %} — {{ x.reason | clip(120) | md }}{% endif %}",
            td="reason clip",
            attrs=' title="{{ x.reason }}"',
            name="reason",
        ),
    ),
)

ATTENTION_SUMMARY = Section(
    name="attention-summary",
    title="Needs attention (not waste)",
    field="attention_by_rule",
    page="report",
    table=' id="attention-summary"',
    row=' data-rule="{{ x.rule_id }}"',
    empty="Nothing needs attention.",
    line="{rule}: {items}, {at_stake} at stake",
    columns=(
        Column(
            "Rule",
            "{{ x.rule_id }} {{ x.rule_name | idtext }} <small>({{ x.category }})</small>",
            "{{ x.rule_id }} {{ x.rule_name | md }}",
            name="rule",
        ),
        Column(
            "Items",
            "{{ x.findings }}{% if x.insufficient_data %} <small>(+{{ x.insufficient_data }} not judged)</small>"
            "{% endif %}",
            "{{ x.findings }} item(s){% if x.insufficient_data %} (+{{ x.insufficient_data }} not judged){% endif %}",
            num=True,
            name="items",
        ),
        Column(
            "At stake",
            "{{ x.at_stake | money(x.currency) }}",
            "{{ x.at_stake | money(x.currency | md) }}",
            num=True,
            name="at_stake",
        ),
    ),
)

TOP_TEAMS = Section(
    name="top-teams",
    title="Teams by waste",
    field="top_teams",
    page="report",
    table=' id="top-teams"',
    row=' data-team="{{ x.team }}"',
    empty="No team had spend or waste this week.",
    line="{team}: waste {waste} of {spend}{pct}",
    columns=(
        Column(
            "Team",
            '{% if x.slug %}<a href="teams/{{ x.slug }}.html">{{ x.team | idtext }}</a>{% else %}'
            "{{ x.team | idtext }}{% endif %}",
            "{{ x.team | short(30) | md }}",
            name="team",
        ),
        Column(
            "Spend",
            "{{ x.spend | money(x.currency) }}",
            "{{ x.spend | money(x.currency | md) }}",
            num=True,
            th=' class="hide-narrow"',
            td=" hide-narrow",
            name="spend",
        ),
        money("Waste", "waste", name="waste"),
        Column(
            "Waste %",
            "{{ x.waste_pct if x.waste_pct is not none else '–' }}",
            "{% if x.waste_pct is not none %} ({{ x.waste_pct }} %){% endif %}",
            num=True,
            name="pct",
        ),
        Column(
            "Budget burn",
            "{% if x.budget %}{{ x.budget.burn_pct | num(1) }} %{% else %}–{% endif %}",
            None,
            num=True,
            th=' class="hide-narrow"',
            td=" hide-narrow{% if x.budget and x.budget.burn_pct is not none and x.budget.burn_pct > 100 %} over"
            "{% endif %}",
        ),
    ),
)

_EXECUTABLE = (
    "{% if x.executable == x.count %}all executable{% elif x.executable %}{{ x.executable }} executable"
    "{% else %}for other tooling{% endif %}"
)

ACTION_LINES = Section(
    name="action-lines",
    title="Actions by rule and kind",
    field="action_summary",
    page="report",
    table=' id="action-lines"',
    row=' data-rule="{{ x.rule_id }}" data-kind="{{ x.kind }}"',
    empty="No waste finding of this week has an action wastewatch can plan.",
    empty_id="no-actions",
    html_lines="ul",
    line="{count} ({rule}): {amount} of waste a week; {executable}",
    columns=(
        Column(
            "Actions",
            "<b>{{ x.count }} × {{ x.kind | replace('_', ' ') }}</b>",
            "**{{ x.count }} × {{ x.kind | replace('_', ' ') }}**",
            name="count",
        ),
        Column("Rule", "{{ x.rule_id }}", "{{ x.rule_id }}", name="rule"),
        money("Waste a week", "amount", name="amount"),
        Column(
            "Executable",
            _EXECUTABLE,
            _EXECUTABLE,
            name="executable",
        ),
    ),
)

ATTENTION_NOTES = Section(
    name="attention-notes",
    title="Needs attention (not waste)",
    field="attention_notes",
    page="attention",
    row=' id="{{ x.kind }}-attention" class="attention-line"',
    line="{tag}{message}{detail}{link}",
    html_lines="each",
    columns=(
        Column("Kind", '<span class="tag attention">{{ x.tag }}</span> ', "**{{ x.title }}:** ", name="tag"),
        # our own words and figures, Markdown already (`pricing:`), so not escaped
        Column("Figures", "<b>{{ x.message }}</b>", "{{ x.message }}", name="message"),
        Column("Meaning", "{{ x.detail }}", "{{ x.detail }}", name="detail"),
        Column(
            "Where",
            ' <a href="{{ x.page }}.html#{{ x.anchor }}">{{ x.link }}</a>.',
            ". See {{ x.link }} ({{ x.page }}.html).",
            name="link",
        ),
    ),
)
