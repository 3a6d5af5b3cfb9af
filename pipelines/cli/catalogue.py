"""`wastewatch rules`: the rule catalogue, and a rule's documentation and effective parameters."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from pipelines.cli.common import Failure, ctx_config

if TYPE_CHECKING:
    from pipelines.config import Config


@click.group()
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
        config = ctx_config(ctx)
    effective = rule.make_params(config.rule_overrides(rule.id) if config else {}, config)
    for name, f in rule.params.model_fields.items():
        click.echo(f"  {name}: {f.default} -> {getattr(effective, name)}   {f.description or ''}")
