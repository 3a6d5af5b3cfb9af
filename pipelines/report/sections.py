"""The report's tables, each defined once: its name, title, the model field its rows come from, the page it
is on and its columns (header, cell, format); the HTML page and report-full.md both render it from here.

A cell is a Jinja snippet with the row as `x` (and the template's filters: `money`, `idcode`, `code`, `md`,
...), one for HTML (autoescaped) and one for Markdown (made literal by the `md` and `code` filters); a
column shown in one rendering only leaves the other None. A template places a section among its own prose
by name (`section_html('actions', rows)`, `section_md('actions', rows)`); a section with `inline=False`
needs no template at all: it is rendered under its title at the end of its page and of report-full.md.
"""

from __future__ import annotations

from pipelines.report.forms import Column, Section, money, text
from pipelines.report.main_lines import (
    ACTION_LINES,
    ATTENTION_NOTES,
    ATTENTION_SUMMARY,
    CHANGES,
    TOP_LINES,
    TOP_TEAMS,
)

# FOCUS service categories as the spend tables group them: (row field, heading)
CATEGORY_GROUPS = (
    ("compute", "Compute"),
    ("storage", "Storage"),
    ("network", "Network"),
    ("ai_ml", "AI/ML"),
    ("other", "Other"),
)

_BASIS = "{% if x.pricing_basis and x.pricing_basis != 'bill' %}"

FINDINGS = Section(
    name="findings",
    title="Top findings",
    field="top",
    page="changes",
    table=' class="stack"{% if table_id %} id="{{ table_id }}"{% endif %}',
    row=' data-finding-key="{{ x.finding_key }}"',
    empty="No waste found.",
    columns=(
        Column("#", "{{ loop.index }}", "{{ loop.index }}", md_num=True, name="number"),
        Column("Rule", "{{ x.rule_id }}", "{{ x.rule_id }}"),
        Column("Resource", "{{ x.resource_id | idcode }}", "{{ x.resource_id | code }}"),
        Column(
            "Team",
            "{{ x.team | idtext }}{% if x.project %}<br><small>{{ x.project | idtext }}</small>{% endif %}",
            "{{ x.team | md }}",
            name="team",
        ),
        Column(
            "Waste",
            "{{ x.estimated_waste | money(x.currency) }}" + _BASIS + '<br><small class="basis">'
            "{{ x.pricing_basis }} model</small>{% endif %}",
            "{{ x.estimated_waste | money(x.currency | md) }}"
            + _BASIS
            + " ({{ x.pricing_basis }} model){% endif %}",
            num=True,
        ),
        Column(
            "Open",
            "{{ m.lifecycle_tag(x) }}",
            "{{ x.lifecycle if x.lifecycle == 'new' else 'week ' ~ x.weeks_open }}",
            th=' class="hide-narrow" title="{{ LIFECYCLE_MEANING }}"',
            td="hide-narrow",
        ),
        Column(
            "Reason",
            '{{ x.reason }} <a href="{{ link }}#f-{{ x.finding_id }}" class="evidence">evidence</a>',
            "{{ x.reason | md }}",
            td="reason",
        ),
    ),
)

ATTENTION = Section(
    name="attention",
    title="Needs attention (not waste)",
    field="attention",
    page="attention",
    table=' class="attention stack"',
    row=' data-rule="{{ x.rule_id }}" data-resource="{{ x.resource_id }}" data-status="{{ x.status }}"',
    empty="Nothing needs attention.",
    columns=(
        Column(
            "Rule",
            "{{ x.rule_id }} <span class=\"tag{% if x.status == 'waste' %} attention{% endif %}\">"
            "{{ ATTENTION_LABELS.get(x.status, x.status) }}</span>",
            "{{ x.rule_id }}",
        ),
        Column(
            "What",
            "{{ x.resource_id | idcode }}{% if x.evidence.suggested_team %}<br><small>suggested owner: "
            "<b>{{ x.evidence.suggested_team | idtext }}</b></small>{% endif %}",
            "{{ x.resource_id | code }}{% if x.evidence.suggested_team %} (suggested owner: "
            "{{ x.evidence.suggested_team | md }}){% endif %}",
        ),
        Column(
            "At stake",
            "{{ (x.estimated_waste if x.status != 'insufficient_data' else none) | money(x.currency) }}",
            "{{ (x.estimated_waste if x.status != 'insufficient_data' else none) | money(x.currency | md) }}",
            num=True,
        ),
        Column(
            "Why",
            '{{ x.reason }} <a href="{{ link }}#f-{{ x.finding_id }}" class="evidence">evidence</a>',
            "{{ x.reason | md }}",
            td="reason",
        ),
    ),
)

