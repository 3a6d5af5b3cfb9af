"""The CLI with a config that is wrong or holds secrets: one `error:` line and exit 2 before anything runs, no
traceback without -v, and a webhook's token never printed nor stored in Dagster's run history."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import HTTPServer
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner, Result

from pipelines.cli import main
from pipelines.cli.app import _Main
from pipelines.config import load_config
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.report import W48, evaluate_attention, fleet, put_findings
from tests.helpers.webhook import WebhookReceiver

TOKEN = "sentinel-hook-T0K3N-5f1c"


def cli(config: Path, *args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner(env={"WASTEWATCH_CONFIG": None, **(env or {})}).invoke(
        main, ["--config", str(config), *args], catch_exceptions=False
    )


def test_a_webhook_without_a_scheme_stops_report_at_load_masked_and_in_one_line(tmp_path: Path) -> None:
    config = write_config(tmp_path, f"notify:\n  webhook_url: hooks.slack.com/services/T0/B0/{TOKEN}\n")
    result = cli(config, "report", "--week", "2026-W48")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {config}:2: notify.webhook_url: 'hooks.slack.com/***' is not a URL: it needs a scheme and a "
        "host, e.g. https://hooks.slack.com/services/***\n"
    )
    assert TOKEN not in result.output and not (tmp_path / "warehouse").exists()


def test_a_warehouse_that_is_a_device_stops_ingest_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "landing").mkdir()
    config = write_config(
        tmp_path, "warehouse: /dev/null\nsources:\n  - {name: f, kind: focus, uri: landing/}\n"
    )
    result = cli(config, "ingest")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"error: {config}:1: warehouse: /dev/null is not a DuckDB file (a device, pipe or socket): name a "
        "DuckDB file, or where to create one\n"
    )


@pytest.mark.parametrize("body", ["", "currency: USD\nsources: []\n"])
@pytest.mark.parametrize("command", ["ingest", "run"])
def test_ingest_and_run_without_sources_exit_2_with_a_hint(tmp_path: Path, body: str, command: str) -> None:
    config = write_config(tmp_path, body)
    result = cli(config, command)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"error: {config}: no sources configured, so `{command}` has nothing to read: add a `sources:` list "
        "(`wastewatch init NEW.yaml` writes a starter file with examples; README.md, Configuration)"
    )
    assert not (tmp_path / "warehouse").exists()  # nothing done


def test_ingest_with_every_source_disabled_exits_2_naming_them(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        """
        sources:
          - {name: focus, kind: focus, uri: landing/, enabled: false}
          - {name: smi, kind: nvidia_smi, uri: smi/, enabled: false}
        """,
    )
    result = cli(config, "ingest")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"error: {config}: every source has `enabled: false` (focus, smi), so `ingest` has nothing to read: "
        "enable one"
    )


def test_other_commands_accept_an_empty_source_list(tmp_path: Path) -> None:
    config = write_config(tmp_path, "sources: []\n")
    result = cli(config, "evaluate", "--week", "2026-W48")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("2026-W48: no data in this week")
    result = cli(config, "rules", "show", "GPU001")
    assert result.exit_code == 0 and "GPU001" in result.stdout


def _group() -> click.Group:
    """A command group of the CLI's own class, with a command whose context fails as it closes."""

    @click.group(cls=_Main)
    @click.option("-v", "verbose", is_flag=True)
    @click.pass_context
    def group(ctx: click.Context, verbose: bool) -> None:
        ctx.ensure_object(dict)["verbose"] = verbose

    @group.command()
    @click.pass_context
    def closing(ctx: click.Context) -> None:
        def fail() -> None:
            raise RuntimeError(
                "closing failed at https://hooks.slack.com/services/T9/B9/closing-secret\nsecond line"
            )

        ctx.find_root().call_on_close(fail)
        click.echo("done")

    return group


def test_an_error_raised_after_the_command_is_one_redacted_line_and_exit_1() -> None:
    """The top-level handler covers what is raised outside the command (its context closing), not only in it."""
    result = CliRunner().invoke(_group(), ["closing"])
    assert (result.exit_code, result.stdout) == (1, "done\n")
    assert result.stderr == (
        "error: RuntimeError: closing failed at https://hooks.slack.com/services/*** "
        "(run with -v for the traceback)\n"
    )
    verbose = CliRunner().invoke(_group(), ["-v", "closing"])
    assert isinstance(verbose.exception, RuntimeError)  # -v: the exception, with its traceback


