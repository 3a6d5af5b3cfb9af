"""The test run's one `wastewatch demo` (2026-W48, one week), built in a background process.

The `demo_dir` fixture (tests/conftest.py) reads what this writes. The build starts as soon as a test
process has collected a test that needs it (`start`), so it runs beside the other tests instead of
stalling the first worker that reaches a demo test. Run as `python -m tests.helpers.demo_build FOLDER`:
the demo goes to FOLDER/demo, the CLI's output to FOLDER/demo.output, and on failure the exit code and
output to FOLDER/demo.failed instead. The builder holds FOLDER/demo.lock until it exits; a reader takes
the same lock to wait for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import REPO

ARGS = ["demo", "--week", "2026-W48", "--weeks", "1"]


def build(shared: Path) -> str:
    """Run the demo in this process (the CLI's own entry point, as `CliRunner` calls it); its output."""
    from click.testing import CliRunner

    from pipelines.cli import main

    result = CliRunner().invoke(main, [*ARGS, "--dir", str(shared / "demo")])
    if result.exit_code != 0:
        (shared / "demo.failed").write_text(f"exit code {result.exit_code}\n{result.output}")
        raise SystemExit(1)
    (shared / "demo.output").write_text(result.output)
    return result.output


def start(shared: Path) -> None:
    """Start the build in a background process unless one was started; it inherits the held lock."""
    lock = open(shared / "demo.lock", "w")  # noqa: SIM115 - handed to the child, closed below
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        started = shared / "demo.started"
        if started.exists():
            return
        # through a shell that backgrounds the build and exits at once: the build is then no child of this
        # process, so its CPU time never lands in a test's (tests/plugins/cpu_budget.py counts the children
        # a test reaps, and Popen reaps finished children); the shell's pid is the build's process group
        launcher = subprocess.Popen(  # noqa: S603 - sh, this interpreter and a module of this repository
            ["/bin/sh", "-c", '"$0" -m tests.helpers.demo_build "$1" >"$2" 2>&1 &',
             sys.executable, str(shared), str(shared / "demo.log")],
            cwd=REPO,
            pass_fds=(lock.fileno(),),
            start_new_session=True,
        )  # fmt: skip
        launcher.wait()
        started.write_text(str(launcher.pid))
    finally:
        lock.close()  # the child's copy of the descriptor keeps the lock until the build ends


def wait(shared: Path) -> str | None:
    """Wait for a started build to end; its output, or None when no build was started or it failed."""
    with open(shared / "demo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        output = shared / "demo.output"
        return output.read_text() if output.exists() else None


def stop(shared: Path) -> None:
    """End a build that is still running (the test run ended before it did, e.g. interrupted)."""
    started = shared / "demo.started"
    if not started.exists() or (shared / "demo.output").exists() or (shared / "demo.failed").exists():
        return
    with contextlib.suppress(ProcessLookupError, ValueError):
        os.killpg(int(started.read_text()), signal.SIGTERM)


if __name__ == "__main__":
    build(Path(sys.argv[1]))
