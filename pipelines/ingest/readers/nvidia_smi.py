"""`nvidia-smi --query-gpu=... --format=csv` output -> gpu_samples.

Accepts `csv`, `csv,noheader` and `csv,nounits` in any field order. With a header, fields are matched by
name (units like ` [MiB]` ignored); without one, the source's `fields` option gives the --query-gpu list
(default: DEFAULT_FIELDS). Values may carry units (`77.14 W`); `[N/A]`, `[Not Supported]` and similar
become NULL. Timestamps are local time without a zone: the `timezone` option (default UTC) says which.

The host comes from, in order: the `host` option, a `host`/`hostname` column, the `host_pattern` option
(a regex with a named group `host`, matched against the path relative to the source's uri), or the file
name up to its first `_` (or its extension): `gpu-node-01_2026-11-23.csv` -> `gpu-node-01`.
"""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import duckdb

from pipelines.ingest.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, LoadResult, duckdb_problem, src_cte
from pipelines.warehouse import one, sql_text

# the --query-gpu list assumed for files without a header (the one the README recommends)
DEFAULT_FIELDS = (
    "timestamp", "name", "pci.bus_id", "uuid", "index", "utilization.gpu", "utilization.memory",
    "memory.total", "memory.used", "memory.free", "power.draw", "power.limit", "temperature.gpu",
    "clocks.current.sm", "clocks.current.memory", "pstate",
)  # fmt: skip

# nvidia-smi field name (and renames across driver versions) -> canonical column of _src
FIELD_MAP = {
    "timestamp": "ts",
    "name": "gpu_model",
    "gpu_name": "gpu_model",
    "pci.bus_id": "pci_bus_id",
    "uuid": "gpu_uuid",
    "gpu_uuid": "gpu_uuid",
    "index": "gpu_index",
    "utilization.gpu": "util_pct",
    "utilization.memory": "mem_util_pct",
    "memory.total": "mem_total_mib",
    "memory.used": "mem_used_mib",
    "power.draw": "power_w",
    "power.draw.average": "power_w",
    "power.draw.instant": "power_w",
    "power.limit": "power_limit_w",
    "enforced.power.limit": "power_limit_w",
    "temperature.gpu": "temperature_c",
    "clocks.sm": "sm_clock_mhz",
    "clocks.current.sm": "sm_clock_mhz",
    "clocks.mem": "mem_clock_mhz",
    "clocks.current.memory": "mem_clock_mhz",
    "pstate": "pstate",
    "host": "host",
    "hostname": "host",
}
CANONICAL = (
    "ts", "host", "gpu_model", "pci_bus_id", "gpu_uuid", "gpu_index", "util_pct", "mem_util_pct",
    "mem_total_mib", "mem_used_mib", "power_w", "power_limit_w", "temperature_c", "sm_clock_mhz",
    "mem_clock_mhz", "pstate",
)  # fmt: skip
OPTIONS = {"timezone", "host", "host_pattern", "fields"}


def field_key(header: str) -> str:
    """`utilization.gpu [%]` -> `utilization.gpu`."""
    return re.sub(r"\s*\[[^\]]*\]\s*$", "", header.strip()).strip().lower()


def host_from_path(relative: str, pattern: str | None) -> str | None:
    if pattern:
        m = re.search(pattern, relative)
        return m.group("host") if m and m.groupdict().get("host") else None
    name = relative.replace("\\", "/").rsplit("/", 1)[-1]
    name = re.sub(r"(\.(csv|txt|log))?(\.gz)?$", "", name, flags=re.IGNORECASE)
    return name.split("_", 1)[0] or None


class NvidiaSmiReader:
    kind = "nvidia_smi"
    target_table = "gpu_samples"

    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        opts = ctx.source.options
        unknown = set(opts) - OPTIONS
        if unknown:
            raise RejectedFile(
                file.uri,
                f"source {ctx.source.name!r}: unknown option(s) {sorted(unknown)}; known: {sorted(OPTIONS)}",
            )
        tz = str(opts.get("timezone", "UTC"))
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
        first_fields = [field_key(f) for f in first.split(",")]
        has_header = "timestamp" in first_fields or any(
            f in FIELD_MAP and f != "name" for f in first_fields[:3]
        )
        path = str(file.local_path)
        if has_header:
            names = first_fields
            from_clause = (
                "read_csv($path, header = true, all_varchar = true, delim = ',', quote = '', "
                "null_padding = true, columns = $columns)"
            )
        else:
            fields = opts.get("fields", list(DEFAULT_FIELDS))
            names = [field_key(f) for f in fields]
            if len(first.split(",")) != len(names):
                raise RejectedFile(
                    file.uri,
                    f"no header line and {len(first.split(','))} values per line, but the source's `fields` "
                    f"option lists {len(names)} fields; set `fields` to the --query-gpu list used",
                    line=1,
                )
            from_clause = (
                "read_csv($path, header = false, all_varchar = true, delim = ',', quote = '', "
                "null_padding = true, columns = $columns)"
            )
        # positional names c0..cN: headers may repeat or contain characters awkward in SQL
        columns = {f"c{i}": "VARCHAR" for i in range(len(names))}
        mapping: dict[str, str] = {}
        for i, name in enumerate(names):
            canonical = FIELD_MAP.get(name)
            if canonical and canonical not in mapping:
                mapping[canonical] = f"trim(c{i})"
        if "ts" not in mapping or "util_pct" not in mapping or not ({"gpu_uuid", "gpu_index"} & set(mapping)):
            need = [f for f, c in (("timestamp", "ts"), ("utilization.gpu", "util_pct")) if c not in mapping]
            if not ({"gpu_uuid", "gpu_index"} & set(mapping)):
                need.append("uuid or index")
            raise RejectedFile(file.uri, f"missing required field(s) {', '.join(need)}", line=1)
        fixed_host = opts.get("host") or (
            None if "host" in mapping else host_from_path(file.relative, opts.get("host_pattern"))
        )
        if "host" not in mapping and not fixed_host:
            raise RejectedFile(
                file.uri,
                "cannot tell the host: no host column, and neither `host` nor `host_pattern` matched",
            )
        for name in CANONICAL:
            mapping.setdefault(name, "null::varchar")
        cte = src_cte(from_clause, mapping)
        params = {"path": path, "columns": columns}
        try:
            bad = one(
                con,
                f"{cte}select min(_row) filter (where ts is null or parse_utc(ts, $tz) is null), "  # noqa: S608 - identifiers only, values are bound
                "count(*) from _src where lower(ts) is distinct from 'timestamp'",
                {**params, "tz": tz},
            )
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot read: {duckdb_problem(exc)}") from None
        assert bad is not None
        if bad[0] is not None:
            value = one(con, f"{cte}select ts from _src where _row = $row", {**params, "row": bad[0]})  # noqa: S608 - identifiers only, values are bound
            raise RejectedFile(
                file.uri,
                f"expected a timestamp like 2026/11/30 01:42:29.348, found {value[0] if value else None!r}",
                line=bad[0] + (1 if has_header else 0),
                column="timestamp",
            )
        stg = sql_text("staging", "stg_nvidia_smi__gpu_samples")
        bind = {
            **params,
            "tz": tz,
            "host": fixed_host,
            "source_name": ctx.source.name,
            "source_file": file.uri,
            "file_id": ctx.file_id,
        }
        try:
            con.execute(f"insert into gpu_samples by name\n{cte}select * from (\n{stg}\n)", bind)  # noqa: S608 - identifiers only, values are bound
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot load: {duckdb_problem(exc)}") from None
        return LoadResult(rows=int(bad[1]))
