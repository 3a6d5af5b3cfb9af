"""`wastewatch`: the command line. Exit codes: 0 ok, 1 files rejected (the rest loaded), 2 usage or config error.

ingest, evaluate, report and run materialise the same Dagster asset graph the schedules run, in-process.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pipelines.config import DEFAULT_CONFIG_NAME, STARTER_CONFIG, Config, ConfigError, load_config

if TYPE_CHECKING:
    from pipelines.runner import RunOutcome

EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


class Failure(click.ClickException):
    """An error that ends the command with a given exit code and a one-line message."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = code

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def _config(ctx: click.Context) -> Config:
    try:
        return load_config(ctx.obj["config_path"])
    except ConfigError as exc:
        raise Failure(str(exc)) from None


def _week(value: str | None) -> str:
    from pipelines.defs.partitions import last_complete_week
    from rules import Window

    if value is None:
        return last_complete_week(datetime.now(UTC).date())
    from pipelines.defs.partitions import week_to_partition, weekly_partitions

    try:
        label = Window.iso_week(value).label
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--week") from None
    keys = weekly_partitions.get_partition_keys()
    if week_to_partition(label) not in keys:
        first, last = (Window.containing(date.fromisoformat(k)).label for k in (keys[0], keys[-1]))
        raise click.BadParameter(
            f"{label} is outside the weeks wastewatch evaluates ({first} to {last})", param_hint="--week"
        )
    return label


def _fmt_money(amount: Any, currency: str) -> str:
    return f"{currency} {Decimal(str(amount)):,.2f}"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    envvar="WASTEWATCH_CONFIG",
    help=f"Configuration file (default ./{DEFAULT_CONFIG_NAME}; env WASTEWATCH_CONFIG).",
)
@click.option("-v", "--verbose", is_flag=True, help="Show Dagster's run log.")
@click.version_option(package_name="wastewatch")
@click.pass_context
def main(ctx: click.Context, config_path: Path | None, verbose: bool) -> None:
    """wastewatch finds the money GPU and AI-training infrastructure burns for nothing."""
    ctx.ensure_object(dict)
    ctx.obj["config_path"] = config_path or Path(DEFAULT_CONFIG_NAME)
    ctx.obj["config_given"] = config_path is not None  # --config or WASTEWATCH_CONFIG
    ctx.obj["verbose"] = verbose


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
    from pipelines.ingest.readers import get_reader
    from pipelines.runner import run_ingest
    from pipelines.warehouse import open_warehouse, rows, utcnow

    started = utcnow()
    click.echo(f"ingesting {len(config.sources)} source(s) into {config.warehouse_path}", err=True)
    for source in config.sources:
        if source.enabled and get_reader(source.kind) is None:
            click.echo(
                f"note: source {source.name!r}: no reader for kind {source.kind!r} yet; its files stay for later",
                err=True,
            )
    outcome = run_ingest(config.path or ctx.obj["config_path"], verbose=ctx.obj["verbose"])
    if not outcome.success:
        raise Failure(
            "ingestion failed:\n  " + "\n  ".join(outcome.failures or ["see the Dagster log (-v)"]),
            code=EXIT_REJECTED,
        )
    for table in ("billing_line_items", "gpu_samples"):
        md = outcome.metadata.get(table, {})
        if md:
            click.echo(
                f"{table}: {md.get('files_loaded', 0)} file(s) loaded ({md.get('rows_loaded', 0):,} rows), "
                f"{md.get('files_unchanged', 0)} unchanged, {md.get('files_rejected', 0)} rejected; "
                f"{md.get('dagster/row_count', 0):,} rows in the table"
            )
    with open_warehouse(config) as con:
        rejected = rows(
            con,
            "select error from ingest_files where status = 'rejected' and checked_at >= $t order by uri",
            {"t": started},
        )
    for r in rejected:
        click.echo(f"rejected: {r['error']}", err=True)
    return EXIT_REJECTED if rejected else EXIT_OK


@main.command()
@click.pass_context
def ingest(ctx: click.Context) -> None:
    """Load new and changed source files, rebuild the marts, publish the read-only warehouse."""
    config = _config(ctx)
    ctx.exit(_do_ingest(ctx, config))


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
            f"{week}: run failed:\n  " + "\n  ".join(outcome.failures or ["see the Dagster log (-v)"]),
            code=EXIT_REJECTED,
        )
    for key, md in sorted(outcome.metadata.items()):
        if key.startswith("findings/"):
            waste = ", ".join(
                _fmt_money(v, k.removeprefix("estimated_waste_"))
                for k, v in md.items()
                if k.startswith("estimated_waste_")
            )
            click.echo(f"{key}: {md.get('findings', 0)} finding(s){'; waste ' + waste if waste else ''}")
    md = outcome.metadata.get("reports/weekly_report")
    if md:
        click.echo(f"report: {md['report_html']}")
        for k, v in md.items():
            if k.startswith("spend_"):
                cur = k.removeprefix("spend_")
                click.echo(
                    f"  spend {_fmt_money(v, cur)}, waste {_fmt_money(md.get('waste_' + cur, 0), cur)}"
                )
    return outcome


