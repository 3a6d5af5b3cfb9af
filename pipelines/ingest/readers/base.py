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

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import Config, Source
from pipelines.errors import FileFailed, RejectedFile
from pipelines.ingest.files import SourceFile


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
    def prepare(self, files: list[SourceFile], workdir: Path, threads: int) -> Any:
        """Start decompressing the delivery's compressed files, in load order."""


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
        without writing; pipelines/nothing_new.py). An API or a walk is read again on every run."""
        return f"source {source.name!r} ({source.kind}) is read whole on every run"


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
