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
    empty: str = ""  # the HTML row shown when there are no rows (none: an empty table body)
    inline: bool = True  # placed by name in its page's template and report-full.md's


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


# every section, in the order report-full.md and a page list the ones a template does not place itself
SECTIONS = (
    FINDINGS,
    ATTENTION,
    BUDGETS,
    ACTIONS,
    REALISED,
    ADVICE,
    SPEND_BY_CATEGORY,
    GPU_FLEET,
    TRAINING_SUMMARY,
    TRAINING_JOBS,
    PEAKS,
)


def html_source(section: Section, hide: tuple[str, ...] = ()) -> str:
    """The Jinja source of the section's HTML table, rows as `rows`; columns named in `hide` left out (the
    empty row spans every column all the same). A cell may call the shared macros as `m`."""
    shown = [c for c in section.columns if c.html is not None]
    columns = [c for c in shown if not (c.name and c.name in hide)]
    num = ' class="num"'
    heads = "".join(f"<th{num if c.num else ''}{c.th}>{c.header}</th>" for c in columns)
    cells = []
    for c in columns:
        cls = "num" + c.td if c.num else c.td
        attr = f' class="{cls}"' if cls else ""
        cells.append(f"{chr(10) if c.newline else ''}<td{attr}>{c.html}</td>")
    caption = f"<caption>{section.caption}</caption>\n" if section.caption else ""
    empty = f'{{% else %}}<tr><td colspan="{len(shown)}">{section.empty}</td></tr>\n' if section.empty else ""
    return (
        '{% import "_macros.html.j2" as m %}'
        f'<div class="scroll"><table{section.table}>\n{caption}<thead><tr>{heads}</tr></thead>\n<tbody>\n'
        f"{{% for x in rows %}}\n<tr{section.row}>{''.join(cells)}</tr>\n{empty}{{% endfor %}}\n"
        "</tbody></table></div>"
    )


def md_source(section: Section, hide: tuple[str, ...] = ()) -> str:
    """The Jinja source of the section's Markdown table (a GFM pipe table), rows as `rows`."""
    columns = [c for c in section.columns if c.md is not None and not (c.name and c.name in hide)]
    heads = " | ".join(c.md_header or c.header for c in columns)
    rule = "|".join("---:" if (c.num if c.md_num is None else c.md_num) else "---" for c in columns)
    cells = " | ".join(c.md or "" for c in columns)
    return (
        f"{{% autoescape false %}}| {heads} |\n|{rule}|\n{{% for x in rows %}}\n| {cells} |\n{{% endfor %}}\n"
        "{% endautoescape %}"
    )
