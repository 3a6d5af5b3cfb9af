"""`wastewatch`: the command line.

Exit codes: 0 ok; 1 some input was rejected or a source could not be read (the rest loaded), or the run
failed part-way; 2 usage or configuration error, nothing done; 3 the warehouse is held by another writer.
Every failure is one line on stderr (`error: <what>: <cause>`), redacted (pipelines/redact.py); a traceback
only with -v.

ingest, evaluate, report and run materialise the same Dagster asset graph the schedules run, in-process.
Every writing command holds the warehouse's run-level lock (pipelines/lock.py) for its whole run.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pipelines.config import (
    DEFAULT_CONFIG_NAME,
    ORIGIN_DEFAULT,
    STARTER_CONFIG,
    Config,
    ConfigError,
    find_config,
    load_config,
)
from pipelines.errors import WarehouseBusy, WarehouseError
from pipelines.lock import DEFAULT_WAIT_S
from pipelines.redact import redact

if TYPE_CHECKING:
    from pipelines.runner import RunOutcome

EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_BUSY = 0, 1, 2, 3


class Failure(click.ClickException):
    """An error that ends the command with a given exit code: one `error:` line per failure, redacted."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = code

    def show(self, file: Any = None) -> None:
        for line in self.format_message().splitlines() or [""]:
            click.echo(f"error: {redact(line)}", err=True)


class _Main(click.Group):
    """The command group: errors nobody caught end as one redacted line (a traceback only with -v)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except WarehouseBusy as exc:
            raise Failure(str(exc), code=EXIT_BUSY) from None
        except (WarehouseError, ConfigError) as exc:
            raise Failure(str(exc)) from None
        except Exception as exc:
            if (ctx.obj or {}).get("verbose"):
                raise
            text = str(exc).strip().splitlines()
            raise Failure(
                f"{type(exc).__name__}: {text[0] if text else 'no message'} (run with -v for the traceback)",
                code=EXIT_REJECTED,
            ) from None


def _say(text: str, err: bool = False) -> None:
    """Echo a status line, redacted (it may quote a source's location or an error)."""
    click.echo(redact(text), err=err)


def _wait_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--wait",
        "wait_s",
        type=click.FloatRange(0),
        default=DEFAULT_WAIT_S,
        show_default=True,
        envvar="WASTEWATCH_WAIT",
        help="Seconds to wait while another process writes the warehouse; then exit 3 naming it.",
    )(f)


@contextmanager
def _writing(config: Config, wait_s: float, role: str = "writer") -> Iterator[None]:
    """Hold the warehouse's run-level lock (waiting up to `wait_s`); WarehouseBusy ends in exit 3."""
    from pipelines.lock import writer_lock

    with writer_lock(config.warehouse_path, wait=wait_s, notice=lambda m: _say(m, err=True), role=role):
        yield


def _config(ctx: click.Context) -> Config:
    """The configuration found by `find_config`; the first load says on stderr which file it is."""
    path = ctx.obj["config_path"]
    try:
        config = load_config(path, origin=ctx.obj.get("config_origin"))
    except ConfigError as exc:
        raise Failure(str(exc)) from None
    if not ctx.obj.get("config_said") and not ctx.obj.get("quiet"):
        ctx.obj["config_said"] = True
        click.echo(redact(f"config: {path} (from {ctx.obj['config_origin']})"), err=True)
    return config


