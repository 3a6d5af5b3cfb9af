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


def _connect(config: Any) -> Any:
    """The warehouse as plan and apply open it (no file access; no table replaced by a view): exit 1 if not."""
    from pipelines.remediate.apply import ChainBroken, connect_for_acting

    try:
        return connect_for_acting(config)
    except ChainBroken as exc:
        raise Failure(str(exc), code=EXIT_REJECTED) from None


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
@click.option(
    "--min-waste",
    type=click.FloatRange(0),
    default=10.0,
    show_default=True,
    help="List the executable actions of at least this weekly waste (in their currency); the rest are summed.",
)
@click.option("--all", "show_all", is_flag=True, help="List every action, small and manual ones too.")
@wait_option
@click.pass_context
def plan_command(
    ctx: click.Context, week: str | None, min_waste: float, show_all: bool, wait_s: float
) -> None:
    """One action per actionable finding of the week (waste, not acknowledged): stop an idle instance
    (GPU001), abort incomplete multipart uploads (STO004), put a lifecycle transition on cold checkpoints
    (STO003), delete an orphaned run's checkpoints (STO001). The plan is kept in the warehouse
    (remediation_actions) and written as JSON, grouped by owner, beside the week's report for other tooling
    (it holds every action, also those wastewatch cannot act on itself). Printed: a summary by rule and kind,
    then the executable actions of at least --min-waste a week (--all: every action). Nothing outside the
    warehouse is touched.
    """
    from pipelines.remediate.plan import build_plan, plan_document, summary, write_plan
    from rules import Window

    label = pick_week(week)
    config = ctx_config(ctx)
    if not config.warehouse_path.exists():
        raise Failure(f"{config.warehouse_path}: no warehouse here yet (run `wastewatch ingest` first)")
    with writing(config, wait_s, role="remediate plan"):
        con = _connect(config)
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
    if actions and not show_all:
        say("by rule and kind:")
        for line in summary(actions):
            say(f"  {line['rule_id']} {line['kind']:<24} {line['count']:>5} action(s)  "
                f"{'; '.join(fmt_money(v, c) for c, v in line['waste'].items())}/week  "
                f"{line['executable']} executable, {line['manual']} for other tooling")  # fmt: skip
        shown = [a for a in actions if a["executable"] and float(a["estimated_waste"] or 0) >= min_waste]
        left = len(actions) - len(shown)
        say(f"executable actions of {min_waste:,.2f} a week or more: {len(shown)} of {automatic}")
        for a in shown:
            say(_describe(a))
        if left:
            say(
                f"{left} smaller or manual action(s) not listed: --all lists every action; the JSON plan holds them"
            )
    else:
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
    from pipelines.remediate.apply import BAD_RESULTS, Attempt, ChainBroken, RemediateError, apply_actions
    from pipelines.remediate.keys import ApprovalKeyError

    config = ctx_config(ctx)
    if not config.warehouse_path.exists():
        raise Failure(f"{config.warehouse_path}: no warehouse here yet (run `wastewatch ingest` first)")

    def show(attempt: Attempt) -> None:
        a, o = attempt.action, attempt.outcome
        say(f"{a['action_id']}  {a['kind']} {a['target']}: {o.result}: {' '.join(str(o.detail).split())}")
        if o.error:
            say("    " + " ".join(str(o.error).split()), err=True)

    with writing(config, wait_s, role="remediate apply"):
        con = _connect(config)
        try:
            attempts = apply_actions(
                con,
                config,
                list(actions),
                approve=approve,
                actor=actor,
                yes=yes,
                notice=show,
                say=lambda m: say(f"note: {m}", err=True),
            )
        except (RemediateError, ApprovalKeyError) as exc:
            raise Failure(str(exc)) from None
        except ChainBroken as exc:
            raise Failure(str(exc), code=EXIT_REJECTED) from None
        finally:
            con.close()
    bad = [t for t in attempts if t.outcome.result in BAD_RESULTS]
    if not yes:
        click.echo("dry run: nothing was touched (add --yes to act)")
    if bad:
        raise Failure(f"{len(bad)} of {len(attempts)} action(s) refused or failed", code=EXIT_REJECTED)


