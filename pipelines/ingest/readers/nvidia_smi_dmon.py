"""`nvidia-smi dmon -o DT` output -> gpu_samples.

Fixed-width columns under `#` header lines that repeat every so often (and may change when a capture
is restarted with other `-s` groups): every data line is read by the header line above it, by column
name, so any column set works. Read: Date+Time (local time: the `timezone` option, default UTC), gpu
(index), pwr (W), gtemp (C), sm (% -> util_pct), mem (% -> mem_util_pct), mclk/pclk (MHz), fb (MiB used).
`-` means unavailable (NULL). dmon names no UUID, model or total memory; those stay NULL.

The host is the `host` option, else `host_pattern` (a regex with a `host` group over the path), else
the file name up to its first `_` (`gpu-node-01_2026-11-30.txt` -> `gpu-node-01`).

A last line cut short (the capture was stopped while writing it) is skipped and counted in the load's
warnings; any other line that cannot be read rejects the file naming its line and column.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import (
    LoadContext,
    LoadResult,
    PerFileBatch,
    ahead_of_clock,
    duckdb_problem,
    line_text,
)
from pipelines.sources.nvidia_smi import host_from_path
from pipelines.sources.options import NvidiaSmiDmonOptions
from pipelines.warehouse import one, sql_text

LINES = (
    "read_csv($path, columns = {'line': 'VARCHAR'}, header = false, delim = '\x1f', quote = '', "
    "escape = '', auto_detect = false, null_padding = true)"
)


class NvidiaSmiDmonReader(PerFileBatch):
    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        opts = ctx.source.options_as(NvidiaSmiDmonOptions)
        tz = opts.timezone
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise RejectedFile(file.uri, f"source {ctx.source.name!r}: unknown timezone {tz!r}") from None
        if file.size == 0:
            raise RejectedFile(file.uri, "file is empty (0 bytes)")
        host = opts.host or host_from_path(file.relative, opts.host_pattern)
        if not host:
            raise RejectedFile(file.uri, "cannot tell the host: neither `host` nor `host_pattern` matched")
        temp = f"_dmon_{ctx.file_id}"
        cte = f"with _src as (select row_number() over () as _row, line from {LINES})\n"  # noqa: S608 - identifiers only
        bind = {
            "path": str(file.local_path),
            "tz": tz,
            "host": str(host),
            "source_name": ctx.source.name,
            "source_file": file.uri,
            "file_id": ctx.file_id,
        }
        stg = sql_text("staging", "stg_nvidia_smi_dmon__gpu_samples")
        try:
            con.execute(f"create or replace temp table {temp} as\n{cte}select * from (\n{stg}\n)", bind)  # noqa: S608 - identifiers only, values are bound
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot read: {duckdb_problem(exc)}") from None
        # the temp table is created inside the caller's transaction: a rejection rolls it back too
        warnings: list[str] = []
        last = one(con, f"select max(_row) from {temp}")  # noqa: S608 - identifiers only
        bad = one(con, f"select _row, _problem from {temp} where _problem is not null order by _row limit 1")  # noqa: S608 - identifiers only
        if bad is not None:
            row, problem = int(bad[0]), str(bad[1])
            if row == (last[0] if last else None) and problem.startswith("too few values"):
                warnings.append(f"line {row}: last line cut short, {problem}; skipped")
            else:
                head, sep, rest = problem.partition(": ")
                if sep and " " not in head:
                    raise RejectedFile(file.uri, rest, line=row, column=head)
                raise RejectedFile(file.uri, problem, line=row)
        try:
            count = one(
                con,
                f"insert into gpu_samples by name select * exclude (_row, _problem) from {temp} where _problem is null",  # noqa: S608 - identifiers only
            )
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot load: {duckdb_problem(exc)}") from None
        ahead = ahead_of_clock(con, [ctx])
        if ahead is not None:
            first = one(
                con,
                f"select _row, epoch(ts) from {temp} where _problem is null and ts > $limit order by _row limit 1",  # noqa: S608 - identifiers only
                {"limit": ahead.limit},
            )
            if first is None:
                raise ahead.refusal(file.uri)
            raise ahead.refusal(file.uri, int(first[0]), first[1], line_text(file, int(first[0])))
        con.execute(f"drop table {temp}")
        return LoadResult(rows=int(count[0]) if count else 0, warnings=warnings)