def _week(value: str | None) -> str:
    """The ISO week asked for (default the last complete one); a week yet to start is a usage error.

    Weeks before the data are not refused here: a week without data is answered after any ingest, by
    `_no_data` (exit 0, naming the weeks that have data)."""
    from pipelines.defs.partitions import last_complete_week
    from rules import Window

    today = datetime.now(UTC).date()
    if value is None:
        return last_complete_week(today)
    try:
        window = Window.iso_week(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--week") from None
    current = Window.containing(today)
    if window.start > current.start:
        raise click.BadParameter(
            f"{window.label} has not started yet (the current week is {current.label})", param_hint="--week"
        )
    return window.label


def _no_data(config: Config, week: str) -> bool:
    """Say so, plainly and naming the weeks that have data, when the warehouse holds nothing for `week`."""
    from pipelines.coverage import no_data_message
    from rules import Window

    message = no_data_message(config, Window.iso_week(week))
    if message is not None:
        _say(message)
    return message is not None


def _fmt_money(amount: Any, currency: str) -> str:
    return f"{currency} {Decimal(str(amount)):,.2f}"


def _cents(amount: Any) -> Decimal:
    return Decimal(str(amount)).quantize(Decimal("0.01"))


def _rounding_note(lines: list[Decimal], total: Decimal, currency: str) -> str | None:
    """Say why the per-rule waste lines do not add up to the total waste, when they do not."""
    added = sum(lines, Decimal(0))
    if not lines or added == total:
        return None
    why = (
        "each line is rounded to the cent"
        if abs(added - total) <= Decimal("0.005") * len(lines)
        else "acknowledged findings are left out of the total"
    )
    return f"(the rule lines add to {_fmt_money(added, currency)}: {why})"


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=f"Configuration file (default: $WASTEWATCH_CONFIG, else ./{DEFAULT_CONFIG_NAME}).",
)
@click.option("-v", "--verbose", is_flag=True, help="Show Dagster's run log, and tracebacks of errors.")
@click.option(
    "--progress",
    "show_progress",
    is_flag=True,
    help="Progress on long steps to stderr even when it is not a terminal (on a terminal it is shown anyway).",
)
@click.option(
    "-q", "--quiet", is_flag=True, help="No progress and no `config:` line; errors and results only."
)
@click.version_option(package_name="wastewatch")
@click.pass_context
def main(
    ctx: click.Context, config_path: Path | None, verbose: bool, show_progress: bool, quiet: bool
) -> None:
    """wastewatch finds the money GPU and AI-training infrastructure burns for nothing.

    The configuration is --config, else $WASTEWATCH_CONFIG, else ./wastewatch.yaml; commands that read it
    say which on stderr (`config: demo/wastewatch.yaml (from WASTEWATCH_CONFIG)`).
    """
    from pipelines.progress import Progress, reporting

    ctx.ensure_object(dict)
    path, origin = find_config(config_path)
    ctx.obj["config_path"] = path
    ctx.obj["config_origin"] = origin
    ctx.obj["config_given"] = origin != ORIGIN_DEFAULT  # --config or WASTEWATCH_CONFIG
    ctx.obj["verbose"] = verbose
    ctx.obj["quiet"] = quiet
    stream = sys.stderr
    live = stream.isatty()
    if not quiet and (show_progress or live):
        ctx.with_resource(reporting(Progress(stream, live=live)))


@main.command()
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@click.pass_context
def init(ctx: click.Context, path: Path | None, force: bool) -> None:
    """Write a commented starter wastewatch.yaml."""
    target = path or ctx.obj["config_path"]
    if target.exists() and not force:
        raise Failure(f"{target}: already exists (use --force to overwrite)")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(STARTER_CONFIG, encoding="utf-8")
    click.echo(f"wrote {target}; edit its sources, then run `wastewatch ingest`")


