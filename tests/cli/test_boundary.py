"""Trust at the boundary: honest exit codes with one line per failure, one writer per warehouse (a second
writer, a killed holder, a live reader), and no secret in any output, written file or warehouse column.

The real `wastewatch` script runs in its own process where the promise is what that process shows: the
exit code and stderr of an error nobody caught, a writer that waits for a holder and then runs, and every
byte a whole `run` prints. Where the other party (a holder, a killed holder, a live reader) is the real
process and the promise is what the command does about it, the command runs in this process (its exit code
is the one `main` gives the shell: test_an_unexpected_error_is_one_line_and_a_traceback_only_with_v and the
secrets test show the script's own)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from http.server import HTTPServer
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result

from pipelines.cli import main
from pipelines.lock import lock_path
from tests.helpers.config import write_config
from tests.helpers.paths import FOCUS_SAMPLE, REPO, copy_into, put_back
from tests.helpers.s3_server import moto_server
from tests.helpers.webhook import WebhookReceiver

pytestmark = pytest.mark.e2e

FOCUS_ONLY = """
sources:
  - {name: focus, kind: focus, uri: landing/billing/}
"""

# a process that holds the warehouse's run lock as every writer takes it, until killed or `seconds` pass
HOLD_LOCK = """
import sys, time
from pathlib import Path
from pipelines.lock import writer_lock
with writer_lock(Path(sys.argv[1]), wait=0):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""

# the same, until told on stdin (or after argv[2] seconds): it lets go as a finished writer does
HOLD_LOCK_UNTIL_TOLD = """
import select, sys
from pathlib import Path
from pipelines.lock import writer_lock
with writer_lock(Path(sys.argv[1]), wait=0):
    print("held", flush=True)
    select.select([sys.stdin], [], [], float(sys.argv[2]))
"""

# a reader outside wastewatch (a duckdb shell, a notebook) holding DuckDB's own file lock
HOLD_DUCKDB = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def _wastewatch() -> list[str]:
    script = Path(sys.executable).with_name("wastewatch")
    return [str(script)] if script.exists() else [sys.executable, "-m", "pipelines.cli"]


def _run(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_wastewatch(), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "WASTEWATCH_CONFIG": "", **(env or {})},
    )


def _cli(*args: str) -> Result:
    """The CLI in this process (where the promise is the command's, the other party a real process)."""
    return CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(main, list(args), catch_exceptions=False)