_OVER = "{% if x.{0} is not none and x.{0} > {1} %} over{% endif %}"

BUDGETS = Section(
    name="budgets",
    title="Budget burn",
    field="budgets",
    page="attention",
    table=' class="budgets"',
    row=' data-budget="{{ x.dimension }}:{{ x.name }}"',
    columns=(
        Column(
            "Budget",
            "{{ x.dimension }} <b>{{ x.name | idtext }}</b> <small>({{ x.month }}, {{ x.elapsed_days }} of "
            "{{ x.month_days }} days)</small>",
            "{{ x.dimension }} {{ x.name | md }}",
        ),
        money("Month to date", "month_to_date", newline=True),
        money("Budget", "budget", currency=False),
        Column(
            "Burn",
            "{{ x.burn_pct | num(1) }} %",
            "{{ x.burn_pct | num(1) }} %",
            num=True,
            td=_OVER.replace("{0}", "burn_pct").replace("{1}", "100"),
            newline=True,
        ),
        Column(
            "Forecast, linear",
            "{{ x.forecast_straight_line | money }}",
            "{{ x.forecast_straight_line | money }}",
            num=True,
            md_header="Forecast (straight-line)",
            th=' title="month to date ÷ days elapsed × days in the month"',
            td=_OVER.replace("{0}", "forecast_straight_line").replace("{1}", "x.budget"),
            newline=True,
        ),
        Column(
            "Forecast, trailing",
            "{{ x.forecast_trailing | money }}",
            "{{ x.forecast_trailing | money }}",
            num=True,
            md_header="Forecast (trailing)",
            th=' title="from the trailing weeks\' daily spend"',
            td=_OVER.replace("{0}", "forecast_trailing").replace("{1}", "x.budget"),
            newline=True,
        ),
    ),
)

_KIND = "{{ x.kind | replace('_', ' ') }}"

ACTIONS = Section(
    name="actions",
    title="Actions",
    field="actions",
    page="actions",
    table=' class="stack" id="actions"',
    row=' data-action-id="{{ x.action_id }}" data-kind="{{ x.kind }}" data-state="{{ x.state }}"',
    columns=(
        Column(
            "Action", "{{ x.action_id | idcode }}<br><small>" + _KIND + "</small>", "{{ x.action_id | code }}"
        ),
        Column("Kind", None, _KIND),
        Column("Rule", "{{ x.rule_id }}", "{{ x.rule_id }}"),
        Column("Target", "{{ x.target | idcode }}", "{{ x.target | code }}"),
        Column(
            "Owner",
            "{{ (x.owner or x.team or 'unassigned') | idtext }}",
            "{{ (x.owner or x.team or 'unassigned') | md }}",
        ),
        money("Waste this week", "estimated_waste"),
        Column(
            "State",
            "{{ x.state | replace('_', ' ') }}{% if x.approved_by %}<br><small>approved by {{ x.approved_by }}"
            "</small>{% endif %}{% if not x.executable %}<br><small>for other tooling (JSON plan)</small>{% endif %}",
            "{{ x.state | replace('_', ' ') }}{% if x.approved_by %} (approved by {{ x.approved_by | md }}){% endif %}",
        ),
    ),
)