def _do_ingest(ctx: click.Context, config: Config) -> int:
    from pipelines.freshness import stale_sources
    from pipelines.ingest import NEW_VERSION_REJECTED
    from pipelines.runner import run_ingest
    from pipelines.warehouse import open_warehouse, rows, utcnow

    started = utcnow()
    _say(f"ingesting {len(config.sources)} source(s) into {config.warehouse_path}", err=True)
    outcome = run_ingest(config.path or ctx.obj["config_path"], verbose=ctx.obj["verbose"])
    if not outcome.success:
        raise Failure(
            "\n".join(f"ingest: {f}" for f in outcome.failures),
            code=EXIT_BUSY if outcome.busy else EXIT_REJECTED,
        )
    from pipelines.defs.ingest.assets import INGEST_TABLES

    failures: list[str] = []
    for table in INGEST_TABLES:
        md = outcome.metadata.get(table, {})
        failures += [f for f in md.get("source_failures") or [] if f not in failures]
        if md:
            click.echo(
                f"{table}: {md.get('files_loaded', 0)} file(s) loaded ({md.get('rows_loaded', 0):,} rows), "
                f"{md.get('files_unchanged', 0)} unchanged, {md.get('files_rejected', 0)} rejected"
                + (f", {md['files_duplicate']} duplicate" if md.get("files_duplicate") else "")
                + "; "
                f"{md.get('dagster/row_count', 0):,} rows in the table"
            )
        for line in str(md.get("skipped") or "").splitlines():  # files no reader claims: not a failure
            _say(f"skipped: {line.removeprefix('- ')}", err=True)
    with open_warehouse(config) as con:
        rejected = rows(
            con,
            "select error from ingest_files where checked_at >= $t "
            "and (status = 'rejected' or starts_with(error, $held)) order by uri",
            {"t": started, "held": NEW_VERSION_REJECTED},
        )
        stale = stale_sources(con, config, utcnow())
        duplicates = rows(
            con,
            "select error from ingest_files where checked_at >= $t and status = 'duplicate' order by uri",
            {"t": started},
        )
    for r in duplicates:  # copies of billing content the warehouse holds: never loaded, not an error
        _say(f"duplicate: {r['error']}", err=True)
    for r in rejected:
        _say(f"rejected: {r['error']}", err=True)
    # a source that could not be read at all (a missing folder, an unreachable bucket) is a failure
    for f in failures:
        _say(f"error: {f}", err=True)
    unreadable = {f.split(":", 1)[0] for f in failures}  # `source 'name'`: already reported as an error
    stale = [s for s in stale if f"source {s.source!r}" not in unreadable]
    for s in stale:
        _say(f"stale: {s.problem}", err=True)
    return EXIT_REJECTED if rejected or failures or stale else EXIT_OK


@main.command()
@_wait_option
@click.pass_context
def ingest(ctx: click.Context, wait_s: float) -> None:
    """Load new and changed source files, rebuild the marts, publish the read-only warehouse."""
    config = _config(ctx)
    with _writing(config, wait_s):
        code = _do_ingest(ctx, config)
    ctx.exit(code)


def _do_weekly(ctx: click.Context, config: Config, week: str, evaluate: bool, report: bool) -> RunOutcome:
    from pipelines.runner import run_weekly

    outcome = run_weekly(
        config.path or ctx.obj["config_path"],
        week,
        verbose=ctx.obj["verbose"],
        evaluate=evaluate,
        report=report,
    )
    if not outcome.success:
        raise Failure(
            "\n".join(f"{week}: {f}" for f in outcome.failures),
            code=EXIT_BUSY if outcome.busy else EXIT_USAGE if outcome.outside else EXIT_REJECTED,
        )
    from rules import ALL_RULES

    # attention rules (unattributed spend, budgets, anomalies) report an amount at stake, never waste
    attention = {f"findings/{r.folder}": r.attention for r in ALL_RULES}
    lines: dict[str, list[Decimal]] = {}  # the waste lines printed, by currency, as printed
    for key, md in sorted(outcome.metadata.items()):
        if key.startswith("findings/"):
            if not attention.get(key):
                for k, v in md.items():
                    if k.startswith("estimated_waste_"):
                        lines.setdefault(k.removeprefix("estimated_waste_"), []).append(_cents(v))
            amount = ", ".join(
                _fmt_money(v, k.removeprefix("estimated_waste_"))
                for k, v in md.items()
                if k.startswith("estimated_waste_")
            )
            label = "at stake" if attention.get(key) else "waste"
            click.echo(f"{key}: {md.get('findings', 0)} finding(s){f'; {label} ' + amount if amount else ''}")
    md = outcome.metadata.get("reports/weekly_report")
    if md:
        click.echo(f"report: {md['report_html']}")
        for k, v in md.items():
            if k.startswith("spend_"):
                cur = k.removeprefix("spend_")
                waste = md.get("waste_" + cur, 0)
                click.echo(f"  spend {_fmt_money(v, cur)}, waste {_fmt_money(waste, cur)}")
                note = _rounding_note(lines.get(cur, []), _cents(waste), cur)
                if note:
                    click.echo(f"  {note}")
        if md.get("unpriced"):  # telemetry without a bill or a price: no rule could put a figure on it
            click.echo(f"  unpriced: {md['unpriced']} (docs/gpu.md); no finding can price their waste")
    return outcome


