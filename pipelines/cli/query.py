"""`wastewatch sql`: ad-hoc SQL over the published warehouse, printed as a table, CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

from pipelines.cli.common import EXIT_REJECTED, Failure, ctx_config, say, wait_option, writing


class _SqlCommand(click.Command):
    """`sql`: a query given as an argument may start with `--` (a commented question), which click would
    take for an option; an argument holding whitespace is never an option, so it is passed as the query."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" not in args:
            queries = [a for a in args if a.startswith("-") and any(c.isspace() for c in a)]
            if len(queries) == 1:
                args = [a for a in args if a is not queries[0]] + ["--", queries[0]]
        return super().parse_args(ctx, args)


@click.command(cls=_SqlCommand)
@click.argument("query", required=False)
@click.option(
    "--file",
    "-f",
    "file",
    metavar="PATH",
    help="Read the SQL from a file (- for stdin); it may hold several statements and -- comments.",
)
@click.option(
    "--param",
    "-p",
    "params",
    multiple=True,
    metavar="NAME=VALUE",
    help="Bind $NAME to VALUE (repeatable); week=2026-W48 also binds $week_start and $week_end.",
)
@click.option("--week", metavar="YYYY-Www", help="The ISO week for $week, $week_start and $week_end.")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True
)
@click.option("--live", is_flag=True, help="Read the live warehouse instead of the published copy.")
@click.option(
    "--raw-csv",
    is_flag=True,
    help="CSV cells exactly as stored: no quote before text starting with = + - @ tab or CR.",
)
@wait_option
@click.pass_context
def sql(
    ctx: click.Context,
    query: str | None,
    file: str | None,
    params: tuple[str, ...],
    week: str | None,
    fmt: str,
    live: bool,
    raw_csv: bool,
    wait_s: float,
) -> None:
    """Query the published read-only warehouse, e.g. wastewatch sql "select * from findings".

    The SQL is the QUERY argument, or a file (--file PATH), or stdin (QUERY or PATH `-`); a script may hold
    several statements, and each result is printed. Named parameters ($name) are bound from --param
    NAME=VALUE and --week, never formatted into the text: the shipped questions take the week, e.g.
    wastewatch sql --file sql/reports/questions/q01_waste_by_team.sql --week 2026-W48.
    Errors name the file and line.

    With --live it reads the warehouse itself, after any run writing it (waiting up to --wait seconds, then
    exit 3), and holds the warehouse's lock while it reads so that no run starting meanwhile fails.
    CSV output neutralises text cells that a spreadsheet would run as a formula (see --raw-csv).
    """
    from pipelines.report.adhoc import ScriptError, parse_params, used_params

    text, source = _sql_text(query, file)
    try:
        bound = parse_params(params, week)
    except ScriptError as exc:
        raise click.BadParameter(str(exc), param_hint="--param") from None
    used = used_params(text)
    given = set(bound) - ({"week_start", "week_end"} if "week" in bound else set())
    unused = sorted(
        n for n in given if n not in used and not (n == "week" and used & {"week_start", "week_end"})
    )
    for name in unused:
        say(f"note: --param {name} is not used by the query", err=True)
    config = ctx_config(ctx)
    path = config.warehouse_path
    if not live and config.published_path.exists():
        path = config.published_path
    settings = {k: v for k, v in config.duckdb_settings.items() if k != "temp_directory"}
    if path == config.warehouse_path and path.exists():
        with writing(config, wait_s, role="sql --live (reading)"):
            results = _query(path, text, bound, source, settings)
    else:
        results = _query(path, text, bound, source, settings)
    if len(results) > 1 and fmt != "table":
        lines = ", ".join(str(r.line) for r in results)
        raise Failure(
            f"{source or 'the query'}: {len(results)} statements return rows (lines {lines}); "
            f"--format {fmt} prints one result: keep one, or use --format table"
        )
    click.echo("\n".join(format_rows(r.columns, r.rows, fmt, raw_csv=raw_csv) for r in results), nl=False)


def _sql_text(query: str | None, file: str | None) -> tuple[str, str | None]:
    """The SQL to run and the name its errors give: the argument, the file's path, or <stdin>."""
    if (query is None) == (file is None):
        raise click.UsageError(
            "Missing argument 'QUERY' (or --file PATH, or - to read stdin)"
            if query is None
            else "give the SQL once: QUERY or --file PATH, not both"
        )
    if query is not None and query != "-":
        return query, None
    if query == "-" or file == "-":
        return sys.stdin.read(), "<stdin>"
    assert file is not None
    try:
        return Path(file).read_text(encoding="utf-8"), file
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"{file}: cannot read: {exc}", param_hint="--file") from None


def _query(
    path: Path, text: str, params: dict[str, Any], source: str | None, settings: dict[str, Any]
) -> list[Any]:
    from pipelines.report.adhoc import Refused, ScriptError, run_script
    from pipelines.warehouse import open_for_queries

    with open_for_queries(path, settings) as con:
        try:
            return run_script(con, text, params, source)
        except Refused as exc:
            raise Failure(str(exc), code=EXIT_REJECTED) from None
        except ScriptError as exc:
            raise Failure(f"query failed: {exc}") from None


def table_cell(value: Any) -> str:
    """A value as the table shows it: a DECIMAL (money is DECIMAL(38, 12)) with thousands separators and its
    trailing zeros trimmed (16776.480000000000 -> 16,776.48, 0E-12 -> 0); csv and json keep exact values."""
    if not isinstance(value, Decimal) or not value.is_finite():
        return str(value)
    digits = format(value, "f")
    if "." in digits:
        digits = digits.rstrip("0").rstrip(".")
    whole, _, fraction = digits.lstrip("-").partition(".")
    sign = "-" if value < 0 and (whole.strip("0") or fraction) else ""
    return f"{sign}{int(whole or 0):,}" + (f".{fraction}" if fraction else "")


def format_rows(cols: list[str], data: list[tuple[Any, ...]], fmt: str, raw_csv: bool = False) -> str:
    if fmt == "json":
        return json.dumps([dict(zip(cols, r, strict=True)) for r in data], default=str, indent=2) + "\n"
    if fmt == "csv":
        from pipelines.report.render import csv_cell

        cell = (lambda v: v) if raw_csv else csv_cell
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([cell(c) for c in cols])
        w.writerows(["" if v is None else cell(v) for v in r] for r in data)
        return buf.getvalue()
    text = [[("NULL" if v is None else table_cell(v)).replace("\n", " ") for v in r] for r in data]
    widths = [max([len(c)] + [len(r[i]) for r in text]) for i, c in enumerate(cols)]
    # a column of numbers is right-aligned, so that amounts of trimmed scale line up by their units
    numeric = [bool(data) and all(isinstance(r[i], (int, float, Decimal)) or r[i] is None for r in data)
               for i in range(len(cols))]  # fmt: skip
    line = "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cols, widths, numeric, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += [
        "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(r, widths, numeric, strict=True))
        for r in text
    ]
    out.append(f"({len(data)} row{'s' if len(data) != 1 else ''})")
    return "\n".join(out) + "\n"
