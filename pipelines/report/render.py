"""Rendering the weekly report as text: the Jinja templates (report.md, report.html, teams/<team>.html,
the notification's email.html) and the findings table written to findings.csv and .parquet. The tables
sections.py defines are rendered from their one definition, as HTML on their page and as Markdown.

Every string from the data is escaped for the file it lands in: HTML by Jinja's autoescape; Markdown by
the `md` filter (raw HTML and Markdown control characters made literal) and the `code` filter (a code
span no backtick can end); CSV by `csv_cell` / `neutralise_csv` (OWASP's advice on CSV injection: a text
cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`, so a spreadsheet shows
it rather than running it as a formula; a number, even negative, stays a number).
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from decimal import Decimal
from typing import Any

import jinja2
import polars as pl
from jinja2 import (
    BaseLoader,
    Environment,
    FileSystemBytecodeCache,
    PackageLoader,
    Template,
    select_autoescape,
)
from jinja2.bccache import Bucket
from markupsafe import Markup, escape

from pipelines.report import charts
from pipelines.report.forms import Section, html_source, md_source
from pipelines.report.headline import (
    HEADLINE,
    headline_cards_source,
    headline_md_source,
    headline_table_source,
)
from pipelines.report.model import (
    MAIN_LINES,
    MAIN_TEAMS,
    PAGES,
    TOP_ACTIONS,
    TREND_WEEKS,
    TeamPage,
    WeeklyReport,
)
from pipelines.report.sections import CATEGORY_GROUPS, SECTIONS
from pipelines.units import DAYS_PER_MONTH
from rules import ALL_RULES, FINDING_COLUMNS
from rules._contract import ATTENTION_CATEGORIES

ID_CHARS = 32  # a longer identifier (an Azure resource path, a GCP self-link) is shown shortened in tables


def shorten_middle(text: str, limit: int = ID_CHARS) -> str:
    """`text` cut to `limit` characters by an ellipsis in the middle, keeping a third for its start (the
    kind) and two thirds for its end (the name): `/subscripti…nd96amsr-a100-v4-007`."""
    if len(text) <= limit:
        return text
    tail = (limit - 1) * 2 // 3  # the end names the thing (the VM, the run); the start its kind
    return f"{text[: limit - 1 - tail]}…{text[-tail:]}"


def _shortened(value: Any, limit: int, tag: str) -> Markup:
    """An identifier in `tag` (code or span), shortened in the middle, its full text on hover (title). A
    name without spaces is one word: kept on one line (class `id`), never broken at its hyphens."""
    if value is None:
        return Markup("")
    text = str(value)
    spaced = any(c.isspace() for c in text)
    if spaced and tag == "code":
        limit = max(limit, 2 * ID_CHARS)  # words (`budget:team:vision research`) wrap: room for more
    short = shorten_middle(text, limit)
    title = Markup(' title="{}"').format(text) if short != text else Markup("")
    if tag == "code":
        words = Markup(' class="words"') if spaced else Markup("")
        return Markup("<code{}{}>{}</code>").format(words, title, short)
    if not title and spaced:
        return escape(short)
    cls = Markup("") if any(c.isspace() for c in short) else Markup(' class="id"')
    return Markup("<span{}{}>{}</span>").format(cls, title, short)


def idcode(value: Any, limit: int = ID_CHARS) -> Markup:
    return _shortened(value, limit, "code")


def idtext(value: Any, limit: int = ID_CHARS) -> Markup:
    return _shortened(value, limit, "span")


def money(value: Any, currency: str | None = None, places: int = 2) -> str:
    if value is None:
        return "–"
    text = f"{Decimal(value):,.{places}f}"
    return f"{currency} {text}" if currency else text


def signed_pct(value: Any) -> str:
    if value is None:
        return "–"
    return f"{Decimal(value):+.1f} %"


def signed_money(value: Any, currency: str | None = None) -> str:
    """A change in money with its sign always shown: +1,234.50, −12.00 (a true minus), ±0.00."""
    if value is None:
        return "–"
    amount = Decimal(value).quantize(Decimal("0.01"))
    sign = "+" if amount > 0 else "−" if amount < 0 else "±"
    text = f"{sign}{abs(amount):,.2f}"
    return f"{currency} {text}" if currency else text


def change_pct(now: Any, before: Any) -> Decimal | None:
    """The change from `before` to `now` in per cent, one decimal; None when `before` is missing or 0."""
    if now is None or before is None or Decimal(before) == 0:
        return None
    return (100 * (Decimal(now) - Decimal(before)) / Decimal(before)).quantize(Decimal("0.1"))


def change(now: Any, before: Any, previous: str, what: str, brief: bool = False) -> str:
    """The week's spend or waste (`what`) against last week's in words, a percentage only against a whole
    week: "new: the data starts this week" when the currency's data starts this week (`previous` "none"),
    "last week was a partial week (960.00): no % change" when it starts inside last week ("partial");
    `brief` leaves out last week's figure after a percentage."""
    if what == "waste" and before is None:
        return "last week not evaluated"
    if previous == "none":
        return "new: the data starts this week"
    if previous == "partial":
        return f"last week was a partial week ({money(before)}): no % change"
    if before is None:
        return f"no {what} last week"
    text = f"{signed_pct(change_pct(now, before))} ({signed_money(Decimal(now) - Decimal(before))})"
    return text if brief else f"{text} vs last week ({money(before)})"