REALISED = Section(
    name="realised",
    title="Saved by actions applied before this week",
    field="realised",
    page="actions",
    table=' id="realised"',
    caption="Saved by actions applied before this week: each action's finding's waste in the week it was "
    "applied, less what it still counts as waste now",
    row=' data-action-id="{{ x.action_id }}"',
    columns=(
        Column(
            "Action", "{{ x.action_id | idcode }}<br><small>" + _KIND + "</small>", "{{ x.action_id | code }}"
        ),
        Column("Target", "{{ x.target | idcode }}", "{{ x.target | code }}"),
        Column(
            "Applied",
            "{{ x.applied_at.strftime('%Y-%m-%d') }} by {{ x.applied_by }}",
            "{{ x.applied_at.strftime('%Y-%m-%d') }} by {{ x.applied_by | md }}",
        ),
        money("Waste then", "baseline_waste"),
        money("Waste now", "week_waste"),
        money("Saved this week", "realised_saving"),
    ),
)

ADVICE = Section(
    name="advice",
    title="Advice",
    field="advice",
    page="actions",
    table=' id="advice-items"',
    row=' data-advice-id="{{ x.advice_id }}" data-kind="{{ x.kind }}" data-status="{{ x.status }}" '
    'data-subject="{{ x.resource_id }}"',
    columns=(
        Column("Advice", "{{ x.advisor_id }} {{ x.kind }}", "{{ x.advisor_id }} {{ x.kind }}"),
        Column(
            "Subject",
            "{{ x.resource_id | idcode }}{% if x.team %}<br><small>{{ x.team | idtext }}</small>{% endif %}",
            "{{ x.resource_id | code }}",
        ),
        Column("Status", "{{ x.status | replace('_', ' ') }}", "{{ x.status | replace('_', ' ') }}"),
        money("Saving a week", "estimated_saving"),
        text("Why", "reason"),
        Column("Basis", "<small>{{ x.basis }}</small>", "{{ x.basis | md }}"),
        Column("Risk", "<small>{{ x.risk }}</small>", "{{ x.risk | md }}"),
    ),
)

SPEND_BY_CATEGORY = Section(
    name="spend-by-category",
    title="Where the money went",
    field="spend_by_category",
    page="teams",
    table=' id="spend-by-category"',
    row=' data-team="{{ x.team }}" data-project="{{ x.project }}" data-basis="{{ x.pricing_basis }}"',
    columns=(
        Column(
            "Team / project",
            "{{ x.team | idtext }}<br><small>{{ x.project | idtext }}{% if x.pricing_basis != 'bill' %} · "
            "{{ x.pricing_basis }} model{% endif %}</small>",
            None,
        ),
        Column("Team", None, "{{ x.team | md }}"),
        Column(
            "Project",
            None,
            "{{ x.project | md }}{% if x.pricing_basis != 'bill' %} ({{ x.pricing_basis }} model){% endif %}",
        ),
        *(money(label, key, currency=False) for key, label in CATEGORY_GROUPS),
        money("Total", "total"),
    ),
)

_BASIS_HTML = "{{ x.pricing_basis }}{% if x.pricing_basis != 'bill' %} <small>(model)</small>{% endif %}"
_MFU = "{{ (x.{0} * 100) | num(1) if x.{0} is not none else '–' }} %"

GPU_FLEET = Section(
    name="gpu-fleet",
    title="GPU fleet",
    field="gpu_fleet",
    page="fleet",
    table=' id="gpu-fleet-table"',
    row=' data-gpu-model="{{ x.gpu_model }}" data-basis="{{ x.pricing_basis }}"',
    empty="No GPU instances billed or priced this week.",
    columns=(
        Column("GPU", "{{ x.gpu_model }}", "{{ x.gpu_model | md }}"),
        Column(
            "Cost basis",
            _BASIS_HTML,
            "{{ x.pricing_basis }}{% if x.pricing_basis != 'bill' %} (model){% endif %}",
        ),
        Column("Instances", "{{ x.instances }}", None, num=True),
        Column("GPU-hours priced", "{{ x.gpu_hours | num }}", "{{ x.gpu_hours | num }}", num=True),
        Column("Idle", "{{ x.idle_pct | num(1) }} %", "{{ x.idle_pct | num(1) }} %", num=True),
        Column("No data", "{{ x.unobserved_pct | num(1) }} %", "{{ x.unobserved_pct | num(1) }} %", num=True),
        money("Cost", "cost"),
        money("per GPU-hour", "cost_per_gpu_hour", currency=False),
        money("per busy GPU-hour", "cost_per_busy_gpu_hour", currency=False),
    ),
)

