"""The commands that run the asset graph: init, ingest, evaluate, report and run, and what they print."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pipelines.cli.common import (
    EXIT_BUSY,
    EXIT_OK,
    EXIT_REJECTED,
    EXIT_USAGE,
    Failure,
    Writing,
    ctx_config,
    no_data,
    pick_week,
    say,
    wait_option,
    writing,
)
from pipelines.cli.money import cents, fmt_money, rounding_note

if TYPE_CHECKING:
    import duckdb

    from pipelines.config import Config
    from pipelines.runner import RunOutcome
    from pipelines.transform import nothing_new


@click.command()
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@click.pass_context
def init(ctx: click.Context, path: Path | None, force: bool) -> None:
    """Write a commented starter wastewatch.yaml."""
    from pipelines.config import STARTER_CONFIG

    target = path or ctx.obj["config_path"]
    if target.exists() and not force:
        raise Failure(f"{target}: already exists (use --force to overwrite)")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(STARTER_CONFIG, encoding="utf-8")
    click.echo(f"wrote {target}; edit its sources, then run `wastewatch ingest`")


def do_ingest(ctx: click.Context, config: Config, w: Writing, full: bool = False) -> int:
    """The `nightly_ingest` run (unless nothing is new) and what it prints; the exit code. Everything it
    reads and the run itself go through the command's one connection (`w.warehouse`)."""
    from pipelines.health.freshness import stale_sources
    from pipelines.ingest import NEW_VERSION_REJECTED
    from pipelines.transform import nothing_new
    from pipelines.transform.retention import RETENTION_ASSET
    from pipelines.warehouse import rows, utcnow

    started = utcnow()
    say(f"ingesting {len(config.sources)} source(s) into {config.warehouse_path}", err=True)
    if not full:
        found = nothing_new.check(config, w.warehouse.reader() if config.published_path.exists() else None)
        if found.nothing_new:
            return _nothing_new(config, found, w)
        if ctx.obj["verbose"]:
            say(f"a full run: {found.why}", err=True)
    w.warehouse.open_soon()  # while Dagster is imported
    from pipelines.runner import run_ingest  # Dagster: imported only for a run (about 1 s)

    config_path = config.path or ctx.obj["config_path"]
    con = _run_connection(w, "ingest")
    outcome = run_ingest(config_path, ctx.obj["verbose"], con, w.instance(config_path))
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
            say(f"skipped: {line.removeprefix('- ')}", err=True)
    kept = outcome.metadata.get(RETENTION_ASSET, {})
    if kept.get("samples_dropped"):
        click.echo(
            f"gpu_samples: {kept['samples_dropped']:,} sample(s) of {kept['days_dropped']} day(s) before "
            f"{kept['kept_from']} dropped (retention: {kept['retention_days']} days); their hours are kept"
        )
    con = w.warehouse.writer()
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
    said = {f for f in failures} | {r["error"] for r in rejected} | {r["error"] for r in duplicates}
    for warning in outcome.warnings:  # what an asset logged that the lines below do not already say
        if warning not in said:
            say(f"warning: {warning}", err=True)
    for r in duplicates:  # copies of billing content the warehouse holds: never loaded, not an error
        say(f"duplicate: {r['error']}", err=True)
    for r in rejected:
        say(f"rejected: {r['error']}", err=True)
    # a source that could not be read at all (a missing folder, an unreachable bucket) is a failure
    for f in failures:
        say(f"error: {f}", err=True)
    unreadable = {f.split(":", 1)[0] for f in failures}  # `source 'name'`: already reported as an error
    stale = [s for s in stale if f"source {s.source!r}" not in unreadable]
    for s in stale:
        say(f"stale: {s.problem}", err=True)
    return EXIT_REJECTED if rejected or failures or stale else EXIT_OK


def _run_connection(w: Writing, what: str) -> duckdb.DuckDBPyConnection:
    """The command's writable connection, for its runs: a warehouse that cannot be opened (a failed upgrade,
    a full disk) fails the run as when the run opened it itself, one `error: <what>: ...` line and exit 1
    (3 when another process holds DuckDB's lock on it)."""
    from pipelines.errors import WarehouseBusy, WarehouseError

    try:
        return w.warehouse.writer()
    except WarehouseBusy as exc:
        raise Failure(f"{what}: {exc}", code=EXIT_BUSY) from None
    except WarehouseError as exc:
        raise Failure(f"{what}: {exc}", code=EXIT_REJECTED) from None


def _nothing_new(config: Config, found: nothing_new.Check, w: Writing) -> int:
    """What a run with nothing new prints, without running it: each table's files, the stale sources."""
    from pipelines.health.freshness import stale_sources
    from pipelines.warehouse import scalar, stored_in, utcnow

    assert found.recorded_at is not None
    say(
        f"nothing new since the run of {found.recorded_at:%Y-%m-%d %H:%M} UTC: every source lists the files "
        "it loaded, so the marts and the published warehouse stay as they are (--full runs it all)",
        err=True,
    )
    con = w.warehouse.reader()
    assert con is not None  # the check found the warehouse
    for table in dict.fromkeys(c.target for c in found.sources):
        unchanged = sum(c.unchanged for c in found.sources if c.target == table)
        held = scalar(con, f"select count(*) from {stored_in(table)}")  # noqa: S608 - a landed table's name
        click.echo(
            f"{table}: 0 file(s) loaded (0 rows), {unchanged} unchanged, 0 rejected; {held:,} rows in the table"
        )
    stale = stale_sources(con, config, utcnow())
    for c in found.sources:
        for uri, why in c.skipped:
            say(f"skipped: {uri}: {why}", err=True)
    for s in stale:
        say(f"stale: {s.problem}", err=True)
    return EXIT_REJECTED if stale else EXIT_OK