# a text cell a spreadsheet would read as a formula; a plain number (e.g. -12.5) is not one
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$"
_PLAIN_NUMBER_RE = re.compile(_PLAIN_NUMBER)


def csv_cell(value: Any) -> Any:
    """A CSV cell made safe for spreadsheets: text starting like a formula gets a leading `'`."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _PLAIN_NUMBER_RE.match(value):
        return "'" + value
    return value


def neutralise_csv(frame: pl.DataFrame) -> pl.DataFrame:
    """`csv_cell` on every text column of a frame (numeric columns are left as they are)."""
    exprs = []
    for name, dtype in frame.schema.items():
        if dtype == pl.String:
            col = pl.col(name)
            formula = col.str.contains(r"^[=+\-@\t\r]") & ~col.str.contains(_PLAIN_NUMBER)
            exprs.append(pl.when(formula).then(pl.lit("'") + col).otherwise(col).alias(name))
    return frame.with_columns(exprs) if exprs else frame


_MD_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_text(value: Any) -> str:
    """A string from the data as literal Markdown text: raw HTML inert (`<` as `&lt;`), Markdown control
    characters backslash-escaped, one line (a table cell or list item stays one)."""
    text = " ".join(str(value).split())
    text = "".join(_MD_ESCAPES.get(ch, ch) for ch in text)
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_code(value: Any) -> str:
    """A string from the data as a Markdown code span: fenced by more backticks than it holds, one line,
    `|` escaped (GFM table cells split on it even inside code)."""
    text = " ".join(str(value).split()).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# what a rule's status says, as README's rules section puts it (rules/_docs.py LIFECYCLE_NOTE)
RULE_STATUS_MEANING = {
    "preview": "finds real money, but its thresholds, evidence or pricing may still change",
    "stable": "checked against planted and real data; its parameters and findings keep their meaning",
    "deprecated": "kept one release before it goes",
}
# what a finding's "Open" tag says (rpt_weekly_findings.sql: lifecycle, weeks_open)
LIFECYCLE_MEANING = (
    "new = first found this week; week N = found in each of the last N weeks, this one included; "
    "growing / shrinking = more / less waste than last week"
)


def unsettled_rules(rule_ids: Any) -> dict[str, list[str]]:
    """The rules among `rule_ids` that are not stable, by status (preview, deprecated), each id once."""
    status = {r.id: r.status for r in ALL_RULES}
    out: dict[str, list[str]] = {}
    for rule_id in dict.fromkeys(rule_ids):
        if status.get(rule_id, "stable") != "stable":
            out.setdefault(status[rule_id], []).append(rule_id)
    return out


def _view(source: Any, name: str) -> Any:
    """The model's field or view `name` of `source` (a WeeklyReport or TeamPage): a method is called."""
    value = getattr(source, name)
    return value() if callable(value) else value


