"""`wastewatch export`: the warehouse handed to other tools (the unified bill as FOCUS 1.2)."""

from __future__ import annotations

from decimal import Decimal

import click

from pipelines.cli.common import EXIT_REJECTED, Failure, ctx_config, say, wait_option, writing


@click.group()
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
@wait_option
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
    Only files a manifest or write record of ours names are replaced or deleted: a destination holding
    anything else is refused, naming the files. Exit 0 written; 1 the destination failed part-way (the periods
    written are listed); 2 a wrong period, format or destination (a foreign file there), nothing written; 3
    the warehouse is held by another writer.
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
    config = ctx_config(ctx)
    destination = out or default_destination(config)
    if not config.warehouse_path.exists():
        raise Failure(f"{config.warehouse_path}: no warehouse here yet (run `wastewatch ingest` first)")
    maker = s3_client_maker(destination, endpoint_url, region) if destination.startswith("s3://") else None
    written: list[str] = []
    with writing(config, wait_s, role="export focus (reading)"):
        con = connect(config.warehouse_path, settings=config.duckdb_settings)
        try:
            result = export_focus(
                con,
                destination,
                fmt=fmt,
                periods=asked,
                s3_client=maker,
                progress=lambda line: (written.append(line), say(line, err=True)),
            )
        except UsageError as exc:
            raise Failure(str(exc)) from None
        except (ExportError, S3Error) as exc:
            done = f" (written before it: {len(written)} period(s))" if written else " (nothing written)"
            raise Failure(f"{exc}{done}", code=EXIT_REJECTED) from None
        finally:
            con.close()
    for note in result.cleaned:
        say(f"note: cleared a killed export's leftover: {note}", err=True)
    say(
        f"exported {len(result.periods)} billing period(s), {result.lines:,} line(s), as {fmt} to {destination}"
    )


@export.command("showback")
@click.option("--month", required=True, metavar="YYYY-MM", help="The month to export.")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]), default="csv", show_default=True)
@click.option("--out", required=True, metavar="FILE", help="The file to write (replaced only if ours).")
@wait_option
@click.pass_context
def export_showback_command(ctx: click.Context, month: str, fmt: str, out: str, wait_s: float) -> None:
    """One month of showback for chargeback: one row per currency x team x pool x service, then each team's
    counted waste (docs/showback.md "Chargeback export").

    Columns: month, currency, team ('unallocated' for cost on no team), kind (direct, allocated,
    unallocated, waste), pool (the rule, 'direct', 'unallocated' or 'waste'), method, measure, share,
    service, cost (exact, effective), waste, findings. The rows' cost adds up to the month's bill per
    currency. A manifest beside the file (FILE.wastewatch.json) names its content: only a file it names is
    replaced; anything else at FILE is refused, naming it. Exit 0 written; 1 the file did not read back as
    the month (nothing replaced); 2 a wrong month or destination, or a month the warehouse has no showback
    for, nothing written; 3 the warehouse is held by another writer.
    """
    from pathlib import Path

    from pipelines.export.focus import ExportError, UsageError
    from pipelines.export.showback import check_month, export_showback
    from pipelines.warehouse import connect

    try:
        check_month(month)
    except UsageError as exc:
        raise click.BadParameter(str(exc), param_hint="--month") from None
    config = ctx_config(ctx)
    if not config.warehouse_path.exists():
        raise Failure(f"{config.warehouse_path}: no warehouse here yet (run `wastewatch ingest` first)")
    with writing(config, wait_s, role="export showback (reading)"):
        con = connect(config.warehouse_path, settings=config.duckdb_settings)
        try:
            result = export_showback(con, month, fmt, Path(out))
        except UsageError as exc:
            raise Failure(str(exc)) from None
        except ExportError as exc:
            raise Failure(str(exc), code=EXIT_REJECTED) from None
        finally:
            con.close()
    for note in result.cleaned:
        say(f"note: cleared a killed export's leftover: {note}", err=True)
    totals = ", ".join(f"{c} {Decimal(v):,.2f}" for c, v in result.totals.items())
    say(f"exported showback for {month}: {result.rows:,} row(s) ({totals}) as {fmt} to {result.path}")