@remediate.command("log")
@click.option("--verify", is_flag=True, help="Check the chain of HMACs; exit 1 naming the first bad row.")
@click.option(
    "--restart",
    "restart",
    metavar="REASON",
    help="Seal the log as it is under the current key (after a break you have looked into), saying why.",
)
@click.option("--limit", type=click.IntRange(0), default=20, show_default=True, help="Newest rows to print.")
@click.option("--by", "actor", envvar="USER", help="Who restarts the chain (default $USER).")
@wait_option
@click.pass_context
def log_command(
    ctx: click.Context, verify: bool, restart: str | None, limit: int, actor: str | None, wait_s: float
) -> None:
    """The remediation audit trail: the newest rows, and with --verify a check of its chain.

    Every row of remediation_log carries an HMAC, under the approval key kept outside the warehouse, over
    its content and the previous row's HMAC: a row inserted, changed or deleted by anyone without the key
    breaks the chain, and apply refuses to act until it verifies. Exit 0 verified; 1 broken (the first bad
    row is named), or signed rows but no key to check them with; 2 no warehouse.
    """
    from pipelines.remediate import audit
    from pipelines.remediate.keys import ApprovalKeyError, load_key
    from pipelines.warehouse import rows, sql_text

    config = ctx_config(ctx)
    if not config.warehouse_path.exists():
        raise Failure(f"{config.warehouse_path}: no warehouse here yet (run `wastewatch ingest` first)")
    try:
        ring = load_key(config)
    except ApprovalKeyError as exc:
        raise Failure(str(exc)) from None
    with writing(config, wait_s, role="remediate log"):
        con = _connect(config)
        try:
            if restart is not None:
                if not restart.strip():
                    raise Failure("--restart needs a reason: say why the log is sealed as it is")
                if ring is None:
                    raise Failure("no approval key yet: the first approval starts the chain")
                covered = audit.start_chain(con, ring, restart.strip(), actor)
                say(f"remediation_log sealed under key {ring.current}: {covered} earlier row(s) covered")
            verdict = audit.verify(con, ring)
            newest = rows(con, sql_text("remediate", "log_rows"))[-limit:] if limit else []
        finally:
            con.close()
    for r in newest:
        say(
            f"{r['seq'] if r['seq'] is not None else '-':>5}  {r['logged_at']:%Y-%m-%d %H:%M:%S}  "
            f"{r['event']:<12} {r['action_id'] or '':<16} {r['result']:<17} "
            f"{r['actor'] or ''}/{r['os_user'] or ''}  {' '.join(str(r['detail'] or '').split())}"
        )
    if not verify:
        return
    if verdict.problem is not None:
        raise Failure(str(verdict.problem), code=EXIT_REJECTED)
    extra = f", {verdict.before_signing} from before signing (sealed)" if verdict.before_signing else ""
    lost = f", {verdict.unverifiable} signed by a key no longer kept (sealed)" if verdict.unverifiable else ""
    click.echo(f"remediation_log verified: {verdict.chained} chained row(s){extra}{lost}")


@remediate.group("key")
def key_group() -> None:
    """The approval key (outside the warehouse; never printed)."""


@key_group.command("rotate")
@click.option("--by", "actor", envvar="USER", help="Who rotates the key (default $USER).")
@wait_option
@click.pass_context
def key_rotate(ctx: click.Context, actor: str | None, wait_s: float) -> None:
    """Put a new approval key in use. Approvals signed with the old key stop counting (approve again); the
    old key stays in the key file so that the log it signed still verifies."""
    from pipelines.remediate import audit
    from pipelines.remediate.apply import ChainBroken, open_chain
    from pipelines.remediate.keys import ApprovalKeyError, rotate_key

    config = ctx_config(ctx)
    with writing(config, wait_s, role="remediate key rotate"):
        con = _connect(config)
        try:
            open_chain(con, config, actor, create=False)  # a broken chain is not carried over to a new key
            ring, old = rotate_key(config)
            audit.note_rotation(con, ring, old, actor)
        except ApprovalKeyError as exc:
            raise Failure(str(exc)) from None
        except ChainBroken as exc:
            raise Failure(str(exc), code=EXIT_REJECTED) from None
        finally:
            con.close()
    click.echo(f"approval key rotated: {old} -> {ring.current}; approve pending actions again")