def _section_renderers(env: Environment, sections: tuple[Section, ...]) -> dict[str, Any]:
    """The templates' `section_html(name, rows, hide=(), totals=(), **context)` and `section_md(name, rows,
    totals=())`: a section of `sections` rendered as an HTML or a Markdown table, each compiled once per
    environment; and `show_html(name, r, **context)` / `show_md(name, r)`, the same with the rows and total
    rows taken from the report `r` as the section names them (its `field`, its `totals`)."""
    by_name = {s.name: s for s in sections}
    compiled: dict[tuple[str, str, tuple[str, ...]], Any] = {}

    def template(kind: str, name: str, hide: tuple[str, ...]) -> Any:
        key = (kind, name, hide)
        if key not in compiled:
            source = html_source if kind == "html" else md_source
            compiled[key] = generated(env, f"{kind}/{name}/{','.join(hide)}", source(by_name[name], hide))
        return compiled[key]

    def section_html(
        name: str, rows: Any, hide: tuple[str, ...] = (), totals: Any = (), **context: Any
    ) -> Markup:
        return Markup(template("html", name, tuple(hide)).render(rows=rows, totals=totals, **context))

    def section_md(name: str, rows: Any, hide: tuple[str, ...] = (), totals: Any = (), **context: Any) -> str:
        text = template("md", name, tuple(hide)).render(rows=rows, totals=totals, **context)
        return text[:-1] if text.endswith("\n") else text  # the template's own line break follows

    def rows_of(name: str, r: Any) -> dict[str, Any]:
        s = by_name[name]
        return {"rows": _view(r, s.field), "totals": _view(r, s.totals) if s.totals else ()}

    def show_html(name: str, r: Any, **context: Any) -> Markup:
        return section_html(name, **rows_of(name, r), **context)

    def show_md(name: str, r: Any, **context: Any) -> str:
        return section_md(name, **rows_of(name, r), **context)

    return {
        "SECTIONS": sections,
        "section_html": section_html,
        "section_md": section_md,
        "show_html": show_html,
        "show_md": show_md,
    }


def conversion_note(c: dict[str, Any], day: str, form: str) -> str:
    """The sentence under the converted total (`c`: WeeklyReport.consolidated()): each currency's rate and
    date, and the currencies left out for want of a rate, bold; as HTML (escaped) or Markdown."""
    html = form == "html"
    pieces: list[str] = []
    rates = "; ".join(
        f"{x['currency']} converted at {x['rate']} {c['currency']} per {x['currency']} ({x['valid_from']})"
        for x in c["converted"]
    )
    if rates:
        pieces.append(
            escape(f"{rates}: the config's rates in force on {day}, never fetched.")
            if html
            else md_text(f"{rates}: the config's rates in force on {day}, never fetched.")
        )
    for cur in c["not_converted"]:
        said = f"{cur} not converted"
        pieces.append(
            Markup('<b class="not-converted" data-currency="{}">{}</b>').format(cur, said)
            if html
            else f"**{md_text(said)}**"
        )
        rest = f"(no rate valid on {day}): left out of the total."
        pieces.append(escape(rest) if html else md_text(rest))
    return Markup(" ").join(pieces) if html else " ".join(pieces)


def _headline_renderers(env: Environment) -> dict[str, Any]:
    """The templates' `headline_html(r, rows, prefix='', team=False, extra='')`, the headline's figures
    (headline.HEADLINE) as cards for one currency or a team, as a table of several currencies (`extra`: a
    total row), and `headline_md(r)`, the same figures as report.md's and report-full.md's lines."""
    when = {f.id: env.compile_expression(f.when) for f in HEADLINE}
    cards = {
        team: generated(env, f"headline/cards/{team}", headline_cards_source(team)) for team in (False, True)
    }
    lines = generated(env, "headline/md", headline_md_source())
    tables: dict[tuple[str, ...], Any] = {}

    def headline_html(r: Any, rows: Any, prefix: str = "", team: bool = False, extra: Any = "") -> Markup:
        if team or len(rows) == 1:
            return Markup("".join(cards[team].render(r=r, h=h, prefix=prefix, brief=False) for h in rows))
        shown = tuple(f.id for f in HEADLINE if any(when[f.id](r=r, h=h) for h in rows))
        if shown not in tables:
            tables[shown] = generated(env, f"headline/table/{','.join(shown)}", headline_table_source(shown))
        return Markup(tables[shown].render(r=r, rows=rows, prefix="", brief=True, extra=extra))

    def headline_md(r: Any) -> str:
        return "".join(lines.render(r=r, h=h, brief=False) for h in r.headline)

    return {"headline_html": headline_html, "headline_md": headline_md}