@main.command()
@click.option("--week", help="ISO week, e.g. 2026-W48 (default: the last complete week).")
@_wait_option
@click.pass_context
def evaluate(ctx: click.Context, week: str | None, wait_s: float) -> None:
    """Run every rule for an ISO week and store its findings."""
    config = _config(ctx)
    w = _week(week)
    with _writing(config, wait_s):
        if not _no_data(config, w):
            _do_weekly(ctx, config, w, evaluate=True, report=False)


@main.command()
@click.option("--week", help="ISO week, e.g. 2026-W48 (default: the last complete week).")
@_wait_option
@click.pass_context
def report(ctx: click.Context, week: str | None, wait_s: float) -> None:
    """Write report.md, report.html and findings.csv/.parquet for an ISO week."""
    config = _config(ctx)
    w = _week(week)
    with _writing(config, wait_s):
        if not _no_data(config, w):
            _do_weekly(ctx, config, w, evaluate=False, report=True)


@main.command()
@click.option("--week", help="ISO week, e.g. 2026-W48 (default: the last complete week).")
@_wait_option
@click.pass_context
def run(ctx: click.Context, week: str | None, wait_s: float) -> None:
    """ingest, then evaluate and report one ISO week (default the last complete one).

    What the weekly cron entry runs (Mondays, after the week ends); the nightly entry runs `ingest` alone.
    """
    config = _config(ctx)
    w = _week(week)
    with _writing(config, wait_s):
        code = _do_ingest(ctx, config)
        if not _no_data(config, w):
            _do_weekly(ctx, config, w, evaluate=True, report=True)
    ctx.exit(code)


