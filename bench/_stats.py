"""Rounds of benchmark phases and their min / median / max: what every script in bench/ prints.

A benchmark runs its phases in rounds (`--repeat N`, default 3). Each round runs the reference phase(s)
first, then wastewatch's, then the next round starts, so a slow spell of the machine hits both sides
alike. Reported per phase (bench/README.md, "Reading the output"):

- its time: the median over the rounds, with the lowest and the highest in brackets, `9.3 s (9.1-9.8)`;
- its ratio to a reference: one ratio per round (the phase's time over the reference's in the same
  round), then their median, lowest and highest, `1.49x (1.41-1.52)`; not the ratio of two medians;
- its peak RSS: the highest of the rounds.

Used by scripts run as `python bench/<name>.py`, which puts bench/ on the import path.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_REPEAT = 3

Result = dict[str, Any]  # one phase's run: at least "seconds" and "peak_rss_mb"


def _at_least_one(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError("at least 1 round")
    return n


def add_repeat(parser: argparse.ArgumentParser) -> None:
    """The `--repeat N` flag every benchmark takes."""
    parser.add_argument(
        "--repeat",
        type=_at_least_one,
        default=DEFAULT_REPEAT,
        metavar="N",
        help=f"rounds of every phase, reference first, then wastewatch (default {DEFAULT_REPEAT}); "
        "prints the median, min and max over them (fewer than 3 leave the noise unjudged)",
    )


def run_code(what: str, code: str, *args: str) -> Result:
    """Run `code` in a fresh Python process with `args` and return the result it printed last (see
    phase_result); a failure stops the benchmark with the end of its stderr, naming `what` failed."""
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{what} failed:\n{out.stderr[-4000:]}")
    return phase_result(out.stdout)


def phase_result(stdout: str) -> Result:
    """The JSON object a phase's process printed last. DuckDB's progress bar (a query over 2 s) writes to
    the same stdout from C++, and under load its last line can land after the result's."""
    decoder = json.JSONDecoder()
    for line in reversed(stdout.splitlines()):
        start = line.find('{"')
        if start < 0:
            continue
        try:
            value, _ = decoder.raw_decode(line, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError(f"no JSON result in the phase's output: {stdout[-2000:]!r}")


@dataclass(frozen=True)
class Spread:
    """The lowest, the median and the highest of a few values (the median of an even count is the
    mean of the two middle ones, not one of them)."""

    low: float
    median: float
    high: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Spread:
        ordered = sorted(values)
        if not ordered:
            raise ValueError("no values to summarise")
        return cls(ordered[0], statistics.median(ordered), ordered[-1])

    def show(self, fmt: str = ".1f", unit: str = "") -> str:
        """`median unit (low-high)`, e.g. `9.3 s (9.1-9.8)`."""
        return f"{self.median:{fmt}}{unit} ({self.low:{fmt}}-{self.high:{fmt}})"


class Rounds:
    """Each round's result of each phase. Iterate over it to run the rounds:

    rounds = Rounds(args.repeat, ref="duckdb_scan")
    for _ in rounds:
        rounds.record("duckdb_scan", run_phase(...))
        rounds.record("wastewatch_ingest", run_phase(...))
    print(rounds.time("wastewatch_ingest"), rounds.ratio("wastewatch_ingest", "duckdb_scan"))
    """

    def __init__(self, repeat: int, ref: str | None = None, label: str = "") -> None:
        self.repeat = repeat
        self.ref = ref  # the reference the progress lines compare with
        self.label = label  # printed before every progress line, e.g. "[smi] "
        self.results: list[dict[str, Result]] = []

    def __iter__(self) -> Iterator[int]:
        for n in range(1, self.repeat + 1):
            self.results.append({})
            yield n

    def record(self, phase: str, result: Result, ref: str | None = None) -> Result:
        """Keep this round's `result` of `phase` and print a progress line: its time, its ratio to the
        reference (`ref`, else the one given to Rounds) when that ran earlier in the round, its peak RSS."""
        current = self.results[-1]
        current[phase] = result
        ref = ref or self.ref
        ratio = ""
        if ref and ref != phase and ref in current:
            ratio = f"  {result['seconds'] / current[ref]['seconds']:6.2f}x {ref}"
        print(
            f"{self.label}round {len(self.results)}/{self.repeat}  {phase:<26} {result['seconds']:8.2f} s"
            f"{ratio}  peak RSS {result['peak_rss_mb']:,.0f} MB",
            flush=True,
        )
        return result

    def each(self, value: Callable[[dict[str, Result]], float]) -> Spread:
        """The spread of a quantity computed from each round's results (e.g. a sum of phases)."""
        return Spread.of(value(r) for r in self.results)

    def values(self, phase: str, key: str = "seconds") -> list[float]:
        return [float(r[phase][key]) for r in self.results if phase in r]

    def last(self, phase: str) -> Result:
        """The last round's result of `phase` (for what does not vary between rounds: rows, findings)."""
        return next(r[phase] for r in reversed(self.results) if phase in r)

    def seconds(self, phase: str) -> Spread:
        return Spread.of(self.values(phase))

    def ratios(self, phase: str, ref: str) -> Spread:
        """The per-round ratios of `phase`'s time to `ref`'s (same round)."""
        return Spread.of(
            r[phase]["seconds"] / r[ref]["seconds"] for r in self.results if phase in r and ref in r
        )

    def time(self, phase: str, fmt: str = ".1f") -> str:
        return self.seconds(phase).show(fmt, " s")

    def ratio(self, phase: str, ref: str, fmt: str = ".2f") -> str:
        return self.ratios(phase, ref).show(fmt, "x")

    def peak(self, phase: str, key: str = "peak_rss_mb") -> str:
        """The highest peak of the rounds, in MB."""
        return f"{max(self.values(phase, key)):,.0f} MB"

    def rate(self, phase: str, rows: str = "rows") -> str:
        """Rows per second at the median time (its range follows the time's)."""
        seconds = self.seconds(phase).median
        return f"{self.last(phase)[rows] / seconds:,.0f}" if seconds else ""

    def legend(self) -> str:
        n = len(self.results)
        return (
            f"{n} round(s), reference first in each: times and ratios are median (min-max) over the rounds, "
            "a ratio taken round by round; peak RSS is the highest round's"
        )


def markdown(header: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1) -> str:
    """A Markdown table, its first `left` columns left-aligned and the others right-aligned."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * left + "---:|" * (len(header) - left)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
