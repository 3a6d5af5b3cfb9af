"""`wastewatch alert`: the daily alert for live, expensive waste (docs/alerts.md)."""

from __future__ import annotations

from datetime import datetime

import click

from pipelines.cli.common import EXIT_REJECTED, Failure, ctx_config, say, wait_option, writing


@click.command("alert")
@click.option("--dry-run", is_flag=True, help="Print what would be posted; post nothing, record nothing.")
@click.option(
    "--as-of",
    "as_of",
    type=click.DateTime(formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d"]),
    help="Judge the 24 hours of data up to this UTC time (default: the end of the newest hour both the bill "
    "and the GPU telemetry reach).",
)
@wait_option
@click.pass_context
def alert(ctx: click.Context, dry_run: bool, as_of: datetime | None, wait_s: float) -> None:
    """Post the GPU001 (idle GPU instance) and GPU004 (failed job and zombie) waste that is still running
    and costs at least `alert.min_daily_waste` a day, once per finding until it changes, with the planned
    remediation action, to alert.webhook_url (else notify.webhook_url).

    A message too long for one Slack post is sent as several ("part k of n", a second apart).

    Exit 0 posted, or nothing new to post; 1 the webhook did not take a post (the findings of the posts it
    took are recorded as sent, the rest are not); 2 a usage or config error (e.g. no `alert:` section),
    nothing done; 3 the warehouse is held by another writer.
    """
    from pipelines.report.alert import SEND, AlertError, finding_lines, headline, run_alert
    from pipelines.warehouse import connect

    config = ctx_config(ctx)
    if config.alert is None:
        raise Failure(f"{config.path}: alert: no `alert:` section (docs/alerts.md): nothing to check")
    if not config.warehouse_path.exists():
        raise Failure(f"{config.warehouse_path}: no warehouse here yet (run `wastewatch ingest` first)")
    with writing(config, wait_s, role="alert --dry-run" if dry_run else "alert"):
        con = connect(config.warehouse_path, settings=config.duckdb_settings)
        try:
            try:
                run = run_alert(con, config, as_of=as_of, dry_run=dry_run)
                failure = None
            except AlertError as exc:
                run, failure = None, str(exc)
        finally:
            con.close()
    if failure is not None:
        raise Failure(failure, code=EXIT_REJECTED)
    assert run is not None
    result = run.check
    if result.as_of is None:
        say("no GPU hours billed or observed in the warehouse: nothing to check")
        return
    say(headline(result))
    for f in result.live:
        if f.verdict == SEND:
            for line in finding_lines(f):
                say(line)
        else:
            say(f"not sent: {f.rule_id} {f.resource_id}: {f.why}")
    if dry_run:
        click.echo(f"dry run: {len(result.to_send)} finding(s) would be posted; nothing posted or recorded")
    elif run.posted_to:
        parts = f" in {run.parts} posts" if run.parts > 1 else ""
        say(f"posted {len(result.to_send)} finding(s) to {run.posted_to}{parts}")
    else:
        click.echo("nothing new to post")