class _SqlCommand(click.Command):
    """`sql`: a query given as an argument may start with `--` (a commented question), which click would
    take for an option; an argument holding whitespace is never an option, so it is passed as the query."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" not in args:
            queries = [a for a in args if a.startswith("-") and any(c.isspace() for c in a)]
            if len(queries) == 1:
                args = [a for a in args if a is not queries[0]] + ["--", queries[0]]
        return super().parse_args(ctx, args)


@main.command(cls=_SqlCommand)
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
@_wait_option
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
        _say(f"note: --param {name} is not used by the query", err=True)
    config = _config(ctx)
    path = config.warehouse_path
    if not live and config.published_path.exists():
        path = config.published_path
    if path == config.warehouse_path and path.exists():
        with _writing(config, wait_s, role="sql --live (reading)"):
            results = _query(path, text, bound, source)
    else:
        results = _query(path, text, bound, source)
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


def _query(path: Path, text: str, params: dict[str, Any], source: str | None) -> list[Any]:
    from pipelines.report.adhoc import ScriptError, run_script
    from pipelines.warehouse import connect

    con = connect(path, read_only=True)
    try:
        return run_script(con, text, params, source)
    except ScriptError as exc:
        raise Failure(f"query failed: {exc}") from None
    finally:
        con.close()


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
    text = [[("NULL" if v is None else str(v)).replace("\n", " ") for v in r] for r in data]
    widths = [max([len(c)] + [len(r[i]) for r in text]) for i, c in enumerate(cols)]
    line = "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in text]
    out.append(f"({len(data)} row{'s' if len(data) != 1 else ''})")
    return "\n".join(out) + "\n"


@main.group()
def export() -> None:
    """Hand the warehouse to other tools."""


@export.command("focus")
@click.option(
    "--period",
    "periods",
    multiple=True,
    metavar="YYYY-MM",
    help="A billing period to export (repeatable; default: every period the warehouse holds).",
)
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet", show_default=True)
@click.option(
    "--out",
    metavar="DIR | s3://bucket/prefix",
    help="Where the dataset goes (default: exports/focus/ beside the config file).",
)
@click.option("--endpoint-url", metavar="URL", help="S3-compatible endpoint for an s3:// --out.")
@click.option("--region", metavar="REGION", help="S3 region for an s3:// --out.")
@_wait_option
@click.pass_context
def export_focus_command(
    ctx: click.Context,
    periods: tuple[str, ...],
    fmt: str,
    out: str | None,
    endpoint_url: str | None,
    region: str | None,
    wait_s: float,
) -> None:
    """The unified bill as FOCUS 1.2: one billing_period=YYYY-MM/ partition per billing period.

    FOCUS 1.2 column names and types, then wastewatch's x_ columns and each source's own columns (x_
    prefixed); Tags as JSON; Parquet timestamps in UTC, CSV ones as 2024-09-01T00:00:00Z. An exported period
    is replaced whole (a restated month): readers see the old partition or the new one, never half, and a
    manifest (_manifest.json) names each period's files. Reads the live warehouse while holding its lock.
    Exit 0 written; 1 the destination failed part-way (the periods written are listed); 2 a wrong period,
    format or destination, nothing written; 3 the warehouse is held by another writer.
    """
    from pipelines.errors import S3Error
    from pipelines.export.focus import (
        ExportError,
        UsageError,
        check_periods,
        default_destination,
        export_focus,
        s3_client_maker,
    )
    from pipelines.warehouse import connect

    try:
        asked = check_periods(list(periods))
    except UsageError as exc:
        raise click.BadParameter(str(exc), param_hint="--period") from None
    config = _config(ctx)
    destination = out or default_destination(config)
    if not config.warehouse_path.exists():
        raise Failure(f"{config.warehouse_path}: no warehouse here yet (run `wastewatch ingest` first)")
    maker = s3_client_maker(destination, endpoint_url, region) if destination.startswith("s3://") else None
    written: list[str] = []
    with _writing(config, wait_s, role="export focus (reading)"):
        con = connect(config.warehouse_path, settings=config.duckdb_settings)
        try:
            result = export_focus(
                con,
                destination,
                fmt=fmt,
                periods=asked,
                s3_client=maker,
                progress=lambda line: (written.append(line), _say(line, err=True)),
            )
        except UsageError as exc:
            raise Failure(str(exc)) from None
        except (ExportError, S3Error) as exc:
            done = f" (written before it: {len(written)} period(s))" if written else " (nothing written)"
            raise Failure(f"{exc}{done}", code=EXIT_REJECTED) from None
        finally:
            con.close()
    for note in result.cleaned:
        _say(f"note: cleared a killed export's leftover: {note}", err=True)
    _say(
        f"exported {len(result.periods)} billing period(s), {result.lines:,} line(s), as {fmt} to {destination}"
    )


@main.group()
def rules() -> None:
    """The rule catalogue."""


@rules.command("list")
def rules_list() -> None:
    """One line per rule: id, name, category, severity, status."""
    from rules import ALL_RULES

    # every column as wide as its longest value, so ids and names of any length line up
    cells = [(r.id, r.name, r.category, r.severity, r.status) for r in ALL_RULES]
    widths = [max(len(c[i]) for c in cells) for i in range(5)]
    for r, row in zip(ALL_RULES, cells, strict=True):
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) + f"  {r.summary}")


@rules.command("show")
@click.argument("rule_id")
@click.pass_context
def rules_show(ctx: click.Context, rule_id: str) -> None:
    """A rule's documentation, parameters (defaults and the effective values from the config)."""
    from rules import get_rule

    try:
        rule = get_rule(rule_id)
    except KeyError as exc:
        raise Failure(str(exc.args[0])) from None
    click.echo(rule.doc.strip())
    click.echo("\nParameters (default -> effective):")
    config: Config | None = None
    # the default ./wastewatch.yaml is optional here; a config named explicitly must exist
    if ctx.obj["config_given"] or Path(ctx.obj["config_path"]).exists():
        config = _config(ctx)
    effective = rule.make_params(config.rule_overrides(rule.id) if config else {}, config)
    for name, f in rule.params.model_fields.items():
        click.echo(f"  {name}: {f.default} -> {getattr(effective, name)}   {f.description or ''}")


