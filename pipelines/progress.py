"""Progress on long steps, for a person watching: a line as each step finishes, a counter while one runs.

The CLI turns it on (stderr, when stderr is a terminal or `--progress` is given; never with `--quiet`) for
the length of a command with `reporting(...)`; the work it watches (demo generation, ingestion, marts,
rules) calls `done` and `count` here, which do nothing when nobody reports, as in a Dagster run
launched by the daemon or a test. Lines are redacted: they name sources' files and folders.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from pipelines.redact import redact

# a counter is redrawn at most this often on a terminal, and written as a line at most this often elsewhere
_REDRAW_S = 0.5
_LINE_S = 10.0


class Progress:
    """Writes progress to `stream`; `live` (a terminal) redraws the counter in place with a carriage return."""

    def __init__(self, stream: TextIO, live: bool) -> None:
        self.stream = stream
        self.live = live
        self._shown = 0.0  # when the counter was last written
        self._counter = False  # a counter line is on screen, not yet ended
        self.state = ""  # what the running step is doing, for `ticking`
        self._lock = threading.Lock()

    def done(self, text: str) -> None:
        """One finished step: a line of its own (replacing the counter on a terminal)."""
        with self._lock:
            self._clear()
            self.stream.write(redact(text) + "\n")
            self.stream.flush()
            self._shown = 0.0

    def count(self, text: str) -> None:
        """The state of a running step (`files 12/80, 1,234,567 rows, 310,000 rows/s`), at a readable pace."""
        now = time.monotonic()
        with self._lock:
            if now - self._shown < (_REDRAW_S if self.live else _LINE_S):
                return
            self._shown = now
            if self.live:
                self.stream.write("\r\x1b[K" + redact(text))
                self._counter = True
            else:
                self.stream.write(redact(text) + "\n")
            self.stream.flush()

    def close(self) -> None:
        with self._lock:
            self._clear()

    def _clear(self) -> None:
        if self._counter:
            self.stream.write("\r\x1b[K")
            self._counter = False


_current: Progress | None = None


@contextmanager
def reporting(progress: Progress | None) -> Iterator[Progress | None]:
    """Report progress to `progress` (None: nowhere) for the length of the block."""
    global _current
    previous, _current = _current, progress
    try:
        yield progress
    finally:
        if progress is not None:
            progress.close()
        _current = previous


def done(text: str) -> None:
    """A finished step's line, when someone is watching."""
    if _current is not None:
        _current.done(text)


def count(text: str) -> None:
    """A running step's counter, when someone is watching."""
    if _current is not None:
        _current.count(text)


def count_files(name: str, done_files: int, total: int, rows: int, started: float) -> None:
    """A source's counter while its files load: `  gpu-nodes: 12/80 file(s), 1,234,567 rows, 310,000 rows/s`."""
    if _current is not None and total > 1:
        text = f"  {name}: {done_files}/{total} file(s), {rows:,} rows, {rate(rows, started, 'rows')}"
        _current.state = text
        _current.count(text)


@contextmanager
def ticking(label: str) -> Iterator[None]:
    """While the block runs, show its state (`label`, or the last `count_files`) with the seconds so far,
    at a readable pace: a large source loads its files in a few big batches, so the counter alone can sit
    still for a minute."""
    p = _current
    if p is None:
        yield
        return
    p.state = label
    stop = threading.Event()
    started = time.monotonic()

    def tick() -> None:
        while not stop.wait(_REDRAW_S if p.live else _LINE_S):
            p.count(f"{p.state} ... {time.monotonic() - started:.0f} s")

    thread = threading.Thread(target=tick, name="wastewatch-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def watching() -> bool:
    """Whether progress is reported (to skip the work of composing counters nobody sees)."""
    return _current is not None


def rate(amount: float, started: float, unit: str) -> str:
    """`amount` per second since `started` (a time.monotonic() reading), e.g. `310,000 rows/s`."""
    elapsed = time.monotonic() - started
    return f"{amount / elapsed:,.0f} {unit}/s" if elapsed > 0 else f"- {unit}/s"


def seconds(started: float) -> str:
    """The time since `started`, e.g. `12.3 s`."""
    return f"{time.monotonic() - started:.1f} s"
