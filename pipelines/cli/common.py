"""What every `wastewatch` command shares: exit codes, the one-line failure, the config it reads, the
warehouse lock a writing command holds, and the ISO week it is given."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pipelines.errors import ConfigError
from pipelines.lock import DEFAULT_WAIT_S
from pipelines.redact import redact

if TYPE_CHECKING:  # the config's models are imported when a command reads one, not for `--help`
    import dagster as dg

    from pipelines.config import Config
    from pipelines.warehouse import CommandWarehouse

EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_BUSY = 0, 1, 2, 3


class Failure(click.ClickException):
    """An error that ends the command with a given exit code: one `error:` line per failure, redacted."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = code

    def show(self, file: Any = None) -> None:
        for line in self.format_message().splitlines() or [""]:
            click.echo(f"error: {redact(line)}", err=True)


def say(text: str, err: bool = False) -> None:
    """Echo a status line, redacted (it may quote a source's location or an error)."""
    click.echo(redact(text), err=err)


def wait_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--wait",
        "wait_s",
        type=click.FloatRange(0),
        default=DEFAULT_WAIT_S,
        show_default=True,
        envvar="WASTEWATCH_WAIT",
        help="Seconds to wait while another process writes the warehouse; then exit 3 naming it.",
    )(f)


class Writing:
    """What a command holding the warehouse's lock shares between its steps: one connection to the
    warehouse (`warehouse`, opened on first use) and one Dagster instance for all its runs (`instance`)."""

    def __init__(self, warehouse: CommandWarehouse, stack: ExitStack) -> None:
        self.warehouse = warehouse
        self._stack = stack
        self._instance: dg.DagsterInstance | None = None

    def instance(self, config_path: Path) -> dg.DagsterInstance:
        """The Dagster instance this command's runs share (opened on first use: imports Dagster)."""
        if self._instance is None:
            from pipelines.instance import open_instance

            self._instance = self._stack.enter_context(open_instance(config_path))
        return self._instance


@contextmanager
def writing(config: Config, wait_s: float, role: str = "writer") -> Iterator[Writing]:
    """Hold the warehouse's run-level lock (waiting up to `wait_s`); WarehouseBusy ends in exit 3. The block
    gets the command's connection and Dagster instance (`Writing`), both closed before the lock is freed."""
    from pipelines.config.run_history import run_history
    from pipelines.lock import writer_lock
    from pipelines.warehouse import CommandWarehouse

    run_history()  # a bad WASTEWATCH_RUN_HISTORY is refused before the lock or the warehouse's folder exist
    with (
        writer_lock(config.warehouse_path, wait=wait_s, notice=lambda m: say(m, err=True), role=role),
        ExitStack() as stack,
    ):
        warehouse = CommandWarehouse(config)
        stack.callback(warehouse.close)  # after the instance (closed first: entered last)
        yield Writing(warehouse, stack)


def ctx_config(ctx: click.Context) -> Config:
    """The configuration found by `find_config`; the first load says on stderr which file it is."""
    from pipelines.config import load_config

    path = ctx.obj["config_path"]
    try:
        config = load_config(path, origin=ctx.obj.get("config_origin"))
    except ConfigError as exc:
        raise Failure(str(exc)) from None
    if not ctx.obj.get("config_said") and not ctx.obj.get("quiet"):
        ctx.obj["config_said"] = True
        click.echo(redact(f"config: {path} (from {ctx.obj['config_origin']})"), err=True)
    return config


def pick_week(value: str | None) -> str:
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


def no_data(config: Config, week: str, warehouse: CommandWarehouse | None = None) -> bool:
    """Say so, plainly and naming the weeks that have data, when the warehouse holds nothing for `week`
    (read through the command's connection when given)."""
    from pipelines.health.coverage import no_data_message
    from rules import Window

    con = warehouse.reader() if warehouse is not None else None
    message = no_data_message(config, Window.iso_week(week), con)
    if message is not None:
        say(message)
    return message is not None