@main.command()
@click.argument("finding", required=False)
@click.option(
    "--until",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    help="Last day the ack holds (inclusive; YYYY-MM-DD): it covers every ISO week starting on or before it.",
)
@click.option("--reason", default="", help="Why this finding is a known exception (required).")
@click.option("--by", "acked_by", envvar="USER", help="Who acknowledges it (default $USER).")
@click.option("--revoke", is_flag=True, help="End the finding's ack now (needs --reason).")
@click.option("--list", "list_acks", is_flag=True, help="List the acks in force.")
@_wait_option
@click.pass_context
def ack(
    ctx: click.Context,
    finding: str | None,
    until: datetime | None,
    reason: str,
    acked_by: str | None,
    revoke: bool,
    list_acks: bool,
    wait_s: float,
) -> None:
    """Acknowledge a finding: listed apart, left out of the waste total until --until.

    FINDING is a finding id or its key across weeks (both in the report and findings.csv), or RULE:RESOURCE,
    e.g. `wastewatch ack GPU001:i-0a1b2c3d4e5f60718 --until 2026-12-31 --reason "warm pool for the demo"`.
    """
    from pipelines.report.acks import AckError, in_force, record, resolve
    from pipelines.warehouse import connect

    config = _config(ctx)
    if list_acks:
        if not config.warehouse_path.exists():
            connect(config.warehouse_path, read_only=True)  # raises: no warehouse here yet
        with _writing(config, wait_s, role="ack --list (reading)"):
            con = connect(config.warehouse_path, read_only=True)
            try:
                acks = in_force(con)
            finally:
                con.close()
        for a in acks:
            click.echo(
                f"{a['finding_key']}  {a['rule_id']}:{a['resource_id']}  until {a['acked_until']}  "
                f"{a['reason']} ({a['acked_by'] or 'unknown'}, {a['acked_at']:%Y-%m-%d})"
            )
        if not acks:
            click.echo("no acks in force")
        return
    if finding is None:
        raise click.UsageError("name a FINDING (or use --list)")
    if revoke == (until is not None):
        raise click.UsageError("give --until DATE to acknowledge, or --revoke to end an ack")
    if not reason.strip():
        raise click.UsageError("--reason is required: say why this finding is a known exception")
    with _writing(config, wait_s):
        con = connect(config.warehouse_path)
        try:
            target = resolve(con, finding)
            record(con, target, None if revoke else until.date() if until else None, reason, acked_by)
        except AckError as exc:
            raise Failure(str(exc)) from None
        finally:
            con.close()
    name = f"{target.rule_id}:{target.resource_id}"
    if revoke:
        click.echo(f"{name} (key {target.finding_key}): ack revoked; it counts as waste again")
    else:
        assert until is not None
        click.echo(
            f"{name} (key {target.finding_key}): acknowledged until {until:%Y-%m-%d}; "
            f"seen in {len(target.weeks)} week(s), latest {target.weeks[0]}"
        )
    click.echo("reports change when rewritten: wastewatch report --week <ISO week>")


class _Number(click.ParamType):
    """7e9, 7000000000, 7B, 2T, 1.5M: a count with an optional K/M/B/T suffix."""

    name = "number"
    SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        text = str(value).strip().replace("_", "").replace(",", "")
        scale = self.SUFFIX.get(text[-1:].lower(), 1.0) if text else 1.0
        try:
            number = float(text[:-1] if scale != 1.0 else text) * scale
        except ValueError:
            self.fail(f"{value!r} is not a number like 7e9 or 7B", param, ctx)
        if not math.isfinite(number) or number <= 0:
            self.fail(f"{value!r} must be a positive number", param, ctx)
        return number


