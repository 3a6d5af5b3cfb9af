"""Run `dagster dev` as a real subprocess for a test, talk to its GraphQL API, and always clean it up.

`dagster dev` starts a process tree (itself, the webserver, the daemon, a code server and its gRPC
server). It is started in a new session, so the whole tree is one process group: stopping sends SIGINT
(Ctrl-C) to `dagster dev`, which shuts its services down, and whatever is still in the group afterwards
is killed. Nothing survives the test, pass or fail.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipelines.instance import prepare
from tests.helpers.paths import REPO


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group, read from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...; comm may contain spaces, so split after the last ')'
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _reset_signals() -> None:  # pragma: no cover - runs in the child between fork and exec
    # a shell that starts pytest in the background leaves SIGINT ignored; `dagster dev` needs it
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class DagsterDev:
    """`dagster dev -w workspace.yaml` on 127.0.0.1:<free port>, with its own DAGSTER_HOME and TMPDIR."""

    def __init__(
        self,
        workdir: Path,
        env: dict[str, str],
        cwd: Path = REPO,
        command: Callable[[int], list[str]] | None = None,
    ) -> None:
        self.workdir = workdir
        self.home = workdir / "dagster_home"
        self.tmp = workdir / "tmp"
        self.log_path = workdir / "dagster_dev.log"
        self.cwd = cwd
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DAGSTER_HOME": str(self.home),
            "TMPDIR": str(self.tmp),  # code-server sockets and temp workspace files land here
            # make deprecation warnings visible in the log (Python hides them outside __main__)
            "PYTHONWARNINGS": "default::DeprecationWarning,default::PendingDeprecationWarning",
            "NO_COLOR": "1",
            **env,
        }
        self.process: subprocess.Popen[bytes] | None = None
        # the command line for a port (default `dagster dev` itself; a test of `make dev` gives its own)
        self.command = command or (
            lambda port: (
                [sys.executable, "-m", "dagster", "dev", "-w", "workspace.yaml"]
                + ["-h", "127.0.0.1", "-p", str(port)]
            )
        )

    def __enter__(self) -> DagsterDev:
        self.home.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(parents=True, exist_ok=True)
        prepare(self.home)  # the instance settings the CLI and `make dev` write
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command(self.port),
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_reset_signals,
            )
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_ready(self, timeout: float = 180.0) -> dict[str, Any]:
        """Poll /server_info until the webserver answers; fail with the log if it dies or never does (180 s: it
        starts in about 10 s idle, but a 2-core machine at load 12 took over 60)."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"dagster dev exited with {self.process.returncode}:\n{self.log}")
            try:
                with urllib.request.urlopen(f"{self.url}/server_info", timeout=2) as r:
                    return json.loads(r.read())
            except (OSError, ValueError):
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"dagster dev did not answer within {timeout:.0f} s:\n{self.log}"
                    ) from None
                time.sleep(0.25)

    def get(self, path: str) -> tuple[int, str, str]:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=30) as r:
            return r.status, r.headers.get("content-type", ""), r.read().decode("utf-8", "replace")

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        req = urllib.request.Request(
            f"{self.url}/graphql", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                answer = json.loads(r.read())
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"GraphQL HTTP {exc.code}: {exc.read().decode(errors='replace')}") from None
        assert not answer.get("errors"), answer["errors"]
        return answer["data"]

    def stop(self, grace: float = 30.0) -> None:
        """Ctrl-C `dagster dev`, give its services `grace` seconds, then kill what is left of the group."""
        p = self.process
        if p is None:
            return
        pgid = p.pid  # start_new_session: the leader's pid is the group id
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGINT)
                p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        deadline = time.monotonic() + grace
        while group_members(pgid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if group_members(pgid):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if p.poll() is None:
            p.wait(timeout=10)
        deadline = time.monotonic() + 10
        while group_members(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
