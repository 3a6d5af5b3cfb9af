"""The report's tables, each defined once: its name, title, the model field its rows come from, the page it
is on and its columns (header, cell, format); the HTML page and report-full.md both render it from here.

A cell is a Jinja snippet with the row as `x` (and the template's filters: `money`, `idcode`, `code`, `md`,
...), one for HTML (autoescaped) and one for Markdown (made literal by the `md` and `code` filters); a
column shown in one rendering only leaves the other None. A template places a section among its own prose
by name (`section_html('actions', rows)`, `section_md('actions', rows)`); a section with `inline=False`
needs no template at all: it is rendered under its title at the end of its page and of report-full.md.
"""

from __future__ import annotations

from dataclasses import dataclass

# FOCUS service categories as the spend tables group them: (row field, heading)
CATEGORY_GROUPS = (
    ("compute", "Compute"),
    ("storage", "Storage"),
    ("network", "Network"),
    ("ai_ml", "AI/ML"),
    ("other", "Other"),
)


@dataclass(frozen=True)
class Column:
    """One column: its header and its cell per rendering (None: not shown there)."""

    header: str
    html: str | None
    md: str | None
    num: bool = False  # right-aligned, a figure
    md_num: bool | None = None  # right-aligned in Markdown where it differs (a row number)
    md_header: str | None = None  # the Markdown header where it differs from the HTML one
    th: str = ""  # more attributes of the HTML header cell (a title)
    td: str = ""  # the HTML cell's class (a snippet), written right after "num" for a figure: " mfu"
    name: str = ""  # to leave the column out by name (`hide`), e.g. the team on a team's own page
    newline: bool = False  # the HTML cell starts a new source line (long rows stay readable)
    attrs: str = ""  # more attributes of the HTML cell (a snippet): an id, a data-* value
    # the column's cell in the section's total rows (Section.totals) as (HTML, Markdown), the total row as
    # `x`; None: an empty cell. `total_td` is the total cell's class where it differs from the column's
    total: tuple[str, str] | None = None
    total_td: str | None = None


@dataclass(frozen=True)
class Section:
    """One table of the report. `field` names the WeeklyReport (or TeamPage) field its rows come from;
    `page` the HTML page (a PAGES stem) it is on; every section is in report-full.md as well."""

    name: str
    title: str
    field: str
    page: str
    columns: tuple[Column, ...]
    table: str = ""  # the HTML table's attributes (id, class)
    row: str = ""  # the HTML row's attributes, a snippet (data-* the tests and readers select by)
    caption: str = ""
    empty: str = ""  # shown when there are no rows: a row of the HTML table, the line in Markdown
    empty_id: str = ""  # the HTML id of that row (or list item)
    inline: bool = True  # placed by name in its page's template and report-full.md's
    # the model's view (a WeeklyReport method or property) whose rows are the section's total rows, shown
    # under its rows with each column's `total` cell; `total_row` the HTML total row's attributes
    totals: str = ""
    total_row: str = ""
    # a section of lines rather than a table: `line` joins the columns' cells by name ("{team}: waste
    # {waste}"); Markdown then shows a list (`bullet` before each line, "1." numbers them), and HTML a table
    # still, unless `html_lines` names the element its lines go in ("ul": a list, "p": one paragraph,
    # "each": a paragraph per line, with the row's attributes)
    line: str = ""
    bullet: str = "- "
    html_lines: str = ""


def text(header: str, key: str, **kw: object) -> Column:
    """A column of plain text from the row's `key`."""
    return Column(header, f"{{{{ x.{key} }}}}", f"{{{{ x.{key} | md }}}}", **kw)  # type: ignore[arg-type]