def test_a_reader_that_closes_stdout_ends_the_command_quietly(tmp_path: Path) -> None:
    """`wastewatch rules list | head -0`: no `error: BrokenPipeError` line and no traceback, exit 1."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "rules", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env={**os.environ, "WASTEWATCH_CONFIG": "", "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the first line is written
    stderr = process.stderr.read().decode()
    assert (process.wait(timeout=60), stderr) == (1, "")


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[WebhookReceiver]]]:
    """A webhook endpoint on 127.0.0.1 that refuses every post (HTTP 500): the failure path logs the most."""
    handler = type("Receiver", (WebhookReceiver,), {"received": [], "status": 500})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hooks/T0/B0/{TOKEN}", handler
    server.shutdown()
    server.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_config_secrets_never_reach_dagster_run_storage_or_compute_logs(
    tmp_path: Path, receiver: tuple[str, type[WebhookReceiver]], empty_marts: Path
) -> None:
    """With run history on (WASTEWATCH_RUN_HISTORY=sqlite): `report` posts with the webhook's token (the
    receiver answers 500, a logged warning) and `ingest` fails on an S3 endpoint holding a password; no file
    under .dagster/ (run and event storage, compute logs) nor any output holds either secret."""
    url, handler = receiver
    password = "sentinel-S3-pa55"
    body = {
        "history_start": "2026-11-23",
        "notify": {"webhook_url": url},
        "sources": [
            {
                "name": "bills",
                "kind": "focus",
                "uri": "s3://bills/focus/",
                "endpoint_url": f"http://ops:{password}@127.0.0.1:{_closed_port()}",
            }
        ],
    }
    config_path = write_config(tmp_path, yaml.safe_dump(body))
    config = load_config(config_path)
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        fleet(con)
        put_findings(con, W48, "GPU001", [{"resource_id": "i-h100", "team": "nlp", "estimated_waste": 8640}])
        evaluate_attention(con, config, W48)
        con.execute(
            "insert into gpu_samples (ts, host, util_pct, source, x_source_file, x_file_id, x_sample_date)"
            " values (timestamp '2026-11-23 00:00', 'i-h100', 0, 'test', 'test', 'test', date '2026-11-23')"
        )
    finally:
        con.close()
    env: dict[str, str | None] = {
        "WASTEWATCH_RUN_HISTORY": "sqlite",
        "DAGSTER_HOME": None,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    report = cli(config_path, "report", "--week", "2026-W48", env=env)
    assert report.exit_code == 0, report.output  # a refused post is a warning, never a lost report
    assert [post["path"] for post in handler.received] == [f"/hooks/T0/B0/{TOKEN}"]
    assert f"webhook http://127.0.0.1:{url.split(':')[2].split('/')[0]}/***: HTTP 500" in report.stderr
    ingest = cli(config_path, "ingest", env=env)
    assert ingest.exit_code == 1
    assert "error: source 'bills': s3://bills/focus/: cannot list: " in ingest.stderr
    assert "http://***@127.0.0.1:" in ingest.stderr  # the endpoint quoted, masked
    stored = [p for p in (tmp_path / ".dagster").rglob("*") if p.is_file()]
    assert len([p for p in stored if p.parent.name == "runs" and p.suffix == ".db"]) >= 3  # index + 2 runs
    assert any("compute_logs" in p.parts for p in stored)
    for secret in (TOKEN, password):
        assert secret not in report.output + ingest.output
        assert [p for p in stored if secret.encode() in p.read_bytes()] == []


def test_a_step_that_fails_inside_dagster_is_one_line_without_dagsters_stack_trace(
    tmp_path: Path, empty_marts: Path
) -> None:
    """A failure inside a run's step (here the report's folder under a regular file) ends as one `error:`
    line naming the step, exit 1; Dagster's own console (its "Stack Trace:") prints only with -v. The
    `weekly_report` run of `report` (the step `run` ends with) over the report tests' fleet."""
    (tmp_path / "blocker").write_text("a file, not a folder")
    config_path = write_config(
        tmp_path, "history_start: 2026-11-23\nreports_dir: blocker/reports\nsources: []\n"
    )
    config = load_config(config_path)
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        fleet(con)
        put_findings(con, W48, "GPU001", [{"resource_id": "i-h100", "team": "nlp", "estimated_waste": 8640}])
        con.execute(
            "insert into gpu_samples (ts, host, util_pct, source, x_source_file, x_file_id, x_sample_date)"
            " values (timestamp '2026-11-23 00:00', 'i-h100', 0, 'test', 'test', 'test', date '2026-11-23')"
        )  # a landed sample: a week without landed data is reported as such, not run
    finally:
        con.close()
    result = cli(config_path, "-q", "report", "--week", "2026-W48")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: 2026-W48: reports__weekly_report: [Errno 20] Not a directory: "
        f"'{tmp_path / 'blocker' / 'reports' / '2026-W48'}'"
    ]
    verbose = cli(config_path, "-q", "-v", "report", "--week", "2026-W48")
    assert verbose.exit_code == 1 and "Stack Trace:" in verbose.stderr
