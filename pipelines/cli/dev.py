"""`make dev`: the Dagster UI on the configuration the CLI would use, in the instance the CLI's runs land in.

The configuration is $WASTEWATCH_CONFIG, else ./wastewatch.yaml, else the demo's demo/wastewatch.yaml
(said on stderr either way); the instance is `pipelines.instance.dagster_home` of that file, so the UI
shows the runs, materialisations and check results of `wastewatch` runs made by cron or by hand. Runs left
unfinished by a killed process are released first. Then this process becomes `dagster dev` (exec), so a
SIGTERM or Ctrl-C sent to `make dev` reaches Dagster itself, which stops its webserver and daemon.

`dagster dev` is run with the instance in a folder of its own and from a working folder without a
dagster.yaml, so Dagster has no settings file to warn about. Its notice that `dg dev` supersedes it is
silenced here: `dg` is a separate package (dagster-dg-cli) that wastewatch does not install, and both
start the same webserver and daemon on the same workspace.yaml.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from pipelines.config import CONFIG_ENV, DEFAULT_CONFIG_NAME, ORIGIN_DEFAULT, find_config, load_config
from pipelines.errors import ConfigError
from pipelines.instance import dagster_home, open_instance

DEMO_CONFIG = Path("demo") / DEFAULT_CONFIG_NAME
# Dagster's FutureWarning that `dg dev` supersedes `dagster dev`, matched by the start of its message
SUPERSEDED_NOTICE = "ignore:Function `dev_command` is superseded:FutureWarning"


def choose_config() -> tuple[Path, str]:
    """$WASTEWATCH_CONFIG, else ./wastewatch.yaml, else demo/wastewatch.yaml (with where it came from)."""
    path, origin = find_config(None)
    if origin == ORIGIN_DEFAULT and not path.exists() and DEMO_CONFIG.exists():
        return DEMO_CONFIG, f"make dev's default, as neither {CONFIG_ENV} nor ./{DEFAULT_CONFIG_NAME} exists"
    return path, origin


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=3000, show_default=True, type=int)
def main(host: str, port: int) -> None:
    """Start the Dagster UI (webserver and daemon) for wastewatch."""
    path, origin = choose_config()
    try:
        load_config(path, origin=origin)
    except ConfigError as exc:
        for line in str(exc).splitlines():
            click.echo(f"error: {line}", err=True)
        sys.exit(2)
    home = dagster_home(path)
    # prepares the home and releases runs of dead processes; the UI keeps history whatever the CLI does
    with open_instance(path, history="sqlite"):
        pass
    click.echo(f"config: {path} (from {origin})", err=True)
    click.echo(f"dagster instance: {home} (the CLI's runs land here too)", err=True)
    env = {
        **os.environ,
        CONFIG_ENV: str(path.resolve()),
        "DAGSTER_HOME": str(home),
        "PYTHONWARNINGS": ",".join(w for w in (os.environ.get("PYTHONWARNINGS"), SUPERSEDED_NOTICE) if w),
    }
    args = [sys.executable, "-m", "dagster", "dev", "-w", "workspace.yaml", "-h", host, "-p", str(port)]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, args, env)


if __name__ == "__main__":  # pragma: no cover
    main()