def money(header: str, key: str, currency: bool = True, **kw: object) -> Column:
    """A column of money from the row's `key`, with the row's currency unless `currency` is False."""
    if not currency:
        return Column(header, f"{{{{ x.{key} | money }}}}", f"{{{{ x.{key} | money }}}}", num=True, **kw)  # type: ignore[arg-type]
    return Column(
        header,
        f"{{{{ x.{key} | money(x.currency) }}}}",
        f"{{{{ x.{key} | money(x.currency | md) }}}}",
        num=True,
        **kw,  # type: ignore[arg-type]
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


@dataclass(frozen=True)
class Figure:
    """One figure of the headline (the week's spend, waste, ...) in one currency, defined once and shown as
    a card (one currency, a team's page), a cell of the headline table (several currencies) and a line of
    report.md and report-full.md. Snippets see the headline row as `h`, the report as `r`, and `brief`
    (True in the table's narrow cells)."""

    id: str  # the HTML value's id: `{id}-{currency}` (a team page prefixes `team-`)
    label: str
    html: str  # the value
    md: str  # the Markdown line's text after its label
    note: str = ""  # the HTML note under the value
    note_id: str = ""  # the note's id, as the value's
    note_attrs: str = ""  # more attributes of the note (a snippet)
    when: str = "true"  # a Jinja test: the figure is shown for this row
    card: str = ""  # more classes of the card (a snippet): `waste`, `saved`
    md_label: str = ""  # the Markdown label where it differs
    md_sub: bool = False  # a Markdown line under the one before it (indented)
    team: bool = True  # shown on a team's page (a team's headline has no week-over-week figures)
    per_currency: bool = False  # the card's label names the currency
    num: bool = True  # a figure (right-aligned in the table, its note under it); False: words after it
    head: str = ""  # the table's header where it differs from the label (a narrow column)


_PREV = "r.previous_data(h.currency)"
# the spend's and the waste's change against last week (render.change), `brief` in the table's cells
_SPEND = "change(h.spend, h.prev_spend, r.previous_data(h.currency), 'spend'"
_WASTE = "change(h.waste, h.prev_waste, r.previous_data(h.currency), 'waste'"

HEADLINE = (
    Figure(
        "spend",
        "Spend",
        "{{ h.spend | money }}",
        "{{ h.spend | money(h.currency | md) }} (effective cost; {{ " + _SPEND + ") }})",
        note="{% if h.prev_spend is defined %}{{ " + _SPEND + ", brief) }}{% endif %}",
        note_id="spend-change",
        note_attrs='{% if h.prev_spend is defined %} data-previous="{{ ' + _PREV + ' }}"{% endif %}',
        per_currency=True,
    ),
    Figure(
        "billed-modelled",  # the value's parts carry their own ids: billed-USD, modelled-USD
        "Billed / modelled",
        '<span id="{{ prefix }}billed-{{ h.currency }}">{{ h.billed_spend | money }}</span> / '
        '<span id="{{ prefix }}modelled-{{ h.currency }}">{{ h.modelled_spend | money }}</span>',
        "billed {{ h.billed_spend | money(h.currency | md) }}; modelled (cost models, not a bill): owned "
        "{{ h.owned_spend | money(h.currency | md) }}, contract {{ h.contract_spend | money(h.currency | md) }}",
        note="modelled by cost models, not a bill: owned {{ h.owned_spend | money }}, contract "
        "{{ h.contract_spend | money }}",
        when="h.modelled_spend",
        card=" modelled",
        md_sub=True,
        per_currency=True,
        team=False,
    ),
    Figure(
        "waste",
        "Waste",
        "{{ h.waste | money }}",
        "{{ h.waste | money(h.currency | md) }}; {{ " + _WASTE + ") }}",
        note="{% if h.prev_waste is defined %}{{ " + _WASTE + ", brief) }}{% endif %}",
        note_id="waste-change",
        note_attrs='{% if h.prev_waste is defined %} data-previous="{{ ' + _PREV + ' }}"{% endif %}',
        card=" waste",
        per_currency=True,
    ),
    Figure(
        "waste-pct",
        "Waste share",
        "{{ h.waste_pct if h.waste_pct is not none else '–' }} %",
        "{{ h.waste_pct if h.waste_pct is not none else '–' }} % of spend",
        note="{% if h.prev_waste_pct is defined and not brief %}last week {% set prev = " + _PREV + " %}"
        "{% if prev == 'partial' %}partial{% elif prev == 'none' %}no data{% else %}"
        "{{ h.prev_waste_pct if h.prev_waste_pct is not none else '–' }} %{% endif %}{% endif %}",
        head="Share",
    ),
    Figure(
        "findings",
        "Waste findings",
        "{{ h.waste_findings }}",
        "{{ r.finding_count(h.currency) | md }}",
        note="{% if h.findings is defined %}{{ r.finding_count(h.currency) }}{% endif %}",
        note_id="findings-count",
        num=False,
    ),
    Figure(
        "saved",
        "Waste that stopped",
        "{% set stop = r.stopped(h.currency) %}{{ stop.amount | money if stop.amount else 'none' }}",
        "{% set stop = r.stopped(h.currency) %}{% if stop.amount %}{{ stop.amount | money(h.currency | md) }} "
        "({{ stop.note }}){% else %}none ({{ stop.note }}){% endif %}",
        note="{% set stop = r.stopped(h.currency) %}{% if not brief %}{{ stop.note }}{% elif stop.resolved %}"
        "{{ stop.resolved }} resolved{% if not stop.stopped %}, none priced waste that stopped{% endif %}{% endif %}",
        note_id="stopped-note",
        when="r.previous_evaluated",
        card="{% if r.stopped(h.currency).amount %} saved{% endif %}",
        md_label="Waste that stopped since last week",
        head="Stopped",
        team=False,
    ),
    Figure(
        "acknowledged",
        "Acknowledged",
        "{{ h.acknowledged_findings }}",
        "{{ h.acknowledged_findings }} finding(s), {{ h.acknowledged_waste | money(h.currency | md) }} of waste "
        "left out of the total",
        note="{{ h.acknowledged_waste | money }} of waste left out of the total",
        when="h.acknowledged_findings",
        team=False,
    ),
)


def headline_cards_source(team: bool = False) -> str:
    """The Jinja source of one currency's headline as cards (`h` the row, `prefix` the ids' prefix)."""
    cards = []
    for f in HEADLINE:
        if team and not f.team:
            continue
        note = (
            f'<div class="delta"{f" id={chr(34)}{{{{ prefix }}}}{f.note_id}-{{{{ h.currency }}}}{chr(34)}" if f.note_id else ""}'
            f"{f.note_attrs}>{f.note}</div>"
            if f.note
            else ""
        )
        label = f.label + (" ({{ h.currency }})" if f.per_currency else "")
        cards.append(
            f'{{% if {f.when} %}}<div class="card{f.card}"><div class="label">{label}</div>'
            f'<div class="value" id="{{{{ prefix }}}}{f.id}-{{{{ h.currency }}}}">{f.html}</div>{note}</div>\n{{% endif %}}'
        )
    return '<div class="cards" data-currency="{{ h.currency }}">\n' + "".join(cards) + "</div>"


def headline_table_source(shown: tuple[str, ...]) -> str:
    """The Jinja source of the headline of several currencies as a table, a row per currency (`rows`), a
    column per figure in `shown` (those any row shows), then `extra` (a total row); the cards' ids."""
    heads, cells = ["<th>Currency</th>"], ["<td><b>{{ h.currency }}</b></td>"]
    for f in HEADLINE:
        if f.id not in shown:
            continue
        note_id = f' id="{f.note_id}-{{{{ h.currency }}}}"' if f.note_id else ""
        sep = "<br>" if f.num else ": "
        note = f"{sep}<small{note_id}{f.note_attrs}>{f.note}</small>" if f.note else ""
        num = ' class="num"' if f.num else ""
        heads.append(f"<th{num}>{f.head or f.label}</th>")
        cells.append(
            f'<td{num} data-label="{f.label.lower()}">{{% if {f.when} %}}'
            f'<b class="{f.id}" id="{f.id}-{{{{ h.currency }}}}">{f.html}</b>{note}{{% else %}}–{{% endif %}}</td>'
        )
    return (
        '<table class="stack headline" id="headline-table">\n<thead><tr>' + "".join(heads) + "</tr></thead>\n"
        '<tbody>\n{% for h in rows %}<tr data-currency="{{ h.currency }}">' + "".join(cells) + "</tr>\n"
        "{% endfor %}{{ extra }}</tbody></table>"
    )


def headline_md_source() -> str:
    """The Jinja source of one currency's headline as Markdown lines (report.md and report-full.md)."""
    lines = []
    for f in HEADLINE:
        lead = "  - " if f.md_sub else f"- **{f.md_label or f.label}:** "
        lines.append(f"{{% if {f.when} %}}{lead}{f.md}\n{{% endif %}}")
    return "{% autoescape false %}" + "".join(lines) + "{% endautoescape %}"


def _line(section: Section, form: str) -> str:
    """The section's `line` with each column's cell of `form` ("html" or "md") in place of its name."""
    cells = {c.name: (c.html if form == "html" else c.md) or "" for c in section.columns if c.name}
    return section.line.format(**cells)


def _html_lines(section: Section) -> str:
    """The Jinja source of a section of lines as HTML: a list, or one paragraph."""
    line = _line(section, "html")
    if section.html_lines == "p":
        return f"<p{section.table}>{{% for x in rows %}}{line}{{% endfor %}}</p>"
    if section.html_lines == "each":
        return f"{{% for x in rows %}}<p{section.row}>{line}</p>\n{{% endfor %}}"
    empty_id = f' id="{section.empty_id}"' if section.empty_id else ""
    empty = f"{{% else %}}<li{empty_id}>{section.empty}</li>\n" if section.empty else ""
    return (
        f'{{% import "_macros.html.j2" as m %}}<ul class="lines"{section.table}>\n'
        f"{{% for x in rows %}}<li{section.row}>{line}</li>\n{empty}{{% endfor %}}</ul>"
    )


def _th_attrs(c: Column) -> str:
    """A header cell's attributes: a figure's is right-aligned (class num), joined to a class of its own."""
    if not c.num:
        return c.th
    if ' class="' in c.th:
        return c.th.replace(' class="', ' class="num ', 1)
    return ' class="num"' + c.th


def html_source(section: Section, hide: tuple[str, ...] = ()) -> str:
    """The Jinja source of the section's HTML table, rows as `rows`; columns named in `hide` left out (the
    empty row spans every column all the same). A cell may call the shared macros as `m`."""
    if section.html_lines:
        return _html_lines(section)
    shown = [c for c in section.columns if c.html is not None]
    columns = [c for c in shown if not (c.name and c.name in hide)]
    heads = "".join(f"<th{_th_attrs(c)}>{c.header}</th>" for c in columns)
    cells = []
    for c in columns:
        cls = "num" + c.td if c.num else c.td
        attr = f' class="{cls}"' if cls else ""
        cells.append(f"{chr(10) if c.newline else ''}<td{attr}{c.attrs}>{c.html}</td>")
    caption = f"<caption>{section.caption}</caption>\n" if section.caption else ""
    empty = f'{{% else %}}<tr><td colspan="{len(shown)}">{section.empty}</td></tr>\n' if section.empty else ""
    totals = ""
    if section.totals:
        tcells = []
        for c in columns:
            cls = c.td if c.total_td is None else c.total_td
            cls = "num" + cls if c.num else cls
            attr = f' class="{cls}"' if cls else ""
            tcells.append(f"<td{attr}>{c.total[0] if c.total else ''}</td>")
        totals = f"{{% for x in totals %}}\n<tr{section.total_row}>{''.join(tcells)}</tr>\n{{% endfor %}}\n"
    return (
        '{% import "_macros.html.j2" as m %}'
        f'<div class="scroll"><table{section.table}>\n{caption}<thead><tr>{heads}</tr></thead>\n<tbody>\n'
        f"{{% for x in rows %}}\n<tr{section.row}>{''.join(cells)}</tr>\n{empty}{{% endfor %}}\n{totals}"
        "</tbody></table></div>"
    )


def md_source(section: Section, hide: tuple[str, ...] = ()) -> str:
    """The Jinja source of the section's Markdown table (a GFM pipe table), rows as `rows`; or its lines,
    one a row, when it defines a `line`."""
    if section.line:
        bullet = "{{ loop.index }}. " if section.bullet == "1." else section.bullet
        empty = f"{{% else %}}{section.empty}\n" if section.empty else ""
        # the line break as an expression: a line ending in a block tag ({% endif %}) would lose a literal one
        return (
            f"{{% autoescape false %}}{{% for x in rows %}}\n{bullet}{_line(section, 'md')}{{{{ '\\n' }}}}{empty}"
            "{% endfor %}{% endautoescape %}"
        )
    columns = [c for c in section.columns if c.md is not None and not (c.name and c.name in hide)]
    heads = " | ".join(c.md_header or c.header for c in columns)
    rule = "|".join("---:" if (c.num if c.md_num is None else c.md_num) else "---" for c in columns)
    cells = " | ".join(c.md or "" for c in columns)
    table = f"| {heads} |\n|{rule}|\n{{% for x in rows %}}\n| {cells} |\n{{% endfor %}}\n"
    if section.totals:
        tcells = " | ".join(c.total[1] if c.total else "" for c in columns)
        table += f"{{% for x in totals %}}\n| {tcells} |\n{{% endfor %}}\n"
    if section.empty:
        table = f"{{% if rows %}}{table}{{% else %}}{section.empty}\n{{% endif %}}"
    return f"{{% autoescape false %}}{table}{{% endautoescape %}}"