class _Mfu(click.ParamType):
    """A share of the peak in (0, 1], or the word `measured`."""

    name = "MFU|measured"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float | str:
        if isinstance(value, float) or str(value).strip().lower() == "measured":
            return value if isinstance(value, float) else "measured"
        try:
            number = float(str(value))
        except ValueError:
            self.fail(f"{value!r} is neither a share of the peak like 0.4 nor 'measured'", param, ctx)
        if not 0 < number <= 1:
            self.fail(f"{value!r} must be in (0, 1], e.g. 0.4", param, ctx)
        return number


@main.command()
@click.option("--params", "n_params", type=_Number(), help="Model parameters, e.g. 7e9 or 7B.")
@click.option("--tokens", type=_Number(), help="Training tokens, e.g. 2e12 or 2T.")
@click.option("--gpu", help="GPU model, e.g. h100, a100, h200, b200, mi300x, l40s (see --list-gpus).")
@click.option("--gpus", type=click.IntRange(min=1), help="GPUs the run uses.")
@click.option("--mfu", type=_Mfu(), default="0.4", show_default=True,
              help="Model FLOPs utilisation: the share of the peak the run achieves, or 'measured': the median "
              "of comparable finished jobs' measured MFU (same GPU model, parameters within 2x).")  # fmt: skip
@click.option("--mfu-default", type=click.FloatRange(0, 1, min_open=True), default=0.4, show_default=True,
              help="The MFU `--mfu measured` falls back to when no comparable job was measured.")  # fmt: skip
@click.option("--price", type=click.FloatRange(0, min_open=True),
              help="Price per GPU-hour; default: measured from the warehouse for that GPU.")  # fmt: skip
@click.option("--mtbf-gpu-hours", type=click.FloatRange(0, min_open=True),
              help="GPU-hours per failure; default: measured in `jobs`, else a published figure.")  # fmt: skip
@click.option("--save-every", type=click.FloatRange(0, min_open=True),
              help="Checkpoint interval in hours; default: the Young/Daly optimum.")  # fmt: skip
@click.option("--keep", type=click.IntRange(min=0), default=5, show_default=True,
              help="Checkpoints retained (0 = all).")  # fmt: skip
@click.option("--ckpt-bytes-per-param", type=click.FloatRange(0, min_open=True), default=14.0, show_default=True,
              help="Checkpoint bytes per parameter (BF16 weights + FP32 master + Adam m, v).")  # fmt: skip
@click.option("--ckpt-write-gbps", type=click.FloatRange(0, min_open=True), default=10.0, show_default=True,
              help="Aggregate checkpoint write bandwidth, GB/s.")  # fmt: skip
@click.option("--restart-minutes", type=click.FloatRange(0), default=10.0, show_default=True,
              help="Time to restart the job after a failure.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the estimate as JSON.")
