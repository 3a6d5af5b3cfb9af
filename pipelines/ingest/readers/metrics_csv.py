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
    quote_ident,
    quote_literal,
)
from pipelines.ingest.readers.dcgm import metric_catalog
from pipelines.ingest.readers.jobs_common import zone
from pipelines.ingest.readers.mapped_csv import MappedFile, match_header, read_csv
from pipelines.sources.mapped_csv import METRICS_CSV, SAMPLE_COLUMNS
from pipelines.sources.options import MetricsCsvOptions, MetricTarget
from pipelines.warehouse import one, sql_text


def metric_map(option: dict[str, MetricTarget] | None) -> list[dict[str, object]]:
    """The catalogue, gpu_samples' own names, then the source's `metrics` option (which wins; its columns and
    scales were checked when the config loaded)."""
    out: dict[str, dict[str, object]] = {m["metric"]: dict(m) for m in metric_catalog()}  # type: ignore[misc]
    out.update({c: {"metric": c, "column_name": c, "scale": 1.0} for c in SAMPLE_COLUMNS})
    for name, target in (option or {}).items():
        out[str(name)] = {"metric": str(name), "column_name": target.column, "scale": float(target.scale)}
    return list(out.values())


def _fixed_metric(
    source_name: str, uri: str, opts: MetricsCsvOptions, metrics: list[dict[str, object]]
) -> str | None:
    """The one metric of a single-metric source (`metric:`), checked against the metrics it knows."""
    fixed = opts.metric.strip() if opts.metric else None
    if fixed is None:
        return None
    if fixed not in {str(m["metric"]) for m in metrics}:
        raise RejectedFile(
            uri,
            f"source {source_name!r}: options.metric {fixed!r} is not a metric wastewatch knows "
            f"(one of {list(SAMPLE_COLUMNS)}, a DCGM name, or a name in options.metrics)",
        )
    return fixed


def _source_cte(mapped: MappedFile, relation: str) -> str:
    """`_src` as the staging SQL reads it: one row per line, the layout's columns as VARCHAR (a fixed metric
    as $fixed_metric), the other columns as a `labels` map (normalised keys)."""
    select = ["row_number() over () as _row"]
    for c in METRICS_CSV.names():
        if c in mapped.where:
            select.append(f"{quote_ident(mapped.name(c))}::varchar as {c}")
        else:
            select.append("$fixed_metric::varchar as metric" if c == "metric" else f"null::varchar as {c}")
    extra = [mapped.header[i] for i in mapped.extra()]
    entries = ", ".join(
        f"{{'key': normalize_tag_key({quote_literal(h)}), 'value': {quote_ident(h)}}}" for h in extra
    )
    labels = (
        f"map_from_entries(list_filter([{entries}], lambda e: nullif(trim(e.value), '') is not null))"
        if extra
        else "null::map(varchar, varchar)"
    )
    return f"with _src as (select {', '.join(select)}, {labels} as labels from {relation})\n"  # noqa: S608 - identifiers only


class MetricsCsvReader(PerFileBatch):
    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        opts = ctx.source.options_as(MetricsCsvOptions)
        zone(ctx.source.name, file.uri, opts.timezone)
        metrics = metric_map(opts.metrics)
        fixed = _fixed_metric(ctx.source.name, file.uri, opts, metrics)
        relation = "read_csv($path, header = true, all_varchar = true)"
        header, _ = read_csv(con, file, relation, data=False)
        mapped = match_header(file, METRICS_CSV, header, opts.columns, skip=("metric",) if fixed else ())
        if "host" not in mapped.where and not opts.host:
            raise RejectedFile(
                file.uri,
                "no host column and no `host` option: cannot tell which machine",
                line=mapped.line(-1),
            )
        cte = _source_cte(mapped, relation)
        params: dict[str, object] = {"path": str(file.local_path)}
        if fixed is not None:  # DuckDB refuses a parameter the text does not use
            params["fixed_metric"] = fixed
        self._validate(con, cte, params, opts.timezone, mapped)
        stg = sql_text("staging", "stg_metrics_csv__gpu_samples")
        bind = {
            **params,
            "metrics": metrics,
            "tz": opts.timezone,
            "host": opts.host,
            "source_name": ctx.source.name,
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
        self._ahead_of_clock(con, cte, {**params, "metrics": metrics, "tz": opts.timezone}, mapped, ctx)
        return LoadResult(rows=int(got[0]) if got else 0)

    @staticmethod
    def _ahead_of_clock(
        con: duckdb.DuckDBPyConnection,
        cte: str,
        params: dict[str, object],
        mapped: MappedFile,
        ctx: LoadContext,
    ) -> None:
        ahead = ahead_of_clock(con, [ctx])
        if ahead is None:
            return
        # the first line of a metric the staging reads whose time is after the limit, as the staging reads it
        first = one(
            con,
            f"""{cte}select _row, epoch(sample_ts) from (
                select _row, ts, coalesce(epoch_utc(try_cast(ts as double)), parse_utc(ts, $tz)) as sample_ts
                from _src inner join _metrics as m on m.metric = trim(_src.metric)
            ) where sample_ts > $limit order by _row limit 1""",  # noqa: S608 - identifiers only, values are bound
            {**params, "limit": ahead.limit},
        )
        if first is None:
            raise ahead.refusal(mapped.file.uri)
        line = mapped.line(int(first[0]) - 1)
        raise ahead.refusal(mapped.file.uri, line, first[1], line_text(mapped.file, line))

    @staticmethod
    def _validate(
        con: duckdb.DuckDBPyConnection,
        cte: str,
        params: dict[str, object],
        tz: str,
        mapped: MappedFile,
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
            raise RejectedFile(mapped.file.uri, f"cannot read: {duckdb_problem(exc)}") from None
        if bad is None:
            return
        row, ts, value, _, problem = bad
        text = {
            "ts": f"expected an ISO 8601 time or epoch seconds, found {ts!r}",
            "value": f"value {value!r} is not a number",
            "metric": "empty metric name",
        }[problem]
        raise mapped.rejected(int(row) - 1, problem, text)
