"""The kinds of definition the report's parts are written in, and how each becomes the Jinja source of its
HTML and of its Markdown: a table or section of lines (`Section` of `Column`s) and a headline figure
(`Figure`). The definitions themselves are in sections.py, main_lines.py and headline.py.
"""

from __future__ import annotations

from dataclasses import dataclass


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
