"""What every reader shares: what a load returns and gets, SQL quoting of file-derived identifiers, error text.

One base class per way of ingesting, and the ingest loop picks the mode by class:
- `FileReader`: one file per transaction (`load`);
- `BatchReader`: many small files per transaction (`load_batch`; `PerFileBatch` and `PlannedBatch` build
  it from `load`, or from a per-file plan and one insert for the batch);
- `DeliveryReader`: billing exports, whose files arrive as deliveries that replace a billing period together
  (`plan`, `probe`, `prepare`, then `load` per file);
- `SourceReader`: a whole source at once, an API listing or a file-system walk (`load_source`).
"""

from __future__ import annotations

import gzip
import re
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import Config, Source
from pipelines.errors import FileFailed, RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.sources.options import ClockOptions
from pipelines.units import describe_duration
from pipelines.warehouse import rows, sql_text, utcnow


@dataclass
class LoadResult:
    rows: int
    billing_period: str | None = None
    billed_cost_sum: Decimal | None = None  # sums of what landed
    effective_cost_sum: Decimal | None = None
    warnings: list[str] = field(default_factory=list)
    # reconciliation (billing readers): what the file itself holds, counted from its own columns
    file_rows: int | None = None
    file_billed_cost_sum: Decimal | None = None
    file_effective_cost_sum: Decimal | None = None
    currencies: str | None = None  # billing currencies of the landed lines, comma-separated
    # whole-source readers: False when every snapshot the source offers is already loaded (nothing written)
    changed: bool = True


@dataclass(frozen=True)
class LoadContext:
    """Everything a reader needs besides the file: the source, the config, the ledger id and time."""

    source: Source
    config: Config
    file_id: str
    loaded_at: Any
    # billing deliveries: the decompressed copy of a .gz file (or why it could not be decompressed)
    prepared: Path | Exception | None = None
    period: str | None = None  # the delivery's billing period (YYYY-MM) when its layout names one
    probe: Any = None  # what the reader found opening the file before the transaction (billing readers)


class Reader(ABC):  # noqa: B024 - a marker base: each mode below declares its own abstract methods
    """Base of every reader. Its kind's registry line (pipelines/sources/registry.py) says which table it
    writes, which files it reads and which options it takes."""


class FileReader(Reader):
    """Loads one file at a time."""

    @abstractmethod
    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        """Insert the file's rows into the kind's table, inside the caller's transaction (which deleted the
        file's earlier rows first and records the outcome in the ledger after)."""


class BatchReader(FileReader):
    """Loads many small files of one source in one transaction (pipelines/ingest/modes/batched.py)."""

    batch_files = 500  # at most this many files per batch

    @abstractmethod
    def load_batch(
        self, con: duckdb.DuckDBPyConnection, files: list[SourceFile], ctxs: list[LoadContext]
    ) -> list[LoadResult]:
        """One result per file, in order; FileFailed(index) names a file that cannot load."""


class PerFileBatch(BatchReader):
    """`load_batch` for a reader whose files are loaded one statement each: the batch still shares one
    transaction (and one commit), and the load's warnings reach the run summary and the ledger."""

    def load_batch(
        self, con: duckdb.DuckDBPyConnection, files: list[SourceFile], ctxs: list[LoadContext]
    ) -> list[LoadResult]:
        results = []
        for i, (f, ctx) in enumerate(zip(files, ctxs, strict=True)):
            try:
                results.append(self.load(con, f, ctx))
            except RejectedFile as exc:
                raise FileFailed(i, exc) from None
        return results


class PlannedBatch(BatchReader):
    """A reader that checks each file into a plan (`_plan`, raising RejectedFile) and then lands the plans of
    a batch in one statement (`_insert`, raising FileFailed(index, cause) for a file it can name)."""

    @abstractmethod
    def _plan(self, file: SourceFile, ctx: LoadContext) -> Any: ...

    @abstractmethod
    def _insert(self, con: duckdb.DuckDBPyConnection, plans: list[Any]) -> list[LoadResult]: ...

    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        plan = self._plan(file, ctx)
        try:
            return self._insert(con, [plan])[0]
        except FileFailed as exc:
            assert isinstance(exc.cause, BaseException)
            raise exc.cause from None

    def load_batch(
        self, con: duckdb.DuckDBPyConnection, files: list[SourceFile], ctxs: list[LoadContext]
    ) -> list[LoadResult]:
        plans = []
        for i, (f, ctx) in enumerate(zip(files, ctxs, strict=True)):
            try:
                plans.append(self._plan(f, ctx))
            except RejectedFile as exc:
                raise FileFailed(i, exc) from None
        return self._insert(con, plans)


