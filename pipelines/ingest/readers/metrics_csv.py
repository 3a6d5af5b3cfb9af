"""A long-format metrics CSV (timestamp, entity columns, metric, value) -> gpu_samples, so any exporter's
dump (Prometheus/VictoriaMetrics CSV export, Datadog, a home-made logger) is read without code.

Columns are matched by name, ignoring case; the `columns` option maps gpu_samples names to the file's:
  ts (required), metric (required), value (required), host, instance_id, gpu_uuid, gpu_index, gpu_model,
  pod, namespace, container, mig_profile, mig_instance_id, job_id.
e.g. `columns: {ts: time, host: node, gpu_uuid: uuid, metric: name}`. Other columns are kept in `labels`
(normalised keys) and are part of what identifies an entity.

Metrics: the dcgm-exporter names of pipelines/catalog/dcgm_metrics.csv and gpu_samples' own column names
(util_pct, mem_used_mib, power_w, sm_active, ...) are understood; the `metrics` option adds or overrides
names: `{gpu_busy: util_pct, fb_bytes: {column: mem_used_mib, scale: 9.5367431640625e-07}}`. Rows of other
metrics are ignored. Lines are pivoted into one row per entity and timestamp.

Timestamps: ISO 8601 (local time in the `timezone` option, default UTC, unless they carry an offset) or
epoch seconds / milliseconds. Values: numbers; empty, NaN, Inf and DCGM sentinels are NULL. A line whose
timestamp or value cannot be read rejects the file naming its line and column. `host` (option) sets the
host of every row when the file has no host column; `metric` (option) names the one metric of a
single-metric file (timestamp, entity columns, value, and no metric column), e.g. `{metric: util_pct}`.
"""

from __future__ import annotations

from typing import Any
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
    line_with,
    quote_ident,
    quote_literal,
)
from pipelines.ingest.readers.dcgm import metric_catalog
from pipelines.sources.options import MetricsCsvOptions
from pipelines.warehouse import one, sql_text

ENTITY = (
    "host", "instance_id", "gpu_uuid", "gpu_index", "gpu_model", "pod", "namespace", "container", "mig_profile",
    "mig_instance_id", "job_id",
)  # fmt: skip
REQUIRED = ("ts", "metric", "value")
ALIASES = {"ts": ("ts", "timestamp", "time"), "metric": ("metric", "name", "__name__"), "value": ("value",)}
SAMPLE_COLUMNS = (
    "util_pct", "mem_util_pct", "mem_used_mib", "mem_free_mib", "mem_reserved_mib", "mem_total_mib", "power_w",
    "power_limit_w", "temperature_c", "sm_clock_mhz", "mem_clock_mhz", "sm_active", "sm_occupancy",
    "tensor_active", "dram_active", "gr_engine_active",
)  # fmt: skip


def metric_map(source_name: str, uri: str, option: Any) -> list[dict[str, object]]:
    """The catalogue, gpu_samples' own names, then the source's `metrics` option (which wins)."""
    out: dict[str, dict[str, object]] = {m["metric"]: dict(m) for m in metric_catalog()}  # type: ignore[misc]
    out.update({c: {"metric": c, "column_name": c, "scale": 1.0} for c in SAMPLE_COLUMNS})
    if option is None:
        return list(out.values())
    if not isinstance(option, dict):
        raise RejectedFile(
            uri, f"source {source_name!r}: `metrics` must map metric names to gpu_samples columns"
        )
    for name, spec in option.items():
        column, scale = (spec, 1.0) if isinstance(spec, str) else (spec.get("column"), spec.get("scale", 1.0))
        if column not in SAMPLE_COLUMNS:
            raise RejectedFile(
                uri,
                f"source {source_name!r}: metrics.{name}: {column!r} is not one of {list(SAMPLE_COLUMNS)}",
            )
        try:
            out[str(name)] = {"metric": str(name), "column_name": column, "scale": float(scale)}
        except (TypeError, ValueError):
            raise RejectedFile(
                uri, f"source {source_name!r}: metrics.{name}.scale must be a number"
            ) from None
    return list(out.values())


