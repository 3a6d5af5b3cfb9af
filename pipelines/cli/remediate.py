"""`wastewatch remediate plan|apply`: act on findings with approval (docs/remediation.md)."""

from __future__ import annotations

from typing import Any

import click

from pipelines.cli.common import (
    EXIT_REJECTED,
    Failure,
    ctx_config,
    no_data,
    pick_week,
    say,
    wait_option,
    writing,
)
from pipelines.cli.money import fmt_money


@click.group()
def remediate() -> None:
    """Plan, approve and apply remediation of findings: stop, abort, tier, delete."""


def _describe(a: dict[str, Any]) -> str:
    who = "/".join(x for x in (a.get("team"), a.get("owner")) if x) or "unassigned"
    cost = fmt_money(a["estimated_waste"], a["currency"] or "")
    flags = ("destructive, " if a["destructive"] else "") + a["state"]
    line = f"{a['action_id']}  {a['kind']:<24} {a['target']}  ({a['rule_id']}, {who}, {cost}/week; {flags})"
    return line if a["executable"] else f"{line}\n    not applied by wastewatch: {a['manual_reason']}"


@remediate.command("plan")
@click.option(
    "--week", help="ISO week whose findings to plan from, e.g. 2026-W48 (default: the last complete one)."
)
@wait_option
@click.pass_context
def plan_command(ctx: click.Context, week: str | None, wait_s: float) -> None:
    """One action per actionable finding of the week (waste, not acknowledged): stop an idle instance
    (GPU001), abort incomplete multipart uploads (STO004), put a lifecycle transition on cold checkpoints
    (STO003), delete an orphaned run's checkpoints (STO001). The plan is kept in the warehouse
    (remediation_actions) and written as JSON, grouped by owner, beside the week's report for other tooling
    (it lists what wastewatch cannot act on itself too). Nothing outside the warehouse is touched.
    """
    from pipelines.remediate.plan import build_plan, plan_document, write_plan
    from pipelines.warehouse import connect
    from rules import Window

    label = pick_week(week)
    config = ctx_config(ctx)
    if not config.warehouse_path.exists():
        raise Failure(f"{config.warehouse_path}: no warehouse here yet (run `wastewatch ingest` first)")
    with writing(config, wait_s, role="remediate plan"):
        con = connect(config.warehouse_path, settings=config.duckdb_settings)
        try:
            actions = build_plan(con, Window.iso_week(label).start.date())
        finally:
            con.close()
    if not actions:
        no_data(config, label)  # says so, naming the weeks that have data, when the week has none
    path = write_plan(config, label, plan_document(label, actions))
    automatic = sum(1 for a in actions if a["executable"])
    click.echo(
        f"remediation plan for {label}: {len(actions)} action(s), {automatic} wastewatch can apply, "
        f"{len(actions) - automatic} for other tooling"
    )
    for a in actions:
        say(_describe(a))
    say(f"plan written: {path}")
    if automatic:
        click.echo('approve and check: wastewatch remediate apply ACTION... --approve "why"  (a dry run)')
        click.echo(
            "then act: wastewatch remediate apply ACTION... --yes  (deletes: in a later run than the approval)"
        )


@remediate.command("apply")
@click.argument("actions", nargs=-1, required=True)
@click.option("--approve", "approve", metavar="REASON", help="Approve the actions, saying why (recorded).")
@click.option(
    "--yes", is_flag=True, help="Act; without it apply is a dry run that re-checks and touches nothing."
)
@click.option("--by", "actor", envvar="USER", help="Who approves or applies (default $USER).")
@wait_option
@click.pass_context
def apply_command(
    ctx: click.Context,
    actions: tuple[str, ...],
    approve: str | None,
    yes: bool,
    actor: str | None,
    wait_s: float,
) -> None:
    """Approve and apply planned ACTIONS (ids from `wastewatch remediate plan`).

    Each target is re-checked right before acting (still there, still running, not written since the plan,
    not tagged with the protect tag, not acknowledged); every approval and attempt is recorded in
    remediation_log with who, when and the result. Deletes and aborts need an approval given in an earlier
    run than the apply. Exit 0 every action applied, already done or checked; 1 some action was refused or
    failed; 2 an unknown action or a usage error, nothing done; 3 the warehouse is held by another writer.
    """
    from pipelines.remediate.apply import BAD_RESULTS, Attempt, RemediateError, apply_actions
    from pipelines.warehouse import connect

    config = ctx_config(ctx)
    if not config.warehouse_path.exists():
        raise Failure(f"{config.warehouse_path}: no warehouse here yet (run `wastewatch ingest` first)")

    def show(attempt: Attempt) -> None:
        a, o = attempt.action, attempt.outcome
        say(f"{a['action_id']}  {a['kind']} {a['target']}: {o.result}: {o.detail}")
        if o.error:
            say(f"    {o.error}", err=True)

    with writing(config, wait_s, role="remediate apply"):
        con = connect(config.warehouse_path, settings=config.duckdb_settings)
        try:
            attempts = apply_actions(
                con, config, list(actions), approve=approve, actor=actor, yes=yes, notice=show
            )
        except RemediateError as exc:
            raise Failure(str(exc)) from None
        finally:
            con.close()
    bad = [t for t in attempts if t.outcome.result in BAD_RESULTS]
    if not yes:
        click.echo("dry run: nothing was touched (add --yes to act)")
    if bad:
        raise Failure(f"{len(bad)} of {len(attempts)} action(s) refused or failed", code=EXIT_REJECTED)
