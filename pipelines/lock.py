"""One writer per warehouse: a run-level lock file beside the DuckDB file, held for a whole run.

`<warehouse>.lock` holds the holder's pid, host, start time and command (JSON) while an exclusive
`flock` on it is held. Every writing run takes it (the CLI's ingest, evaluate, report, run, ack and demo;
Dagster runs through WastewatchResource), and `sql --live` takes it while it reads, so a reader waits for a
writer (or gives up) instead of holding DuckDB's file lock between two steps of a run and breaking it.

A process killed with the lock held loses its `flock` with it: the next taker finds the file, sees the
lock free (and the recorded pid gone), clears it and carries on. A taker that finds the lock held polls
until `wait` seconds have passed, then raises WarehouseBusy naming the holder. Taking the lock again in
the same process (the CLI holds it, then Dagster's resource asks for it) only counts a nesting level.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.errors import WarehouseBusy
from pipelines.failpoints import failpoint

DEFAULT_WAIT_S = 300.0
_POLL_S = 0.2


@dataclass
class _Held:
    fd: int
    depth: int


_held: dict[Path, _Held] = {}
_registry_lock = threading.Lock()


def lock_path(warehouse: Path) -> Path:
    """The lock file of a warehouse: `<name>.lock` beside it."""
    return warehouse.with_name(warehouse.name + ".lock")


def holder(warehouse: Path) -> dict[str, Any] | None:
    """What the lock file says about its holder (pid, host, started_at, command), or None."""
    try:
        text = lock_path(warehouse).read_text(encoding="utf-8")
        info = json.loads(text) if text.strip() else None
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    return True


def describe(info: dict[str, Any] | None) -> str:
    if not info:
        return "another process"
    text = f"pid {info.get('pid')}"
    if info.get("host"):
        text += f" on {info['host']}"
    if info.get("command"):
        text += f" ({info['command']})"
    if info.get("started_at"):
        text += f", since {info['started_at']}"
    return text


def _command() -> str:
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    return " ".join([name, *sys.argv[1:3]])[:120]


def _try_lock(path: Path) -> int | None:
    """An fd holding an exclusive flock on the current file at `path`, or None when another holds it."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        # the file may have been unlinked by its previous holder between our open and our flock
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


@contextmanager
def writer_lock(
    warehouse: Path, wait: float = DEFAULT_WAIT_S, notice: Any = None, role: str = "writer"
) -> Iterator[None]:
    """Hold the warehouse's run-level lock for the block; wait up to `wait` seconds for another holder.

    Raises WarehouseBusy (naming the holder's pid) when the wait runs out. `notice` (a callable taking a
    line) is told once that the run is waiting, and when a stale lock of a dead process is cleared.
    """
    key = Path(os.path.abspath(warehouse))
    with _registry_lock:
        held = _held.get(key)
        if held is not None:
            held.depth += 1
    if held is not None:
        try:
            yield
        finally:
            with _registry_lock:
                held.depth -= 1
        return
    key.parent.mkdir(parents=True, exist_ok=True)
    path = lock_path(key)
    deadline = time.monotonic() + max(0.0, wait)
    told = False
    while True:
        before = holder(key)
        fd = _try_lock(path)
        if fd is not None:
            break
        if time.monotonic() >= deadline:
            raise WarehouseBusy(
                f"{key}: held by another writer, {describe(holder(key))}; waited {wait:g} s "
                "(try again later, or give --wait SECONDS)",
                holder(key),
            )
        if notice and not told:
            notice(f"waiting up to {wait:g} s for the warehouse: held by {describe(before)}")
            told = True
        time.sleep(_POLL_S)
    try:
        if before and before.get("pid") and notice:
            pid = int(before["pid"])
            if before.get("host") != socket.gethostname() or not pid_alive(pid):
                notice(f"cleared a stale warehouse lock left by {describe(before)}")
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": role if role != "writer" else _command(),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode("utf-8"), 0)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        raise
    with _registry_lock:
        _held[key] = _Held(fd, 1)
    try:
        failpoint("lock.taken")
        yield
    finally:
        with _registry_lock:
            _held.pop(key, None)
        # unlink while still holding the flock: a waiter that opened the old file notices and retries
        try:
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)


def holds(warehouse: Path) -> bool:
    """Whether this process holds the warehouse's lock."""
    with _registry_lock:
        return Path(os.path.abspath(warehouse)) in _held