TRAINING_SUMMARY = Section(
    name="training-summary",
    title="Training throughput (measured)",
    field="training_summary",
    page="fleet",
    table=' class="training-summary"',
    row=' data-gpu-model="{{ x.gpu_model }}" data-basis="{{ x.pricing_basis }}"',
    columns=(
        Column("GPU", "{{ x.gpu_model }}", "{{ x.gpu_model | md }}"),
        Column("Cost basis", _BASIS_HTML, "{{ x.pricing_basis | md }}"),
        Column("Jobs", "{{ x.jobs }}", "{{ x.jobs }}", num=True),
        Column("Tokens", "{{ x.tokens | num }}", "{{ x.tokens | num }}", num=True),
        Column("GPU-hours", "{{ x.gpu_hours | num(1) }}", "{{ x.gpu_hours | num(1) }}", num=True),
        Column(
            "Tokens per GPU-hour",
            "{{ x.tokens_per_gpu_hour | num }}",
            "{{ x.tokens_per_gpu_hour | num }}",
            num=True,
            td=" tokens-per-gpu-hour",
        ),
        Column(
            "Cost per million tokens",
            "{{ x.cost_per_million_tokens | money(x.currency, 4) }}",
            "{{ x.cost_per_million_tokens | money(x.currency | md, 4) }}",
            num=True,
            td=" cost-per-mtok",
        ),
        Column("Median MFU", _MFU.replace("{0}", "mfu_median"), _MFU.replace("{0}", "mfu_median"), num=True),
    ),
)

TRAINING_JOBS = Section(
    name="training-jobs",
    title="Measured MFU per job",
    field="training",
    page="fleet",
    table=' class="training-jobs"',
    row=' data-job="{{ x.job_id }}" data-basis="{{ x.pricing_basis }}"',
    columns=(
        Column(
            "Job",
            "<code>{{ x.job_id }}</code>{% if x.job_name %}<br><small>{{ x.job_name }}</small>{% endif %}",
            "{{ x.job_id | code }}",
        ),
        text("Team", "team", name="team"),
        Column("GPU", "{{ x.gpus }}×{{ x.gpu_model }}", "{{ x.gpus }}×{{ x.gpu_model | md }}"),
        Column(
            "Measured MFU",
            _MFU.replace("{0}", "mfu"),
            _MFU.replace("{0}", "mfu"),
            num=True,
            md_header="MFU",
            td=" mfu",
        ),
        Column(
            "Tokens per GPU-hour",
            "{{ x.tokens_per_gpu_hour | num }}",
            "{{ x.tokens_per_gpu_hour | num }}",
            num=True,
        ),
        Column(
            "Cost per million tokens",
            "{{ x.cost_per_million_tokens | money(x.currency, 4) }}",
            "{{ x.cost_per_million_tokens | money(x.currency | md, 4) }}",
            num=True,
        ),
        Column("Cost basis", "{{ x.pricing_basis }}", "{{ x.pricing_basis | md }}"),
    ),
)

_PEAK_VALUE = "{% if x.currency %}{{ x.VALUE | money(x.currency) }}{% else %}{{ x.VALUE | num(1) }} {{ x.unit }}{% endif %}"
_PEAK_VALUE_MD = (
    "{% if x.currency %}{{ x.VALUE | money(x.currency | md) }}{% else %}{{ x.VALUE | num(1) }} {{ x.unit }}"
    "{% endif %}"
)

PEAKS = Section(
    name="peaks",
    title="Peaks beside averages",
    field="peaks",
    page="fleet",
    table=' id="peaks-table"',
    row=' data-measure="{{ x.measure }}" data-currency="{{ x.currency or \'\' }}"',
    caption="A budget built on the average misses the peak. GPUs in use: busy (above the idle bound) or "
    "running a job in the hour; stored data: every bucket as of its latest listing on the day; each average "
    'is over the hours (days) the week\'s data spans (docs/report.md "Peaks").',
    inline=False,
    columns=(
        Column("Measure", "{{ x.label }}", "{{ x.label | md }}"),
        Column(
            "Average",
            _PEAK_VALUE.replace("VALUE", "average") + "<br><small>over {{ x.periods }} {{ x.per }}s</small>",
            _PEAK_VALUE_MD.replace("VALUE", "average") + " (over {{ x.periods }} {{ x.per }}s)",
            num=True,
        ),
        Column(
            "Peak",
            _PEAK_VALUE.replace("VALUE", "peak") + "<br><small>{{ x.when }}</small>",
            _PEAK_VALUE_MD.replace("VALUE", "peak") + " ({{ x.when }})",
            num=True,
        ),
    ),
)