class MetricsCsvReader(PerFileBatch):
    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        opts = ctx.source.options_as(MetricsCsvOptions)
        name = ctx.source.name
        tz = opts.timezone
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise RejectedFile(file.uri, f"source {name!r}: unknown timezone {tz!r}") from None
        mapping = opts.columns
        if not isinstance(mapping, dict) or set(mapping) - set(REQUIRED) - set(ENTITY):
            raise RejectedFile(
                file.uri, f"source {name!r}: `columns` maps these names to the file's: {[*REQUIRED, *ENTITY]}"
            )
        metrics = metric_map(name, file.uri, opts.metrics)
        fixed = opts.metric.strip() if opts.metric else None
        if fixed is not None:
            if "metric" in mapping:
                raise RejectedFile(
                    file.uri,
                    f"source {name!r}: give either options.metric (one metric per file) or "
                    "options.columns.metric (a metric column), not both",
                )
            if fixed not in {str(m["metric"]) for m in metrics}:
                raise RejectedFile(
                    file.uri,
                    f"source {name!r}: options.metric {fixed!r} is not a metric wastewatch knows "
                    f"(one of {list(SAMPLE_COLUMNS)}, a DCGM name, or a name in options.metrics)",
                )
        if file.size == 0:
            raise RejectedFile(file.uri, "file is empty (0 bytes)")
        relation = "read_csv($path, header = true, all_varchar = true)"
        try:
            cur = con.execute(f"select * from {relation} limit 0", {"path": str(file.local_path)})  # noqa: S608 - identifiers only
            header = [d[0] for d in cur.description]
            cur.fetchall()
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot read: {duckdb_problem(exc)}") from None
        by_lower = {h.lower().strip(): h for h in header}
        where: dict[str, str] = {}
        for canon in (*REQUIRED, *ENTITY):
            if canon == "metric" and fixed is not None:
                continue  # every line is of the fixed metric; a column named `metric` is a label then
            wanted = mapping.get(canon)
            if wanted is not None:
                if str(wanted).lower() not in by_lower:
                    raise RejectedFile(
                        file.uri,
                        f"column {wanted!r} (options.columns.{canon}) is not in the header {header}",
                        line=1,
                    )
                where[canon] = by_lower[str(wanted).lower()]
                continue
            for alias in ALIASES.get(canon, (canon,)):
                if alias in by_lower:
                    where[canon] = by_lower[alias]
                    break
        missing = [c for c in REQUIRED if c not in where and not (c == "metric" and fixed is not None)]
        if missing:
            raise RejectedFile(
                file.uri,
                f"no {', '.join(missing)} column in the header {header} (see options.columns)",
                line=1,
            )
        if "host" not in where and not opts.host:
            raise RejectedFile(
                file.uri, "no host column and no `host` option: cannot tell which machine", line=1
            )
        used = set(where.values())
        extra = [h for h in header if h not in used]
        select = ["row_number() over () as _row"]
        select += [
            f"{quote_ident(where[c])}::varchar as {c}"
            if c in where
            else "$fixed_metric::varchar as metric"
            if c == "metric"
            else f"null::varchar as {c}"
            for c in (*REQUIRED, *ENTITY)
        ]
        entries = ", ".join(
            f"{{'key': normalize_tag_key({quote_literal(h)}), 'value': {quote_ident(h)}}}" for h in extra
        )
        select.append(
            f"map_from_entries(list_filter([{entries}], lambda e: nullif(trim(e.value), '') is not null))"
            if extra
            else "null::map(varchar, varchar)"
        )
        cte = f"with _src as (select {', '.join(select[:-1])}, {select[-1]} as labels from {relation})\n"  # noqa: S608 - identifiers only
        params: dict[str, object] = {"path": str(file.local_path)}
        if fixed is not None:  # DuckDB refuses a parameter the text does not use
            params["fixed_metric"] = fixed
        self._validate(con, cte, params, tz, where, file)
        stg = sql_text("staging", "stg_metrics_csv__gpu_samples")
        bind = {
            **params,
            "metrics": metrics,
            "tz": tz,
            "host": opts.host,
            "source_name": name,
            "source_file": file.uri,
            "file_id": ctx.file_id,
        }
        cte = cte.replace(
            "with _src as", "with _metrics as (select unnest($metrics, recursive := true)),\n_src as", 1
        )
        try:
            got = one(con, f"insert into gpu_samples by name\n{cte}select * from (\n{stg}\n)", bind)  # noqa: S608 - identifiers only, values are bound
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot load: {duckdb_problem(exc)}") from None
        ahead = ahead_of_clock(con, [ctx])
        if ahead is not None:
            # the first line of a metric the staging reads whose time is after the limit, as the staging reads it
            first = one(
                con,
                f"""{cte}select _row, epoch(sample_ts), ts from (
                    select _row, ts, coalesce(epoch_utc(try_cast(ts as double)), parse_utc(ts, $tz)) as sample_ts
                    from _src inner join _metrics as m on m.metric = trim(_src.metric)
                ) where sample_ts > $limit order by _row limit 1""",  # noqa: S608 - identifiers only, values are bound
                {**params, "metrics": metrics, "tz": tz, "limit": ahead.limit},
            )
            if first is None:
                raise ahead.refusal(file.uri)
            line, text = line_with(file, int(first[0]) + 1, str(first[2])) or (int(first[0]) + 1, None)
            raise ahead.refusal(file.uri, line, first[1], text)
        return LoadResult(rows=int(got[0]) if got else 0)

    @staticmethod
    def _validate(
        con: duckdb.DuckDBPyConnection,
        cte: str,
        params: dict[str, object],
        tz: str,
        where: dict[str, str],
        file: SourceFile,
    ) -> None:
        try:
            bad = one(
                con,
                f"""{cte}select _row, ts, value, metric,
                    case
                        when ts is null or (try_cast(ts as double) is null and parse_utc(ts, $tz) is null) then 'ts'
                        when nullif(trim(value), '') is not null and try_cast(trim(value) as double) is null then 'value'
                        when nullif(trim(metric), '') is null then 'metric'
                    end as problem
                from _src where problem is not null order by _row limit 1""",  # noqa: S608 - identifiers only, values are bound
                {**params, "tz": tz},
            )
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot read: {duckdb_problem(exc)}") from None
        if bad is None:
            return
        row, ts, value, _, problem = bad
        text = {
            "ts": f"expected an ISO 8601 time or epoch seconds, found {ts!r}",
            "value": f"value {value!r} is not a number",
            "metric": "empty metric name",
        }[problem]
        raise RejectedFile(file.uri, text, line=int(row) + 1, column=where.get(problem, problem))
