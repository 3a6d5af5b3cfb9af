"""`wastewatch ack`: a finding acknowledged as a known exception until a date, revoked, or listed."""

from __future__ import annotations

from datetime import datetime

import click

from pipelines.cli.common import Failure, ctx_config, wait_option, writing


@click.command()
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
@wait_option
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

    config = ctx_config(ctx)
    if list_acks:
        if not config.warehouse_path.exists():
            connect(config.warehouse_path, read_only=True)  # raises: no warehouse here yet
        with writing(config, wait_s, role="ack --list (reading)"):
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
    with writing(config, wait_s):
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