class _Templates(BaseLoader):
    """The package's template files, and the templates the report generates from sections.py and headline.py
    (`generated`), by name: both go through the environment's bytecode cache."""

    def __init__(self) -> None:
        self.files = PackageLoader("pipelines.report", "templates")
        self.generated: dict[str, str] = {}

    def get_source(self, environment: Environment, template: str) -> tuple[str, str | None, Any]:
        if template.startswith(GENERATED):
            source = self.generated[template]
            return source, None, lambda: self.generated.get(template) == source
        return self.files.get_source(environment, template)


GENERATED = "wastewatch-generated/"  # the names of the templates made from the report's own definitions
_BY_EXTENSION = select_autoescape(["html", "html.j2"])


def _autoescape(name: str | None) -> bool:
    """HTML-escape a template file named .html or .html.j2, and every template the report generates (as Jinja
    does a template made from a string)."""
    return name is None or name.startswith(GENERATED) or _BY_EXTENSION(name)


# what the environment compiles templates with, beyond their source and name; the cache key is made from it
_OPTIONS: dict[str, Any] = {"autoescape": _autoescape, "trim_blocks": True, "lstrip_blocks": True}
_SETTINGS = (
    "wastewatch report: "
    + ", ".join(f"{k}={getattr(v, '__qualname__', v)}" for k, v in sorted(_OPTIONS.items()))
    + f"; jinja2 {jinja2.__version__}"
)


class _BytecodeCache(FileSystemBytecodeCache):
    """Jinja's cache of compiled templates in the user's private folder of the system's temp directory
    (`_jinja2-cache-<uid>`, mode 0700; Jinja refuses a folder another user owns). A template is compiled
    again when its source changes (Jinja keeps its checksum); its key also holds the environment's settings
    and Jinja's version. Compiling the report's 50-odd templates is most of its rendering."""

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        return super().get_cache_key(f"{_SETTINGS}|{name}", filename)

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:  # a full or read-only temp folder: the next process compiles the template again
            pass


def _bytecode_cache() -> FileSystemBytecodeCache | None:
    try:
        return _BytecodeCache()
    except (OSError, RuntimeError):  # no private temp folder: every process compiles the templates
        return None


def generated(env: Environment, name: str, source: str) -> Template:
    """The template of `source`, made by the report from its own definitions, under `name` (through the
    bytecode cache, as the template files are)."""
    loader = env.loader
    assert isinstance(loader, _Templates)
    loader.generated[GENERATED + name] = source
    return env.get_template(GENERATED + name)


def environment(sections: tuple[Section, ...] = SECTIONS) -> Environment:
    """The Jinja environment of the report's templates, with the filters and globals they use; `sections`
    are the report's tables (sections.py), each rendered as HTML on its page and as Markdown."""
    env = Environment(loader=_Templates(), bytecode_cache=_bytecode_cache(), **_OPTIONS)
    env.filters["money"] = money
    env.filters["signed_pct"] = signed_pct
    env.filters["signed_money"] = signed_money
    env.filters["md"] = md_text
    env.filters["code"] = md_code
    env.filters["num"] = lambda v, d=0: "–" if v is None else f"{Decimal(str(v)):,.{d}f}"
    env.filters["idcode"] = idcode
    env.filters["idtext"] = idtext
    env.filters["short"] = shorten_middle
    env.filters["clip"] = lambda v, n: v if len(str(v)) <= n else str(v)[: n - 1].rstrip() + "…"
    env.globals.update(
        charts=charts,
        conversion_note=conversion_note,
        change_pct=change_pct,
        change=change,
        TREND_WEEKS=TREND_WEEKS,
        TOP_ACTIONS=TOP_ACTIONS,
        MAIN_TEAMS=MAIN_TEAMS,
        MAIN_LINES=MAIN_LINES,
        PAGES=PAGES,
        PAGE_TITLES=dict(PAGES),
        CATEGORY_GROUPS=CATEGORY_GROUPS,
        DAYS=charts.DAYS,
        ATTENTION_CATEGORIES=ATTENTION_CATEGORIES,
        DAYS_PER_MONTH=DAYS_PER_MONTH,
        # each rule's status (preview, stable, deprecated) and what it means, shown beside the rule
        RULE_STATUS={r.id: r.status for r in ALL_RULES},
        unsettled_rules=unsettled_rules,
        RULE_STATUS_MEANING=RULE_STATUS_MEANING,
        LIFECYCLE_MEANING=LIFECYCLE_MEANING,
        # what an attention finding's status means to a reader: it is never "waste"
        ATTENTION_LABELS={"waste": "act", "suspect": "watch", "insufficient_data": "not judged"},
    )
    env.globals.update(_section_renderers(env, sections))
    env.globals.update(_headline_renderers(env))
    return env


