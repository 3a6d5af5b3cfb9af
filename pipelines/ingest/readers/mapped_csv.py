"""The one reader of the column-mapped CSV kinds (jobs_csv, hosts_csv, metrics_csv).

What a kind's file may hold is its layout (pipelines/sources/mapped_csv.py, named by the kind's registry
line). This module does what every such kind shares: open the file with DuckDB (delimiter, quoting and
header sniffed), find each layout column in the header (the `columns:` option's name, else the column's name
or an alias, ignoring case; a column serves one field), type each row's values, fill empty ones from the
options the layout names, and reject the file at the first bad value naming its file, line, column and value.
A kind adds how its typed rows become rows of its table (`MappedRows.row`, `MappedRows.insert`); metrics_csv,
whose files can be large, types them in SQL and uses only the opening and the line numbers.

`columns:` and `states:` are checked when the config loads (pipelines/sources/options.py), not per file.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, LoadResult, PerFileBatch, duckdb_problem
from pipelines.ingest.readers.hostlist import HostlistError, expand_hostlist
from pipelines.ingest.readers.jobs_common import ISO_HINT, generic_state, parse_time, zone
from pipelines.sources.mapped_csv import JOB_STATES, Layout, Parse
from pipelines.sources.options import Options
from pipelines.sources.registry import source_kind

# -- opening a file and finding the layout's columns -----------------------------------------------------


def layout_of(kind: str) -> Layout:
    """The layout the kind's registry line names."""
    layout = source_kind(kind).layout
    if layout is None:
        raise KeyError(f"{kind} is not a column-mapped kind")
    return layout


def record_lines(file: SourceFile, upto: int) -> list[int]:
    """The line (1-based) each CSV record starts on, the header first, through data record `upto` (0-based).
    DuckDB skips blank lines and a quoted value may span lines, so a record's ordinal is not its line."""
    starts: list[int] = []
    quoted = False
    opener = gzip.open if file.compressed else open
    try:
        with opener(file.local_path, "rt", encoding="utf-8", errors="replace", newline="") as f:  # type: ignore[operator]
            for n, line in enumerate(f, 1):
                if not quoted and line.strip("\r\n"):
                    starts.append(n)
                    if len(starts) > upto + 1:
                        break
                quoted ^= line.count('"') % 2 == 1
    except (OSError, EOFError, zlib.error):
        pass
    return starts


@dataclass(frozen=True)
class MappedFile:
    """A file of a column-mapped kind, its header matched to the kind's layout."""

    file: SourceFile
    layout: Layout
    header: tuple[str, ...]
    where: dict[str, int]  # layout column -> its place in the header

    def name(self, column: str) -> str:
        """The file's name of a layout column (the layout's name when the file has no such column)."""
        i = self.where.get(column)
        return self.header[i] if i is not None else column

    def extra(self) -> list[int]:
        """The places of the header's columns no layout column took (tags or labels)."""
        used = set(self.where.values())
        return [i for i in range(len(self.header)) if i not in used]

    def line(self, index: int) -> int:
        """The line data record `index` (0-based, as DuckDB numbers them) starts on."""
        starts = record_lines(self.file, index)
        return starts[index + 1] if len(starts) > index + 1 else index + 2

    def rejected(self, index: int, column: str, problem: str) -> RejectedFile:
        return RejectedFile(self.file.uri, problem, line=self.line(index), column=self.name(column))


def _header_line(file: SourceFile) -> int:
    starts = record_lines(file, -1)
    return starts[0] if starts else 1


def match_header(
    file: SourceFile,
    layout: Layout,
    header: tuple[str, ...],
    mapping: dict[str, str],
    skip: tuple[str, ...] = (),
) -> MappedFile:
    """Find each layout column (but `skip`) in the header: the file's column `columns:` names, else the first
    of its name and aliases no other column took. RejectedFile when a mapped or required column is missing."""
    by_lower = {h.lower().strip(): i for i, h in enumerate(header)}
    where: dict[str, int] = {}
    columns = [c for c in layout.columns if c.name not in skip]
    for c in columns:
        wanted = next((mapping[k] for k in layout.option_names(c.name) if mapping.get(k)), None)
        if wanted is None:
            continue
        if str(wanted).lower().strip() not in by_lower:
            problem = f"column {wanted!r} (options.columns.{c.name}) is not in the header {list(header)}"
            raise RejectedFile(file.uri, problem, line=_header_line(file))
        where[c.name] = by_lower[str(wanted).lower().strip()]
    for c in columns:
        found = (by_lower[a] for a in (c.name, *c.aliases) if a in by_lower)
        i = next((i for i in found if i not in where.values()), None)
        if c.name not in where and i is not None:
            where[c.name] = i
    missing = [c for c in layout.required if c not in where and c not in skip]
    if missing:
        problem = f"no {', '.join(missing)} column in the header {list(header)} (see options.columns)"
        raise RejectedFile(file.uri, problem, line=_header_line(file))
    return MappedFile(file, layout, header, where)


def read_csv(
    con: duckdb.DuckDBPyConnection, file: SourceFile, relation: str, data: bool = True
) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """The header and (when `data`) the rows of `relation` (a read_csv of `$path`, all VARCHAR)."""
    if file.size == 0:
        raise RejectedFile(file.uri, "file is empty (0 bytes)")
    query = f"select * from {relation}" + ("" if data else " limit 0")  # noqa: S608 - identifiers only
    try:
        cur = con.execute(query, {"path": str(file.local_path)})
        header = tuple(d[0] for d in cur.description)
        return header, cur.fetchall()
    except duckdb.Error as exc:
        raise RejectedFile(file.uri, f"cannot read: {duckdb_problem(exc)}") from None