_STATUS = (
    "{% set status = RULE_STATUS.get(x.rule_id) %}{% if status and status != 'stable' %} "
    '<span class="tag rule-status" title="{{ status }}: {{ RULE_STATUS_MEANING[status] }}">{{ status }}</span>'
    "{% endif %}"
)

BY_RULE = Section(
    name="by-rule",
    title="Waste by rule",
    field="by_rule",
    page="rules",
    table=' id="waste-by-rule"',
    row=' data-rule="{{ x.rule_id }}"',
    empty="No findings.",
    totals="rule_totals",
    total_row=' class="total" data-total="{{ x.currency }}"',
    columns=(
        Column(
            "Rule",
            "{{ x.rule_id }} {{ x.rule_name }}" + _STATUS,
            "{{ x.rule_id }}",
            total=("Total", "**Total**"),
        ),
        Column("Name", None, "{{ x.rule_name | md }}"),
        Column("Category", "{{ x.category }}", "{{ x.category | md }}"),
        Column(
            "Waste this week",
            "{{ x.waste | money(x.currency) }}",
            "{{ x.waste | money }}",
            num=True,
            td=" waste",
            total=("{{ x.waste | money(x.currency) }}", "**{{ x.waste | money }}**"),
            total_td=" waste-total",
        ),
        Column(
            "Monthly run-rate <small>(× {{ DAYS_PER_MONTH }} ÷ 7)</small>",
            "{{ x.monthly_run_rate | money(x.currency) }}",
            "{{ x.monthly_run_rate | money }}",
            num=True,
            md_header="Monthly run-rate (× {{ DAYS_PER_MONTH }} ÷ 7)",
            th=' title="the week\'s waste × {{ DAYS_PER_MONTH }} ÷ 7"',
            td=" monthly",
        ),
        # a bar of the rule's waste against the largest rule's
        Column(
            "",
            "{{ charts.share_bar(x.waste, rows | map(attribute='waste') | max) }}",
            None,
            th=' class="hide-narrow" style="width:20%"',
            td="hide-narrow",
        ),
        Column(
            "Waste / suspect / no data",
            "{{ x.waste_findings }} / {{ x.suspect_findings }} / {{ x.insufficient_data_findings }}",
            "{{ x.waste_findings }} / {{ x.suspect_findings }} / {{ x.insufficient_data_findings }}",
            num=True,
            md_num=False,
            md_header="Findings (waste / suspect / no data)",
        ),
        Column("Currency", None, "{{ x.currency | md }}", total=("", "{{ x.currency | md }}")),
    ),
)

_BURN = (
    "{% if x.budget and x.budget.burn_pct is not none %}{{ x.budget.burn_pct | num(1) }} % of "
    "{{ x.budget.budget | money }}{% else %}–{% endif %}"
)

