"""The headline's figures (spend, waste, ...), each defined once, and the Jinja sources that show them as
cards (one currency, a team's page), as a table of several currencies and as report.md's and
report-full.md's lines."""

from __future__ import annotations

from pipelines.report.forms import Figure

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