# -- typing values -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Typing:
    """What typing a value needs besides its text: the source's timezone and `states:`."""

    tz: ZoneInfo
    states: dict[str, str] = field(default_factory=dict)


def whole(text: str) -> int:
    """`8` or `8.0` -> 8; ValueError otherwise."""
    t = text.strip()
    if not re.fullmatch(r"\d+(\.0+)?", t):
        raise ValueError(f"expected a whole number, found {text!r}")
    return int(float(t))


def words(text: str) -> list[str]:
    return [p for p in re.split(r"[\s;,]+", text.strip()) if p]


def _time(text: str, typing: Typing) -> Any:
    try:
        return parse_time(text, typing.tz)
    except ValueError:
        raise ValueError(f"expected {ISO_HINT}, found {text!r}") from None


def _hosts(text: str, _: Typing) -> list[str]:
    try:
        return expand_hostlist(text)
    except HostlistError as exc:
        raise ValueError(f"bad host list: {exc}") from None


def _json_object(text: str, _: Typing) -> dict[str, str]:
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"tags is not a JSON object: {exc.msg}") from None
    if not isinstance(parsed, dict):
        raise ValueError("tags is not a JSON object")
    return {str(k): str(v) for k, v in parsed.items() if v is not None}


def _job_state(text: str, typing: Typing) -> str:
    state = generic_state(text, typing.states)
    if state is None:
        raise ValueError(
            f"unknown job state {text!r}; map it with options.states (to one of {', '.join(JOB_STATES)})"
        )
    return state


PARSERS: dict[Parse, Callable[[str, Typing], Any]] = {
    "text": lambda text, _: text,
    "time": _time,
    "whole": lambda text, _: whole(text),
    "wholes": lambda text, _: [whole(w) for w in words(text)],
    "words": lambda text, _: words(text),
    "hosts": _hosts,
    "json_object": _json_object,
    "job_state": _job_state,
}


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


@dataclass(frozen=True)
class Typed:
    """One row of a file, typed: `values` by layout column (None when empty), `raw` their trimmed text, `tags`
    the row's JSON tags plus the file's other columns."""

    index: int
    values: dict[str, Any]
    raw: dict[str, str | None]
    tags: dict[str, str]


def typed_rows(
    mapped: MappedFile, data: list[tuple[Any, ...]], typing: Typing, defaults: dict[str, Any]
) -> list[Typed]:
    """Every row typed; RejectedFile at the first empty required value or unreadable value."""
    layout, extra = mapped.layout, mapped.extra()
    out = []
    for n, values in enumerate(data):
        raw = {c: _text(values[i]) for c, i in mapped.where.items()}
        for c in layout.required:
            if raw.get(c) is None:
                raise mapped.rejected(n, c, f"empty {c.replace('_', ' ')}")
        typed = {c.name: _typed(mapped, n, c.name, c.parse, raw.get(c.name), typing) for c in layout.columns}
        for c in layout.columns:
            if c.default is not None and typed[c.name] in (None, []) and defaults.get(c.default):
                typed[c.name] = _typed(mapped, n, c.name, c.parse, str(defaults[c.default]), typing)
        tags = dict(typed.pop("tags", None) or {})
        for i in extra:
            text = _text(values[i])
            if text is not None:
                tags.setdefault(mapped.header[i], text)
        out.append(Typed(n, typed, raw, tags))
    return out


def _typed(
    mapped: MappedFile, index: int, column: str, parse: Parse, text: str | None, typing: Typing
) -> Any:
    if text is None:
        return None
    try:
        return PARSERS[parse](text, typing)
    except ValueError as exc:
        raise mapped.rejected(index, column, str(exc)) from None


class MappedRows(PerFileBatch):
    """A column-mapped kind whose files are small enough to type in Python row by row (jobs, hosts): a kind
    says how a typed row becomes a row of its table and how the rows are inserted."""

    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        kind = source_kind(ctx.source.kind)
        opts = kind.options.model_validate(ctx.source.options)
        layout = layout_of(kind.name)
        options = opts.model_dump()
        typing = Typing(
            zone(ctx.source.name, file.uri, options["timezone"]), dict(options.get("states") or {})
        )
        # null_padding: a short line's missing values are empty (a line with more values rejects the file)
        header, data = read_csv(
            con, file, "read_csv($path, header = true, all_varchar = true, null_padding = true)"
        )
        mapped = match_header(file, layout, header, options["columns"])
        rows = [self.row(t, opts) for t in typed_rows(mapped, data, typing, options)]
        return LoadResult(rows=self.insert(con, rows, file, ctx, opts) if rows else 0)

    @abstractmethod
    def row(self, typed: Typed, opts: Options) -> dict[str, Any]:
        """The row of the kind's table (as its staging SQL reads `_src`) a typed row stands for."""

    @abstractmethod
    def insert(
        self,
        con: duckdb.DuckDBPyConnection,
        rows: list[dict[str, Any]],
        file: SourceFile,
        ctx: LoadContext,
        opts: Options,
    ) -> int:
        """Insert the rows through the kind's staging SQL; how many landed."""
