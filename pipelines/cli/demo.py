"""`wastewatch demo`: a small AI company's landing zone generated, then the pipeline run over it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pipelines.cli.common import EXIT_REJECTED, Failure, Writing, ctx_config, pick_week, wait_option, writing
from pipelines.cli.money import fmt_money
from pipelines.cli.pipeline import do_ingest, do_weekly

if TYPE_CHECKING:
    from pipelines.config import Config


@click.command()
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
@wait_option
@click.pass_context
def demo(
    ctx: click.Context, directory: Path, week: str | None, weeks: int, seed: int, no_run: bool, wait_s: float
) -> None:
    """Generate a realistic landing zone for a small AI company and run the pipeline on it."""
    from pipelines.config import DEFAULT_CONFIG_NAME
    from pipelines.demo import generate

    w = pick_week(week)
    click.echo(f"generating {weeks} week(s) of demo data ending {w} in {directory}/ ...", err=True)
    planted = generate(directory, last_week=w, weeks=weeks, seed=seed)
    config_path = directory / DEFAULT_CONFIG_NAME
    click.echo(f"wrote {config_path} and {directory / 'expected.json'}", err=True)
    if no_run:
        return
    ctx.obj["config_path"] = config_path
    ctx.obj["config_origin"] = "wastewatch demo"
    config = ctx_config(ctx)
    with writing(config, wait_s) as held:
        ctx.exit(demo_run(ctx, config, held, config_path, w, planted))


def demo_run(
    ctx: click.Context, config: Config, held: Writing, config_path: Path, w: str, planted: dict[str, Any]
) -> int:
    """The demo's ingest, its earlier weeks and the report week; the exit code."""
    code = do_ingest(ctx, config, held)
    # earlier weeks first, so the report has a trend, last week's figures and finding lifecycles
    from pipelines.runner import run_weekly

    for label in planted["weeks"][:-1]:
        click.echo(f"evaluating {label} ...", err=True)
        earlier = run_weekly(
            config.path or config_path,
            label,
            verbose=ctx.obj["verbose"],
            con=held.warehouse.writer(),
            instance=held.instance(config.path or config_path),
        )
        if not earlier.success:
            raise Failure("\n".join(f"{label}: {f}" for f in earlier.failures), code=EXIT_REJECTED)
    outcome = do_weekly(ctx, config, held, w, evaluate=True, report=True)
    planted_gpu001 = planted["report_week"]["rules"]["GPU001"]["waste"]
    found = outcome.value("findings/gpu001_idle_gpu_instance", "estimated_waste_USD", 0.0)
    click.echo(
        f"GPU001 idle-gpu-instance in {w}: found {fmt_money(found, 'USD')}, planted {fmt_money(planted_gpu001, 'USD')} "
        f"(expected.json lists every planted amount)"
    )
    return code