BY_TEAM = Section(
    name="by-team",
    title="Waste by team and project",
    field="team_lines",
    page="teams",
    table=' id="waste-by-team"',
    row=' data-team="{{ x.team }}"{% if x.project is none %} class="total"{% else %} data-project="{{ x.project }}"'
    "{% endif %}",
    empty="No team had spend or waste this week.",
    columns=(
        Column(
            "Team / project",
            "{% if x.project is not none %}&nbsp;&nbsp;{{ x.project | idtext }}{% elif x.slug %}"
            '<a href="teams/{{ x.slug }}.html">{{ x.team | idtext }}</a>{% else %}{{ x.team | idtext }}{% endif %}',
            None,
        ),
        Column(
            "Team",
            None,
            "{% if x.project is none %}**{{ x.team | md }}**{% else %}{{ x.team | md }}{% endif %}",
        ),
        Column("Project", None, "{{ x.project | md if x.project is not none else 'all projects' }}"),
        Column(
            "Spend",
            "{{ x.spend | money(x.currency if x.project is none else none) }}",
            "{{ x.spend | money }}",
            num=True,
        ),
        Column(
            "Waste",
            "{{ x.waste | money(x.currency if x.project is none else none) }}",
            "{{ x.waste | money }}",
            num=True,
        ),
        Column(
            "Waste %",
            "{{ x.waste_pct if x.waste_pct is not none else '–' }}",
            "{{ x.waste_pct if x.waste_pct is not none else '–' }}",
            num=True,
        ),
        Column(
            "Budget burn",
            _BURN,
            _BURN,
            num=True,
            td="{% if x.budget and x.budget.burn_pct is not none and x.budget.burn_pct > 100 %} over{% endif %}",
        ),
        Column("Currency", None, "{{ x.currency | md }}"),
    ),
)

_NOW = (
    "{% if x.now != 'gone' %}{{ x.now | replace('_', ' ') }} (not counted as stopped){% elif x.job %}job ended "
    "or did not recur (not counted as stopped){% else %}no finding{% endif %}"
)

RESOLVED = Section(
    name="resolved",
    title="Resolved since last week",
    field="resolved",
    page="changes",
    table=' class="stack" id="resolved-findings"',
    row=' data-finding-key="{{ x.finding_key }}"',
    empty="Nothing resolved since last week.",
    columns=(
        Column("Rule", "{{ x.rule_id }}", "{{ x.rule_id }}"),
        Column("Resource", "{{ x.resource_id | idcode }}", "{{ x.resource_id | code }}"),
        Column("Team", "{{ x.team | idtext }}", "{{ x.team | md }}"),
        Column(
            "Last week's waste",
            "{{ x.last_week_waste | money(x.currency) }}{% if not x.counted_last_week %} "
            "<small>(acknowledged)</small>{% endif %}",
            "{{ x.last_week_waste | money(x.currency | md) }}{% if not x.counted_last_week %} (acknowledged)"
            "{% endif %}",
            num=True,
        ),
        Column(
            "Now",
            _NOW,
            _NOW,
            attrs=" data-now=\"{{ 'ended' if x.now == 'gone' and x.job else x.now }}\"",
        ),
    ),
)

ACKNOWLEDGED = Section(
    name="acknowledged",
    title="Acknowledged",
    field="acknowledged",
    page="findings",
    table=' id="acknowledged-findings"',
    row=' data-finding-key="{{ x.finding_key }}"',
    empty="No acknowledged findings this week.",
    columns=(
        Column("Rule", "{{ x.rule_id }}", "{{ x.rule_id }}"),
        Column("Resource", "{{ x.resource_id | idcode }}", "{{ x.resource_id | code }}"),
        money("Amount", "estimated_waste"),
        Column("Until", "{{ x.acked_until }}", "{{ x.acked_until }}"),
        Column(
            "Reason",
            "{{ x.ack_reason }}{% if x.acked_by %} <small>({{ x.acked_by }})</small>{% endif %} "
            '<a href="findings.html#f-{{ x.finding_id }}" class="evidence">evidence</a>',
            "{{ x.ack_reason | md }}{% if x.acked_by %} ({{ x.acked_by | md }}){% endif %}",
        ),
    ),
)

DATA_QUALITY = Section(
    name="data-quality",
    title="Tag and telemetry coverage",
    field="data_quality",
    page="quality",
    table=' id="data-quality-table"',
    row=' data-currency="{{ x.currency }}"',
    columns=(
        Column("Currency", "{{ x.currency }}", "{{ x.currency | md }}"),
        Column(
            "Spend with a team tag",
            "{{ x.tagged_pct | num(1) }} % <small>({{ x.tagged_spend | money }} of {{ x.spend | money }})</small>",
            "{{ x.tagged_pct | num(1) }} % ({{ x.tagged_spend | money }} of {{ x.spend | money }})",
            num=True,
            attrs=' id="tagged-pct-{{ x.currency }}"',
        ),
        Column(
            "GPU spend with telemetry",
            "{{ x.gpu_telemetry_pct | num(1) }} % <small>({{ x.gpu_spend_with_telemetry | money }} of "
            "{{ x.gpu_spend | money }})</small>",
            "{{ x.gpu_telemetry_pct | num(1) }} % ({{ x.gpu_spend_with_telemetry | money }} of "
            "{{ x.gpu_spend | money }})",
            num=True,
            attrs=' id="telemetry-pct-{{ x.currency }}"',
        ),
    ),
)