@click.option("--list-gpus", is_flag=True, help="Print the table of peak dense FLOP/s per GPU model.")
@click.pass_context
def estimate(
    ctx: click.Context,
    n_params: float | None,
    tokens: float | None,
    gpu: str | None,
    gpus: int | None,
    mfu: float | str,
    mfu_default: float,
    price: float | None,
    mtbf_gpu_hours: float | None,
    save_every: float | None,
    keep: int,
    ckpt_bytes_per_param: float,
    ckpt_write_gbps: float,
    restart_minutes: float,
    as_json: bool,
    list_gpus: bool,
) -> None:
    """Estimate a training run: FLOPs, GPU-hours, wall time, cost, failures and checkpoints.

    e.g. wastewatch estimate --params 7e9 --tokens 2e12 --gpu h100 --gpus 512 --mfu 0.4
    """
    from pipelines import estimate as est

    if list_gpus:
        click.echo(est.render_catalog(), nl=False)
        return
    missing = [
        f"--{n}"
        for n, v in (("params", n_params), ("tokens", tokens), ("gpu", gpu), ("gpus", gpus))
        if v is None
    ]
    if missing:
        raise click.UsageError(f"missing {', '.join(missing)}")
    assert n_params is not None and tokens is not None and gpu is not None and gpus is not None
    con = None
    currency, storage_price = "USD", est.DEFAULT_STORAGE_PRICE
    # the warehouse is optional here: it supplies the measured price and failure rate when it exists
    if ctx.obj["config_given"] or Path(ctx.obj["config_path"]).exists():
        from pipelines.warehouse import WarehouseError, connect

        config = _config(ctx)
        currency = config.currency
        storage_price = float(config.prices.storage_gb_month.get("STANDARD", storage_price))
        path = config.published_path if config.published_path.exists() else config.warehouse_path
        if path.exists():
            try:
                con = connect(path, read_only=True)
            except WarehouseError as exc:
                click.echo(f"note: {exc}; estimating without the warehouse", err=True)
    try:
        result = est.estimate(
            n_params, tokens, gpu, gpus, mfu, price=price, con=con, currency=currency,
            mtbf_gpu_hours=mtbf_gpu_hours, ckpt_bytes_per_param=ckpt_bytes_per_param,
            ckpt_write_gbps=ckpt_write_gbps, save_every_hours=save_every, keep=keep or None,
            restart_minutes=restart_minutes, storage_price_gb_month=storage_price, mfu_default=mfu_default,
        )  # fmt: skip
    except est.EstimateError as exc:
        raise Failure(str(exc)) from None
    finally:
        if con is not None:
            con.close()
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
    else:
        click.echo(est.render_text(result), nl=False)


@main.command()
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo"),
    show_default=True,
)
@click.option("--week", help="Last ISO week of demo data (default: the last complete week).")
@click.option("--weeks", type=click.IntRange(1, 12), default=4, show_default=True)
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--no-run", is_flag=True, help="Only generate the landing zone and config.")
@_wait_option
@click.pass_context
def demo(
    ctx: click.Context, directory: Path, week: str | None, weeks: int, seed: int, no_run: bool, wait_s: float
) -> None:
    """Generate a realistic landing zone for a small AI company and run the pipeline on it."""
    from pipelines.demo import generate

    w = _week(week)
    click.echo(f"generating {weeks} week(s) of demo data ending {w} in {directory}/ ...", err=True)
    planted = generate(directory, last_week=w, weeks=weeks, seed=seed)
    config_path = directory / DEFAULT_CONFIG_NAME
    click.echo(f"wrote {config_path} and {directory / 'expected.json'}", err=True)
    if no_run:
        return
    ctx.obj["config_path"] = config_path
    ctx.obj["config_origin"] = "wastewatch demo"
    config = _config(ctx)
    with _writing(config, wait_s):
        ctx.exit(_demo_run(ctx, config, config_path, w, planted))


def _demo_run(ctx: click.Context, config: Config, config_path: Path, w: str, planted: dict[str, Any]) -> int:
    """The demo's ingest, its earlier weeks and the report week; the exit code."""
    code = _do_ingest(ctx, config)
    # earlier weeks first, so the report has a trend, last week's figures and finding lifecycles
    from pipelines.runner import run_weekly

    for label in planted["weeks"][:-1]:
        click.echo(f"evaluating {label} ...", err=True)
        earlier = run_weekly(config.path or config_path, label, verbose=ctx.obj["verbose"])
        if not earlier.success:
            raise Failure("\n".join(f"{label}: {f}" for f in earlier.failures), code=EXIT_REJECTED)
    outcome = _do_weekly(ctx, config, w, evaluate=True, report=True)
    planted_gpu001 = planted["report_week"]["rules"]["GPU001"]["waste"]
    found = outcome.value("findings/gpu001_idle_gpu_instance", "estimated_waste_USD", 0.0)
    click.echo(
        f"GPU001 idle-gpu-instance in {w}: found {_fmt_money(found, 'USD')}, planted {_fmt_money(planted_gpu001, 'USD')} "
        f"(expected.json lists every planted amount)"
    )
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
