"""The `wastewatch` command group: global options, and errors nobody caught ended as one redacted line."""

from __future__ import annotations

import errno
import sys
from pathlib import Path
from typing import Any

import click

from pipelines.cli.common import EXIT_BUSY, EXIT_REJECTED, Failure
from pipelines.errors import ConfigError, WarehouseBusy, WarehouseError


def _one_line(exc: BaseException) -> Failure:
    """Any exception as one `error:` line (redacted when shown) and exit 1."""
    text = str(exc).strip().splitlines()
    return Failure(
        f"{type(exc).__name__}: {text[0] if text else 'no message'} (run with -v for the traceback)",
        code=EXIT_REJECTED,
    )


class _Main(click.Group):
    """The command group: errors nobody caught end as one redacted line (a traceback only with -v).

    `invoke` turns what a command raises into that line; `main` does the same for anything raised around
    the command (closing its context, its resources), so no code path prints a traceback without -v.
    """

    verbose = False  # -v of the current invocation, kept for `main`, which runs after the context is gone

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except WarehouseBusy as exc:
            raise Failure(str(exc), code=EXIT_BUSY) from None
        except (WarehouseError, ConfigError) as exc:
            raise Failure(str(exc)) from None
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # the reader of stdout went away (`| head`): click ends quietly
                raise
            if (ctx.obj or {}).get("verbose"):
                raise
            raise _one_line(exc) from None
        except Exception as exc:
            if (ctx.obj or {}).get("verbose"):
                raise
            raise _one_line(exc) from None
        finally:
            type(self).verbose = bool((ctx.obj or {}).get("verbose"))

    def main(self, *args: Any, **kwargs: Any) -> Any:
        type(self).verbose = False
        try:
            return super().main(*args, **kwargs)
        except Exception as exc:
            if type(self).verbose or not kwargs.get("standalone_mode", True):
                raise
            failure = _one_line(exc)
            failure.show()
            sys.exit(failure.exit_code)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Configuration file (default: $WASTEWATCH_CONFIG, else ./wastewatch.yaml).",
)
@click.option("-v", "--verbose", is_flag=True, help="Show Dagster's run log, and tracebacks of errors.")
@click.option(
    "--progress",
    "show_progress",
    is_flag=True,
    help="Progress on long steps to stderr even when it is not a terminal (on a terminal it is shown anyway).",
)
@click.option(
    "-q", "--quiet", is_flag=True, help="No progress and no `config:` line; errors and results only."
)
@click.version_option(package_name="wastewatch")
@click.pass_context
def main(
    ctx: click.Context, config_path: Path | None, verbose: bool, show_progress: bool, quiet: bool
) -> None:
    """wastewatch finds the money GPU and AI-training infrastructure burns for nothing.

    The configuration is --config, else $WASTEWATCH_CONFIG, else ./wastewatch.yaml; commands that read it
    say which on stderr (`config: demo/wastewatch.yaml (from WASTEWATCH_CONFIG)`).
    """
    # imported here, not with the module: `wastewatch --help` and `--version` stay fast
    from pipelines.config import ORIGIN_DEFAULT, find_config
    from pipelines.progress import Progress, reporting

    ctx.ensure_object(dict)
    path, origin = find_config(config_path)
    ctx.obj["config_path"] = path
    ctx.obj["config_origin"] = origin
    ctx.obj["config_given"] = origin != ORIGIN_DEFAULT  # --config or WASTEWATCH_CONFIG
    ctx.obj["verbose"] = verbose
    ctx.obj["quiet"] = quiet
    stream = sys.stderr
    live = stream.isatty()
    if not quiet and (show_progress or live):
        ctx.with_resource(reporting(Progress(stream, live=live)))