DIGEST_BYTES = 4096  # report.md's size limit: a chat post or an e-mail a person reads whole


def report_markdown(report: WeeklyReport, env: Environment) -> str:
    """report.md: the digest for chat and e-mail (headline, top 5, top teams, links), at most DIGEST_BYTES.

    With the top findings' reasons when they fit, else without; a fleet whose figures still do not fit (many
    currencies) is cut at a line, with a last line pointing at report.html."""
    template = env.get_template("report.md.j2")
    text = template.render(r=report, reasons=True)
    if len(text.encode("utf-8")) > DIGEST_BYTES:
        text = template.render(r=report, reasons=False)
    if len(text.encode("utf-8")) > DIGEST_BYTES:
        more = "\n… cut to 4 KB: the rest is in [report.html](report.html) and [report-full.md](report-full.md).\n"
        room = DIGEST_BYTES - len(more.encode("utf-8"))
        kept = text.encode("utf-8")[:room].decode("utf-8", "ignore")
        text = kept[: kept.rfind("\n") + 1] + more
    return text


def report_markdown_full(report: WeeklyReport, env: Environment) -> str:
    """report-full.md: every section and every finding, as Markdown."""
    return env.get_template("report-full.md.j2").render(r=report)


def report_html(report: WeeklyReport, env: Environment) -> str:
    """report.html: the main page, a few screens whatever the fleet; the rest is on page_html's pages."""
    return env.get_template("report.html.j2").render(r=report)


def page_html(report: WeeklyReport, stem: str, env: Environment) -> str:
    """One of the pages beside report.html (PAGES): findings, changes, attention, ..."""
    return env.get_template(f"page_{stem}.html.j2").render(r=report, current=stem)


def team_html(report: WeeklyReport, team: TeamPage, env: Environment) -> str:
    return env.get_template("team.html.j2").render(r=report, t=team)


def findings_frame(report: WeeklyReport) -> pl.DataFrame:
    """The week's findings: the contract's columns, then the lifecycle and acknowledgement columns."""
    schema: dict[str, Any] = {c: pl.String for c in FINDING_COLUMNS}
    schema.update(
        week_start=pl.Date,
        week_end=pl.Date,
        estimated_waste=pl.Decimal(18, 6),
        detected_at=pl.Datetime("us"),
        finding_key=pl.String,
        attention=pl.Boolean,
        counted=pl.Boolean,
        acknowledged=pl.Boolean,
        acked_until=pl.Date,
        ack_reason=pl.String,
        acked_by=pl.String,
        lifecycle=pl.String,
        first_seen=pl.Date,
        weeks_open=pl.Int64,
        cumulative_waste=pl.Decimal(18, 6),
        previous_waste=pl.Decimal(18, 6),
        pricing_basis=pl.String,  # bill, owned or contract: how the priced resources' cost was known
    )
    week_end = (report.window.end - timedelta(days=1)).date()
    records = []
    for f in report.findings:
        rec = {c: f.get(c) for c in schema}
        rec["week_start"] = report.window.start.date()
        rec["week_end"] = week_end
        rec["team"] = None if f["team"] == "(untagged)" else f["team"]
        rec["evidence"] = json.dumps(f["evidence"], sort_keys=True)
        records.append(rec)
    return pl.DataFrame(records, schema=schema) if records else pl.DataFrame(schema=schema)