FOCUS_CONFORMANCE = Section(
    name="focus-conformance",
    title="FOCUS 1.2 conformance",
    field="focus_conformance",
    page="quality",
    table=' id="focus-conformance"',
    row=' data-source="{{ x.source }}" data-rule="{{ x.rule }}"',
    columns=(
        Column("Source", "{{ x.source | idcode }}", "{{ x.source | code }}"),
        Column(
            "Rule",
            "{{ x.requirement }} <small>({{ x.rule }})</small>",
            "{{ x.requirement | md }} ({{ x.rule | md }})",
        ),
        Column(
            "Lines",
            "{{ x.lines | num }} <small>of {{ x.source_lines | num }}</small>",
            "{{ x.lines | num }} of {{ x.source_lines | num }}",
            num=True,
        ),
        Column(
            "Spend touched",
            "{{ x.spend | money(x.currency) }} <small>of {{ x.source_spend | money(x.currency) }} "
            "({{ x.spend_pct | num(1) }} %)</small>",
            "{{ x.spend | money(x.currency | md) }} of {{ x.source_spend | money(x.currency | md) }} "
            "({{ x.spend_pct | num(1) }} %)",
            num=True,
        ),
    ),
)

UNPRICED_HOSTS = Section(
    name="unpriced-hosts",
    title="Unpriced hosts",
    field="unpriced",
    page="quality",
    table=' id="unpriced-hosts"',
    row=' data-host="{{ x.host }}"',
    columns=(
        Column("Host", "{{ x.host | idcode }}", "{{ x.host | code }}"),
        Column("GPUs", "{{ x.gpus }}", "{{ x.gpus }}", num=True),
        Column("GPU-hours", "{{ x.gpu_hours | num }}", "{{ x.gpu_hours | num }}", num=True),
        Column("Idle GPU-hours", "{{ x.idle_gpu_hours | num }}", "{{ x.idle_gpu_hours | num }}", num=True),
    ),
)


REJECTED_FILES = Section(
    name="rejected-files",
    title="Rejected files",
    field="rejected_files",
    page="quality",
    table=' id="rejected-files"',
    html_lines="ul",
    line="{source}: {error}",
    columns=(
        Column("Source", "{{ x.source | idcode }}", "{{ x.source | code }}", name="source"),
        Column("Error", "{{ x.error }}", "{{ x.error | md }}", name="error"),
    ),
)

STALE_SOURCES = Section(
    name="stale-sources",
    title="Sources that stopped delivering",
    field="stale_sources",
    page="quality",
    table=' id="stale-sources"',
    html_lines="ul",
    line="{source}: {problem}",
    columns=(
        Column("Source", "{{ x.source | idcode }}", "{{ x.source | code }}", name="source"),
        Column("Problem", "{{ x.problem }}", "{{ x.problem | md }}", name="problem"),
    ),
)


# every section, in the order report-full.md and a page list the ones a template does not place itself
SECTIONS = (
    CHANGES,
    TOP_LINES,
    ATTENTION_NOTES,
    ATTENTION_SUMMARY,
    TOP_TEAMS,
    ACTION_LINES,
    FINDINGS,
    RESOLVED,
    ATTENTION,
    BUDGETS,
    ACTIONS,
    REALISED,
    ADVICE,
    BY_RULE,
    BY_TEAM,
    SPEND_BY_CATEGORY,
    GPU_FLEET,
    TRAINING_SUMMARY,
    TRAINING_JOBS,
    ACKNOWLEDGED,
    DATA_QUALITY,
    FOCUS_CONFORMANCE,
    UNPRICED_HOSTS,
    REJECTED_FILES,
    STALE_SOURCES,
    PEAKS,
)