def need_sources(config: Config, command: str) -> None:
    """`ingest` and `run` with no source to read are a configuration error (exit 2), not a quiet empty run."""
    where = config.path or "the configuration"
    if not config.sources:
        raise Failure(
            f"{where}: no sources configured, so `{command}` has nothing to read: add a `sources:` list "
            "(`wastewatch init NEW.yaml` writes a starter file with examples; README.md, Configuration)"
        )
    if not any(s.enabled for s in config.sources):
        names = ", ".join(s.name for s in config.sources)
        raise Failure(
            f"{where}: every source has `enabled: false` ({names}), so `{command}` has nothing to read: "
            "enable one"
        )


full_option = click.option(
    "--full", is_flag=True, help="Run every step even when no source lists anything new."
)


@click.command()
@wait_option
@full_option
@click.pass_context
def ingest(ctx: click.Context, wait_s: float, full: bool) -> None:
    """Load new and changed source files, rebuild the marts, publish the read-only warehouse."""
    config = ctx_config(ctx)
    need_sources(config, "ingest")
    with writing(config, wait_s) as w:
        code = do_ingest(ctx, config, w, full)
    ctx.exit(code)


def do_weekly(
    ctx: click.Context, config: Config, w: Writing, week: str, evaluate: bool, report: bool
) -> RunOutcome:
    """The `weekly_report` run for `week` (all of it, or its rules or its report) and what it prints."""
    w.warehouse.open_soon()  # while Dagster is imported (a no-op when the command's connection is open)
    from pipelines.runner import run_weekly

    config_path = config.path or ctx.obj["config_path"]
    outcome = run_weekly(
        config_path,
        week,
        verbose=ctx.obj["verbose"],
        evaluate=evaluate,
        report=report,
        con=_run_connection(w, week),
        instance=w.instance(config_path),
    )
    if not outcome.success:
        raise Failure(
            "\n".join(f"{week}: {f}" for f in outcome.failures),
            code=EXIT_BUSY if outcome.busy else EXIT_USAGE if outcome.outside else EXIT_REJECTED,
        )
    from rules import ALL_RULES

    for w in outcome.warnings:  # a failed webhook post, a week without data: never a lost report
        say(f"warning: {w}", err=True)
    # attention rules (unattributed spend, budgets, anomalies) report an amount at stake, never waste
    attention = {f"findings/{r.folder}": r.attention for r in ALL_RULES}
    lines: dict[str, list[Decimal]] = {}  # the waste lines printed, by currency, as printed
    for key, md in sorted(outcome.metadata.items()):
        if key.startswith("findings/"):
            if not attention.get(key):
                for k, v in md.items():
                    if k.startswith("estimated_waste_"):
                        lines.setdefault(k.removeprefix("estimated_waste_"), []).append(cents(v))
            amount = ", ".join(
                fmt_money(v, k.removeprefix("estimated_waste_"))
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
                click.echo(f"  spend {fmt_money(v, cur)}, waste {fmt_money(waste, cur)}")
                note = rounding_note(lines.get(cur, []), cents(waste), cur)
                if note:
                    click.echo(f"  {note}")
        if md.get("unpriced"):  # telemetry without a bill or a price: no rule could put a figure on it
            click.echo(f"  unpriced: {md['unpriced']} (docs/gpu.md); no finding can price their waste")
    return outcome


@click.command()
@click.option("--week", help="ISO week, e.g. 2026-W48 (default: the last complete week).")
@wait_option
@click.pass_context
def evaluate(ctx: click.Context, week: str | None, wait_s: float) -> None:
    """Run every rule for an ISO week and store its findings."""
    config = ctx_config(ctx)
    w = pick_week(week)
    with writing(config, wait_s) as held:
        if not no_data(config, w, held.warehouse):
            do_weekly(ctx, config, held, w, evaluate=True, report=False)


@click.command()
@click.option("--week", help="ISO week, e.g. 2026-W48 (default: the last complete week).")
@wait_option
@click.pass_context
def report(ctx: click.Context, week: str | None, wait_s: float) -> None:
    """Write report.md, report.html and findings.csv/.parquet for an ISO week."""
    config = ctx_config(ctx)
    w = pick_week(week)
    with writing(config, wait_s) as held:
        if not no_data(config, w, held.warehouse):
            do_weekly(ctx, config, held, w, evaluate=False, report=True)


@click.command()
@click.option("--week", help="ISO week, e.g. 2026-W48 (default: the last complete week).")
@wait_option
@full_option
@click.pass_context
def run(ctx: click.Context, week: str | None, wait_s: float, full: bool) -> None:
    """ingest, then evaluate and report one ISO week (default the last complete one).

    What the weekly cron entry runs (Mondays, after the week ends); the nightly entry runs `ingest` alone.
    """
    config = ctx_config(ctx)
    need_sources(config, "run")
    w = pick_week(week)
    with writing(config, wait_s) as held:
        code = do_ingest(ctx, config, held, full)
        if not no_data(config, w, held.warehouse):
            do_weekly(ctx, config, held, w, evaluate=True, report=True)
    ctx.exit(code)