def _hold(script: str, path: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(path), str(seconds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "billing")
    return write_config(tmp_path, FOCUS_ONLY)


@pytest.fixture(scope="module")
def ingested_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A project after one clean ingest, made once for the module's lock tests: (its folder, a pristine copy
    of it kept elsewhere)."""
    root = tmp_path_factory.mktemp("ingested")
    copy_into(FOCUS_SAMPLE, root / "landing" / "billing")
    config = write_config(root, FOCUS_ONLY)
    # in this process: the set-up of the lock tests, whose contenders are the real processes
    first = _cli("--config", str(config), "ingest")
    assert first.exit_code == 0, first.output
    pristine = tmp_path_factory.mktemp("ingested_pristine") / "project"
    shutil.copytree(root, pristine)
    return root, pristine


@pytest.fixture
def ingested(ingested_once: tuple[Path, Path]) -> Path:
    """The project after one clean ingest (the warehouse exists), put back where it was ingested from the
    pristine copy (file times kept): a copy elsewhere would be a moved project, which the next ingest loads
    again in full; here an ingest finds nothing new unless it is asked for every step (`--full`)."""
    root, pristine = ingested_once
    put_back(pristine, root)
    return root / "wastewatch.yaml"


def _warehouse(config: Path) -> Path:
    return config.parent / "warehouse" / "wastewatch.duckdb"


# --- exit codes: a source that cannot be read is a failure ----------------------------------------------


def test_a_missing_source_folder_exits_1_naming_the_source_and_the_rest_loads(tmp_path: Path) -> None:
    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "billing")
    config = write_config(
        tmp_path,
        """
        sources:
          - {name: focus, kind: focus, uri: landing/billing/}
          - {name: typo, kind: focus, uri: landing/bilings/}
        """,
    )
    # the exit code and the lines are the CLI's: the command in this process
    result = _cli("--config", str(config), "ingest")
    assert result.exit_code == 1, result.stderr
    assert _errors(result.stderr) == [
        f"error: source 'typo': {tmp_path / 'landing' / 'bilings'} does not exist"
    ]
    assert "Traceback" not in result.stderr
    con = duckdb.connect(str(_warehouse(config)), read_only=True)
    try:
        assert con.execute("select count(*) from billing_line_items").fetchall()[0][0] > 0
    finally:
        con.close()


@pytest.mark.full  # make test: the S3 failure via `run` in the secrets test, one line per failure above
def test_an_unreachable_bucket_exits_1_with_one_line(tmp_path: Path) -> None:
    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "billing")
    config = write_config(
        tmp_path,
        f"""
        sources:
          - {{name: focus, kind: focus, uri: landing/billing/}}
          - {{name: bills, kind: focus, uri: s3://bills/focus/, endpoint_url: "http://127.0.0.1:{_closed_port()}"}}
        """,
    )
    env = {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "AWS_DEFAULT_REGION": "us-east-1"}
    result = _run("--config", str(config), "ingest", env=env)
    assert result.returncode == 1, result.stderr
    [line] = _errors(result.stderr)
    assert line.startswith("error: source 'bills': s3://bills/focus/: cannot list: Could not connect")
    assert "Traceback" not in result.stderr


def test_an_unexpected_error_is_one_line_and_a_traceback_only_with_v(project: Path) -> None:
    (project.parent / "warehouse").mkdir()
    _warehouse(project).write_bytes(b"not a duckdb file" * 100)
    quiet = _run("--config", str(project), "ingest")
    assert quiet.returncode != 0 and "Traceback" not in quiet.stderr
    assert len(_errors(quiet.stderr)) >= 1 and all(len(x) < 500 for x in _errors(quiet.stderr))


# --- one writer per warehouse ----------------------------------------------------------------------------


def test_a_second_writer_waits_then_exits_3_naming_the_holder(ingested: Path) -> None:
    holder = _hold(HOLD_LOCK, _warehouse(ingested), 120)
    try:
        # the contenders in this process: the holder is the real other one
        result = _cli("--config", str(ingested), "ingest", "--wait", "1")
        assert result.exit_code == 3, result.stderr
        [line] = _errors(result.stderr)
        assert f"held by another writer, pid {holder.pid} on {socket.gethostname()}" in line
        assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) <= 3
        # a reader of the live warehouse waits for the writer too, and gives up on its own
        live = _cli("--config", str(ingested), "sql", "--live", "--wait", "1", "select 1 as x")
        assert live.exit_code == 3 and f"pid {holder.pid}" in live.stderr
        # the published copy is read without waiting
        published = _cli("--config", str(ingested), "sql", "--format", "csv", "select 1 as x")
        assert published.exit_code == 0 and published.stdout == "x\n1\n"
    finally:
        holder.kill()
        holder.wait()


def test_a_writer_waits_for_the_holder_to_finish(ingested: Path) -> None:
    holder = _hold(HOLD_LOCK_UNTIL_TOLD, _warehouse(ingested), 120)
    try:
        writer = subprocess.Popen(
            [*_wastewatch(), "--config", str(ingested), "ingest", "--wait", "120"],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "WASTEWATCH_CONFIG": ""},
        )
        assert writer.stderr is not None
        # the holder finishes once the writer says it waits (however long the writer took to start)
        said: list[str] = []
        while not said or ("waiting up to" not in said[-1] and said[-1]):
            said.append(writer.stderr.readline())
        assert holder.stdin is not None
        holder.stdin.write("done\n")
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
        rest = writer.stderr.read()
        assert writer.wait(timeout=300) == 0, "".join(said) + rest
        assert any(f"waiting up to 120 s for the warehouse: held by pid {holder.pid}" in x for x in said), (
            said
        )
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_left_by_a_killed_writer_is_cleared(ingested: Path) -> None:
    holder = _hold(HOLD_LOCK, _warehouse(ingested), 120)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    stale = json.loads(lock_path(_warehouse(ingested)).read_text(encoding="utf-8"))
    assert stale["pid"] == holder.pid  # the killed process could not clean up
    # the next writer (in this process: the killed holder was the real process) clears it
    result = _cli("--config", str(ingested), "ingest", "--wait", "5")
    assert result.exit_code == 0, result.stderr
    assert f"cleared a stale warehouse lock left by pid {holder.pid}" in result.stderr
    assert not lock_path(_warehouse(ingested)).exists()


@pytest.mark.full  # make test: a stale lock is cleared in test_a_lock_left_by_a_killed_writer_is_cleared
def test_a_lock_file_naming_a_dead_pid_is_cleared(ingested: Path) -> None:
    done = subprocess.run([sys.executable, "-c", "pass"], check=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert done.returncode == 0
    info = {"pid": dead.pid, "host": socket.gethostname(), "started_at": "2026-01-01T00:00:00Z"}
    lock_path(_warehouse(ingested)).write_text(json.dumps(info), encoding="utf-8")
    result = _run("--config", str(ingested), "evaluate", "--week", "2024-W38", "--wait", "5")
    assert result.returncode == 0, result.stderr
    assert f"cleared a stale warehouse lock left by pid {dead.pid}" in result.stderr


def test_a_reader_holding_duckdbs_lock_never_breaks_the_writer(ingested: Path) -> None:
    reader = _hold(HOLD_DUCKDB, _warehouse(ingested), 4)
    try:
        # the writer in this process, the reader in its own; every step (`--full`), so the writer writes
        result = _cli("--config", str(ingested), "ingest", "--full")
        assert result.exit_code == 0, result.stderr
    finally:
        reader.wait()


# --- no secrets in any output ----------------------------------------------------------------------------

SECRETS = {
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "sentinel-aws-secret-access-key",
    "AWS_SESSION_TOKEN": "sentinel-aws-session-token",
    "WASTEWATCH_DB_PASSWORD": "sentinel-db-password",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture
def refusing_webhook() -> Iterator[str]:
    handler = type("Refusing", (WebhookReceiver,), {"received": [], "status": 403})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hooks/T0SENTINEL/B0SENTINEL/sentinelhooksecret"
    server.shutdown()
    server.server_close()


@pytest.fixture
def moto_with_auth() -> Iterator[str]:
    """A moto server that checks credentials (unknown keys are refused), reset when the test ends."""
    with moto_server() as endpoint:
        _reset_auth(endpoint, b"0")
        try:
            yield endpoint
        finally:
            _reset_auth(endpoint, b"inf")


def _reset_auth(endpoint: str, count: bytes) -> None:
    """moto's own API: how many requests go unchecked before credentials are enforced."""
    request = urllib.request.Request(
        f"{endpoint}/moto-api/reset-auth", data=count, headers={"Content-Type": "text/plain"}
    )
    urllib.request.urlopen(request).close()  # noqa: S310


def test_no_secret_reaches_any_output_file_or_warehouse_column(
    tmp_path: Path, refusing_webhook: str, moto_with_auth: str
) -> None:
    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "billing")
    down = f"http://minio:sentinel-url-password@127.0.0.1:{_closed_port()}"
    config = write_config(
        tmp_path,
        f"""
        sources:
          - {{name: focus, kind: focus, uri: landing/billing/}}
          - {{name: unreachable, kind: focus, uri: s3://bills/focus/, endpoint_url: "{down}"}}
          - {{name: denied, kind: focus, uri: s3://denied/focus/, endpoint_url: "{moto_with_auth}"}}
        notify:
          webhook_url: "{refusing_webhook}"
          report_url: "https://reader:sentinel-report-password@finops.example.com/r"
          email_html: true
          timeout_s: 5
        """,
    )
    outputs = []
    for args in (["run", "--week", "2024-W38"], ["-v", "run", "--week", "2024-W38"]):
        result = _run("--config", str(config), *args, env=SECRETS)
        assert result.returncode == 1, result.stderr[-3000:]
        outputs.append(result.stdout + result.stderr)
    quiet = outputs[0]
    # every failure path was taken, and each is reported without its secret
    assert "source 'unreachable': s3://bills/focus/: cannot list: Could not connect" in quiet
    assert "http://***@127.0.0.1" in quiet
    assert "source 'denied': s3://denied/focus/: cannot list: InvalidAccessKeyId" in quiet
    assert "webhook http://127.0.0.1" in outputs[1] and "/***: HTTP 403" in outputs[1]

    def leaks(text: str) -> bool:
        return "sentinel" in text.lower()

    for out in outputs:
        assert not leaks(out), [line for line in out.splitlines() if leaks(line)][:5]
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != config]
    assert any(p.name == "email.html" for p in written) and any(p.name == "findings.csv" for p in written)
    for path in written:
        if path.suffix != ".duckdb":
            assert not leaks(path.read_bytes().decode("utf-8", "replace")), path
    for db in tmp_path.rglob("*.duckdb"):
        con = duckdb.connect(str(db), read_only=True)
        try:
            columns = con.execute(
                "select table_name, column_name from information_schema.columns "
                "where table_schema = 'main' and data_type in ('VARCHAR', 'JSON') and table_name in "
                "(select table_name from information_schema.tables where table_type = 'BASE TABLE')"
            ).fetchall()
            assert len(columns) > 20
            for table, column in columns:
                hits = con.execute(
                    f'select count(*) from "{table}" where lower("{column}"::varchar) like \'%sentinel%\''  # noqa: S608
                ).fetchall()[0][0]
                assert hits == 0, (db.name, table, column)
        finally:
            con.close()
    # the link in the e-mail keeps its host and drops its credentials
    email = next(p for p in written if p.name == "email.html").read_text(encoding="utf-8")
    assert "https://***@finops.example.com/r/2024-W38/report.html" in email
