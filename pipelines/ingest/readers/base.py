"""What every reader shares: the reader interface, SQL quoting of file-derived identifiers, error text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

import duckdb

from pipelines.config import Config, Source
from pipelines.ingest.errors import RejectedFile
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


class Reader(Protocol):
    kind: str
    target_table: str

    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        """Insert the file's rows into `target_table` (inside the caller's transaction)."""
        ...


def quote_ident(name: str) -> str:
    """A column name read from a file header, quoted for SQL (never a value)."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    """A column name used as a JSON key in SQL text (never a data value)."""
    return "'" + text.replace("'", "''") + "'"


def check_options(source: Source, known: set[str], where: str | None = None) -> dict[str, Any]:
    """The source's options (a copy); RejectedFile against `where` (default: the source) for unknown keys."""
    unknown = set(source.options) - known
    if unknown:
        raise RejectedFile(
            where or source.uri,
            f"source {source.name!r}: unknown option(s) {sorted(unknown)}; known: {sorted(known)}",
        )
    return dict(source.options)


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


def src_cte(from_clause: str, columns: dict[str, str]) -> str:
    """`with _src as (...)`: numbered rows of the file with canonical column names as VARCHAR.

    `columns` maps canonical name -> SQL expression over the file's own columns (identifiers only).
    """
    select = ",\n        ".join(f"{expr} as {quote_ident(name)}" for name, expr in columns.items())
    return f"with _src as (\n    select row_number() over () as _row,\n        {select}\n    from {from_clause}\n)\n"  # noqa: S608 - identifiers only, values are bound
