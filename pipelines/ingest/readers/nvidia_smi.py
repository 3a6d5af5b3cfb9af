"""`nvidia-smi --query-gpu=... --format=csv` output -> gpu_samples.

Accepts `csv`, `csv,noheader` and `csv,nounits` in any field order, with `, ` (nvidia-smi's own) or `,`
separators. With a header, fields are matched by name (units like ` [MiB]` ignored); without one, the
source's `fields` option gives the --query-gpu list (default: pipelines/sources/nvidia_smi.py DEFAULT_FIELDS). Values may carry units
(`77.14 W`); `[N/A]`, `[Not Supported]`, `[Unknown Error]` and similar become NULL. Header lines repeated
by appended captures are skipped. Timestamps are local time without a zone: the `timezone` option
(default UTC) says which. A last line cut short (no newline at the end and too few fields: the capture
was killed while writing) is skipped and counted in the load's warnings; any other unreadable timestamp
rejects the file naming its line.

The host comes from, in order: the `host` option, a `host`/`hostname` column, the `host_pattern` option
(a regex with a named group `host`, matched against the path relative to the source's uri), or the file
name up to its first `_` (or its extension): `gpu-node-01_2026-11-23.csv` -> `gpu-node-01`.

Speed: one pass (read, parse, insert in one statement; no regular expressions), over many files at
once: the ledger hands new files over in batches (pipelines/ingest/modes/batched.py), and files of
the same layout are read by one `read_csv` over all of them. A bad timestamp or a short line aborts the
statement naming its file; only then is that file scanned again to name the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import duckdb

from pipelines.errors import FileFailed, RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import (
    AheadOfClock,
    LoadContext,
    LoadResult,
    PlannedBatch,
    ahead_of_clock,
    duckdb_problem,
    line_with,
    quote_ident,
)
from pipelines.sources import nvidia_smi
from pipelines.sources.nvidia_smi import CANONICAL
from pipelines.sources.options import NvidiaSmiOptions
from pipelines.warehouse import one, sql_root, sql_text

TS_FORMAT_HINT = "a timestamp like 2026/11/30 01:42:29.348"
ERROR_MARK = "wastewatch: unreadable timestamp"
SHORT_MARK = "wastewatch: line with too few values"


def cut_last_line(path: Path, compressed: bool, fields: int, delim: str) -> str | None:
    """The file's last line when it is cut short (no newline after it and fewer than `fields` values)."""
    if compressed:
        return None  # a truncated gzip stream fails to read anyway
    with path.open("rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - 65536))
        tail = f.read()
    if not tail or tail.endswith(b"\n"):
        return None
    last = tail.rsplit(b"\n", 1)[-1].decode("utf-8", errors="replace")
    return last if len(last.split(delim)) < fields else None


@dataclass(frozen=True)
class _Plan:
    """How to read one file: its layout (files with the same layout are read in one statement)."""

    file: SourceFile
    ctx: LoadContext
    names: tuple[str, ...]
    delim: str
    has_header: bool
    mapping: tuple[tuple[str, str], ...]  # canonical column -> c<i>
    fixed_host: str | None
    cut: str | None  # the last line, when it is cut short

    @property
    def layout(self) -> tuple[object, ...]:
        return (self.names, self.delim, self.has_header, self.mapping, self.file.compressed)


class NvidiaSmiReader(PlannedBatch):
    # -- planning: options, header, layout ------------------------------------------------------------

    def _plan(self, file: SourceFile, ctx: LoadContext) -> _Plan:
        opts = ctx.source.options_as(NvidiaSmiOptions)
        tz = opts.timezone
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise RejectedFile(file.uri, f"source {ctx.source.name!r}: unknown timezone {tz!r}") from None
        if file.size == 0:
            raise RejectedFile(file.uri, "file is empty (0 bytes)")
        try:
            first = file.first_line()
        except (OSError, EOFError) as exc:
            raise RejectedFile(file.uri, f"cannot read: {exc}") from None
        shape = nvidia_smi.layout(file.uri, first, opts, file.relative)
        try:
            cut = cut_last_line(file.local_path, file.compressed, len(shape.names), shape.delim)
        except OSError as exc:
            raise RejectedFile(file.uri, f"cannot read: {exc}") from None
        return _Plan(
            file, ctx, shape.names, shape.delim, shape.has_header, shape.mapping, shape.fixed_host, cut
        )

    # -- loading: one statement per layout -----------------------------------------------------------

    @staticmethod
    def _from_clause(plan: _Plan) -> str:
        return (
            f"read_csv($paths, header = {str(plan.has_header).lower()}, all_varchar = true, delim = $delim, "
            "quote = '', escape = '', null_padding = true, auto_detect = false, columns = $columns, "
            "filename = '_path')"
        )

    def _insert(self, con: duckdb.DuckDBPyConnection, plans: list[_Plan]) -> list[LoadResult]:
        groups: dict[tuple[object, ...], list[_Plan]] = {}
        for plan in plans:
            groups.setdefault(plan.layout, []).append(plan)
        stg = sql_text("staging", "stg_nvidia_smi__gpu_samples")
        index = {p.ctx.file_id: i for i, p in enumerate(plans)}
        tz = str(plans[0].ctx.source.options_as(NvidiaSmiOptions).timezone)
        for group in groups.values():
            p0 = group[0]
            mapping = dict(p0.mapping)
            last = f"c{len(p0.names) - 1}"
            # nvidia-smi separates with `, `; a file with bare `,` may pad values with spaces: trim them here
            raw = {c: (f"trim({v})" if p0.delim == "," else v) for c, v in mapping.items()}
            exprs = {c: raw.get(c, "null::varchar") for c in CANONICAL}
            # a line with too few values (null-padded) stops the insert, like an unreadable timestamp; in a
            # file whose last line is cut short, such lines are skipped instead
            exprs["ts"] = (
                f"case when {last} is null and not f.cut then error('{SHORT_MARK} [file_id=' || f.file_id || ']')"
                f"::varchar else {exprs['ts']} end"
            )
            select = ",\n        ".join(f"{expr} as {quote_ident(c)}" for c, expr in exprs.items())
            cte = (
                "with _files as (select unnest($files, recursive := true)),\n"  # noqa: S608 - identifiers only
                f"_src as (\n    select\n        {select},\n"
                "        f.host as _fixed_host, f.uri as _source_file, f.file_id as _file_id\n"
                f"    from {self._from_clause(p0)} as r\n"
                "    inner join _files as f on f.path = r._path\n"
                f"    where not (f.cut and {last} is null)\n)\n"
            )
            files = [
                {"path": str(p.file.local_path), "uri": p.file.uri, "file_id": p.ctx.file_id,
                 "host": p.fixed_host, "cut": p.cut is not None}
                for p in group
            ]  # fmt: skip
            bind = {
                "paths": [f["path"] for f in files],
                "files": files,
                "columns": {f"c{i}": "VARCHAR" for i in range(len(p0.names))},
                "delim": p0.delim,
                "tz": tz,
                "source_name": p0.ctx.source.name,
            }
            try:
                sql = f"insert into gpu_samples by name\n{cte}select * from (\n{stg}\n)"  # noqa: S608 - identifiers only
                con.execute(sql, bind).fetchall()
            except duckdb.Error as exc:
                text = str(exc)
                m = re.search(r"\[file_id=([0-9a-f]+)\]", text)
                if m and m.group(1) in index and (ERROR_MARK in text or SHORT_MARK in text):
                    plan = plans[index[m.group(1)]]
                    raise FileFailed(index[plan.ctx.file_id], self._bad_line(con, plan, tz)) from None
                if len(plans) == 1:
                    raise RejectedFile(plans[0].file.uri, f"cannot load: {duckdb_problem(exc)}") from None
                raise
        ahead = ahead_of_clock(con, [p.ctx for p in plans])
        if ahead is not None:
            raise FileFailed(ahead.index, self._ahead_line(con, plans[ahead.index], tz, ahead))
        counts = dict(
            con.execute(
                "select x_file_id, count(*) from gpu_samples where x_file_id in (select unnest($ids)) group by 1",
                {"ids": list(index)},
            ).fetchall()
        )
        results = []
        for p in plans:
            warnings = []
            if p.cut is not None:
                warnings.append(
                    f"last line cut short ({len(p.cut.split(p.delim))} of {len(p.names)} fields); skipped"
                )
            results.append(LoadResult(rows=int(counts.get(p.ctx.file_id, 0)), warnings=warnings))
        return results

    def _ahead_line(
        self, con: duckdb.DuckDBPyConnection, plan: _Plan, tz: str, ahead: AheadOfClock
    ) -> RejectedFile:
        """The first line of a file whose sample is dated more than max_clock_skew after the clock, as the
        staging reads its time (the transaction is still open: its rows are rolled back by the caller)."""
        ts = f"trim({dict(plan.mapping)['ts']})"
        found = one(
            con,
            f"select _row, epoch(ts), raw from (select row_number() over () as _row, {ts} as raw, coalesce("  # noqa: S608 - identifiers only, values are bound
            f"local_utc(nvidia_smi_time({ts}), $tz), parse_utc({ts}, $tz)) as ts from {self._from_clause(plan)}) "
            "where ts > $limit order by _row limit 1",
            {
                "paths": [str(plan.file.local_path)],
                "columns": {f"c{i}": "VARCHAR" for i in range(len(plan.names))},
                "delim": plan.delim,
                "tz": tz,
                "limit": ahead.limit,
            },
        )
        if found is None:
            return ahead.refusal(plan.file.uri)
        line = int(found[0]) + (1 if plan.has_header else 0)
        line, text = line_with(plan.file, line, str(found[2])) or (line, None)
        return ahead.refusal(plan.file.uri, line, found[1], text)

    def _bad_line(self, con: duckdb.DuckDBPyConnection, plan: _Plan, tz: str) -> RejectedFile:
        """The slow path: the first short line or unreadable timestamp of one file, as a RejectedFile.

        Runs in a fresh cursor: the caller's transaction is aborted by the failed insert.
        """
        ts, last = dict(plan.mapping)["ts"], f"c{len(plan.names) - 1}"
        cur = con.cursor()
        try:
            cur.execute("set TimeZone = 'UTC'")
            for path in sorted((sql_root() / "macros").glob("*.sql")):
                cur.execute(path.read_text(encoding="utf-8"))
            bad = one(
                cur,
                f"select _row, ts, short from (select row_number() over () as _row, {ts} as ts, "  # noqa: S608 - identifiers only, values are bound
                f"{last} is null as short from {self._from_clause(plan)}) where ts is distinct from 'timestamp' "
                "and (short or coalesce(nvidia_smi_time(ts), parse_utc(ts, $tz)) is null) "
                "order by _row limit 1",
                {
                    "paths": [str(plan.file.local_path)],
                    "columns": {f"c{i}": "VARCHAR" for i in range(len(plan.names))},
                    "delim": plan.delim,
                    "tz": tz,
                },
            )
        finally:
            cur.close()
        if bad is None:
            return RejectedFile(plan.file.uri, "cannot load: a timestamp or line could not be read")
        line = int(bad[0]) + (1 if plan.has_header else 0)
        if bad[2]:
            return RejectedFile(
                plan.file.uri,
                f"too few values (expected {len(plan.names)}): the line is cut short",
                line=line,
            )
        return RejectedFile(
            plan.file.uri, f"expected {TS_FORMAT_HINT}, found {bad[1]!r}", line=line, column="timestamp"
        )