class DeliveryReader(FileReader):
    """Billing exports: files arrive as deliveries (the files a manifest lists, a billing period's folder)
    that replace a period of the source together (pipelines/ingest/modes/deliveries.py)."""

    @abstractmethod
    def plan(
        self, files: list[SourceFile], read_text: Callable[[SourceFile], str], options: Any
    ) -> tuple[list[Any], list[str]]:
        """The source's deliveries (newest version of each period) and notes for the run summary."""

    @abstractmethod
    def probe(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> Any:
        """Open the file and check its header before the delivery's transaction starts."""

    @abstractmethod
    def prepare(self, files: list[SourceFile], workdir: Path, threads: int, bounded: bool) -> Any:
        """Start decompressing the delivery's compressed files, in load order; `bounded`: the config sets
        DuckDB's memory_limit, so nothing is held in memory outside it."""


class SourceReader(Reader):
    """Reads a whole source at once (an API listing, a file-system walk); each run's rows replace the
    source's previous ones (unless `replaces_all` is False: the reader replaces what it read itself), and the
    ledger holds one row for the source."""

    replaces_all = True

    @abstractmethod
    def load_source(self, con: duckdb.DuckDBPyConnection, source: Source, ctx: LoadContext) -> LoadResult:
        """Insert the source's rows, inside the caller's transaction."""

    def pending(self, con: duckdb.DuckDBPyConnection, config: Config, source: Source) -> str | None:
        """Why a run would read the source again, or None when it holds nothing the warehouse lacks (found
        without writing; pipelines/transform/nothing_new.py). An API or a walk is read again on every run."""
        return f"source {source.name!r} ({source.kind}) is read whole on every run"


EPOCH = datetime(1970, 1, 1)

# -- samples dated ahead of the clock (docs/reliability.md "Telemetry dated ahead of the clock") ----------


@dataclass(frozen=True)
class AheadOfClock:
    """Samples of one file of a load dated more than its source's `max_clock_skew` after the clock at ingest.
    Times past the clock are epoch seconds: a misread one may lie past the year 9999 Python can hold."""

    index: int  # the file's place in the load
    samples: int  # how many of its samples are that far ahead
    first_s: float  # the earliest of them
    clock: datetime  # the clock at ingest (UTC)
    skew: str  # the source's max_clock_skew as written
    limit: datetime  # the clock plus the skew: a sample after it is ahead

    @property
    def limit_s(self) -> float:
        return (self.limit - EPOCH).total_seconds()

    def refusal(
        self, uri: str, line: int | None = None, at_s: float | None = None, seen: str | None = None
    ) -> RejectedFile:
        """The file's rejection: the first sample ahead the reader found (its line and text, or `seen` naming
        the series and point where a file has no lines to speak of), its time, and the remedy."""
        at = self.first_s if at_s is None else at_s
        clock_s = (self.clock - EPOCH).total_seconds()
        problem = (
            f"sample dated {_utc_text(at)}, {describe_duration(timedelta(seconds=at - clock_s))} ahead of the "
            f"clock at ingest ({self.clock:%Y-%m-%d %H:%M:%S} UTC), more than max_clock_skew = {self.skew}"
        )
        if seen:
            problem += f": {seen}"
        verb = "is" if self.samples == 1 else "are"
        remedy = "fix the host's clock (NTP) and write the file again, or raise the source's options.max_clock_skew"
        return RejectedFile(
            uri, f"{problem}; {self.samples:,} of its samples {verb} that far ahead: {remedy}", line=line
        )


def _utc_text(epoch_s: float) -> str:
    try:
        return f"{EPOCH + timedelta(seconds=epoch_s):%Y-%m-%d %H:%M:%S} UTC"
    except OverflowError:
        return f"{epoch_s:.0f} s after 1970 (past the year 9999)"


def ahead_of_clock(con: duckdb.DuckDBPyConnection, ctxs: list[LoadContext]) -> AheadOfClock | None:
    """The first file of a telemetry load (one source's files, their rows landed inside the load's
    transaction) holding samples dated more than the source's `max_clock_skew` after the clock at ingest
    (`loaded_at`), or None. Every telemetry reader asks this before its load returns and rejects the file it
    names, so the freshness check only ever measures from samples that passed it."""
    if not ctxs:
        return None
    source = ctxs[0].source
    # the ingest modes set loaded_at (utcnow() as the load starts); a reader called on its own may not
    clock = ctxs[0].loaded_at if isinstance(ctxs[0].loaded_at, datetime) else utcnow()
    opts = source.options_as(ClockOptions)
    limit = clock + opts.clock_skew()
    found = {
        r["file_id"]: r
        for r in rows(
            con,
            sql_text("checks", "telemetry_ahead_of_clock"),
            {"limit": limit, "ids": [c.file_id for c in ctxs]},
        )
    }
    for i, ctx in enumerate(ctxs):
        r = found.get(ctx.file_id)
        if r is not None:
            return AheadOfClock(i, int(r["samples"]), float(r["first_s"]), clock, opts.max_clock_skew, limit)
    return None


def epoch_seconds(n: float) -> float:
    """An epoch time in seconds or milliseconds, in seconds, as the SQL macro epoch_utc reads it (from 1e11
    on, milliseconds), for the readers that find a line in Python."""
    return n / 1000 if n >= 100_000_000_000 else n


def line_text(file: SourceFile, number: int, width: int = 120) -> str | None:
    """Line `number` (1-based) of a text file, decompressed, as a quoted excerpt for a message."""
    found = line_with(file, number, "")
    return found[1] if found else None


def line_with(file: SourceFile, start: int, needle: str, width: int = 120) -> tuple[int, str] | None:
    """The first line from line `start` on (1-based) that holds `needle`, and its quoted excerpt. A CSV
    reader's row number is a lower bound of the row's line (DuckDB skips blank lines): its text is found
    from there."""
    opener = gzip.open if file.compressed else open
    try:
        with opener(file.local_path, "rt", encoding="utf-8", errors="replace") as f:  # type: ignore[operator]
            for n, line in enumerate(f, 1):
                if n >= start and needle in line:
                    return n, repr(line.rstrip("\r\n")[:width])
    except (OSError, EOFError, zlib.error):
        return None
    return None


def quote_ident(name: str) -> str:
    """A column name read from a file header, quoted for SQL (never a value)."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    """A column name used as a JSON key in SQL text (never a data value)."""
    return "'" + text.replace("'", "''") + "'"


# the reasons DuckDB's CSV errors give after the offending line (which may span several lines)
_CSV_REASONS = re.compile(
    r"^(Expected Number of Columns|Value with unterminated quote|Maximum line size|Invalid unicode"
    r"|Line does not|Unterminated quote|Error when converting)"
)


def duckdb_problem(exc: Exception) -> str:
    """DuckDB's error without the SQL echo: the first line, minus its 'X Error:' prefix. A CSV error keeps
    its reason ("CSV Error on Line: 7: Expected Number of Columns: 3 Found: 4"), not the line's text, the
    fixes DuckDB suggests or the reader's options (which name the file as DuckDB opened it: a decompressed
    copy)."""
    lines = str(exc).strip().splitlines()
    first = lines[0] if lines else type(exc).__name__
    for prefix in ("IO Error: ", "Invalid Input Error: ", "Conversion Error: ", "Binder Error: "):
        if first.startswith(prefix):
            first = first[len(prefix) :]
            break
    if first.startswith("CSV Error on Line: "):
        reason = next((ln.strip() for ln in lines[2:] if _CSV_REASONS.match(ln.strip())), None)
        if reason:
            return f"{first}: {reason}"
    return first