@main.command()
@click.option("--week", help="ISO week, e.g. 2026-W48 (default: the last complete week).")
@click.pass_context
def evaluate(ctx: click.Context, week: str | None) -> None:
    """Run every rule for an ISO week and store its findings."""
    config = _config(ctx)
    _do_weekly(ctx, config, _week(week), evaluate=True, report=False)


@main.command()
@click.option("--week", help="ISO week, e.g. 2026-W48 (default: the last complete week).")
@click.pass_context
def report(ctx: click.Context, week: str | None) -> None:
    """Write report.md, report.html and findings.csv/.parquet for an ISO week."""
    config = _config(ctx)
    _do_weekly(ctx, config, _week(week), evaluate=False, report=True)


@main.command()
@click.option("--week", help="ISO week, e.g. 2026-W48 (default: the last complete week).")
@click.pass_context
def run(ctx: click.Context, week: str | None) -> None:
    """ingest + evaluate + report: what a nightly cron entry runs."""
    config = _config(ctx)
    w = _week(week)
    code = _do_ingest(ctx, config)
    _do_weekly(ctx, config, w, evaluate=True, report=True)
    ctx.exit(code)


@main.command()
@click.argument("query")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True
)
@click.option("--live", is_flag=True, help="Read the live warehouse instead of the published copy.")
@click.pass_context
def sql(ctx: click.Context, query: str, fmt: str, live: bool) -> None:
    """Query the published read-only warehouse, e.g. wastewatch sql "select * from findings"."""
    import duckdb

    from pipelines.warehouse import WarehouseError, connect

    config = _config(ctx)
    path = config.warehouse_path if live or not config.published_path.exists() else config.published_path
    try:
        con = connect(path, read_only=True)
    except WarehouseError as exc:
        raise Failure(str(exc)) from None
    try:
        cur = con.execute(query)
        if cur.description is None:
            return
        cols = [d[0] for d in cur.description]
        data = cur.fetchall()
    except duckdb.Error as exc:
        raise Failure(f"query failed: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()
    click.echo(format_rows(cols, data, fmt), nl=False)


def format_rows(cols: list[str], data: list[tuple[Any, ...]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([dict(zip(cols, r, strict=True)) for r in data], default=str, indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(cols)
        w.writerows(["" if v is None else v for v in r] for r in data)
        return buf.getvalue()
    text = [[("NULL" if v is None else str(v)).replace("\n", " ") for v in r] for r in data]
    widths = [max([len(c)] + [len(r[i]) for r in text]) for i, c in enumerate(cols)]
    line = "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in text]
    out.append(f"({len(data)} row{'s' if len(data) != 1 else ''})")
    return "\n".join(out) + "\n"


@main.group()
def rules() -> None:
    """The rule catalogue."""


@rules.command("list")
def rules_list() -> None:
    """One line per rule: id, name, category, severity, status."""
    from rules import ALL_RULES

    for r in ALL_RULES:
        click.echo(f"{r.id}  {r.name:28} {r.category:16} {r.severity:7} {r.status:8} {r.summary}")


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
    overrides: dict[str, Any] = {}
    # the default ./wastewatch.yaml is optional here; a config named explicitly must exist
    if ctx.obj["config_given"] or Path(ctx.obj["config_path"]).exists():
        overrides = _config(ctx).rule_overrides(rule.id)
    effective = rule.make_params(overrides)
    for name, f in rule.params.model_fields.items():
        click.echo(f"  {name}: {f.default} -> {getattr(effective, name)}   {f.description or ''}")


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
@click.pass_context
def demo(ctx: click.Context, directory: Path, week: str | None, weeks: int, seed: int, no_run: bool) -> None:
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
    config = _config(ctx)
    code = _do_ingest(ctx, config)
    outcome = _do_weekly(ctx, config, w, evaluate=True, report=True)
    planted_gpu001 = planted["report_week"]["rules"]["GPU001"]["waste"]
    found = outcome.value("findings/gpu001_idle_gpu_instance", "estimated_waste_USD", 0.0)
    click.echo(
        f"GPU001 idle-gpu-instance in {w}: found {_fmt_money(found, 'USD')}, planted {_fmt_money(planted_gpu001, 'USD')} "
        f"(expected.json lists every planted amount)"
    )
    ctx.exit(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
