"""The JSON body of Prometheus' `/api/v1/query_range` (a matrix result; an instant `vector` works too)
for DCGM metrics -> gpu_samples.

Query every metric you want in one request, so that each response holds all of them for its samples,
e.g. `{__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_FB_FREE|DCGM_FI_DEV_POWER_USAGE"}`
with `step=60s`, chunked by time (Prometheus returns at most 11,000 points per series): series are
pivoted into one row per label set and timestamp within a file, the metric names and units as for the
`dcgm` reader (pipelines/catalog/dcgm_metrics.csv). Timestamps are float seconds (UTC); values are
strings; sentinels, NaN and Inf become NULL; gaps stay gaps (no rows), never zeros.

Labels as for `dcgm` (UUID, gpu, modelName, exported_pod/pod, ..., GPU_I_PROFILE, hpc_job; the rest in
`labels`). The host: the `host` option, the label named by `host_label`, `node`, `kubernetes_node`,
`Hostname`/`hostname` (unless the exporter pod's own name), the path through `host_pattern`, else
`instance` without its port. A response with `"status": "error"`, or not a query response, is rejected.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import (
    AheadOfClock,
    LoadContext,
    LoadResult,
    PerFileBatch,
    ahead_of_clock,
    duckdb_problem,
)
from pipelines.ingest.readers.dcgm import metric_catalog
from pipelines.sources.nvidia_smi import host_from_path
from pipelines.sources.options import PrometheusJsonOptions
from pipelines.warehouse import one, sql_text

COLUMNS = {
    "status": "VARCHAR",
    "error": "VARCHAR",
    "errorType": "VARCHAR",
    "data": 'STRUCT(resultType VARCHAR, result STRUCT(metric MAP(VARCHAR, VARCHAR), "values" JSON[], value JSON)[])',
}


class PrometheusJsonReader(PerFileBatch):
    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        opts = ctx.source.options_as(PrometheusJsonOptions)
        if file.size == 0:
            raise RejectedFile(file.uri, "file is empty (0 bytes)")
        params = {"path": str(file.local_path), "columns": COLUMNS}
        doc = "read_json($path, columns = $columns, format = 'auto', maximum_object_size = 1073741824)"
        try:
            head = one(con, f"select status, error, data.resultType, len(data.result) from {doc}", params)  # noqa: S608 - identifiers only
        except duckdb.Error as exc:
            raise RejectedFile(
                file.uri, f"not a Prometheus query response: {self._json_problem(file, exc)}"
            ) from None
        if head is None:
            raise RejectedFile(file.uri, "no JSON object in the file")
        status, error, result_type, _ = head
        if status != "success":
            raise RejectedFile(
                file.uri, f"the query failed (status {status!r}): {error or 'no error message'}"
            )
        if result_type not in ("matrix", "vector"):
            raise RejectedFile(
                file.uri, f"resultType {result_type!r}; expected a `matrix` (query_range) or `vector` result"
            )
        path_host = host_from_path(file.relative, opts.host_pattern) if opts.host_pattern else None
        cte = (
            "with _metrics as (select unnest($metrics, recursive := true)),\n"  # noqa: S608 - identifiers only
            f"_src as (select unnest(data.result, recursive := true) from {doc})\n"
        )
        bind = {
            **params,
            "metrics": list(metric_catalog()),
            "host": opts.host,
            "host_label": opts.host_label,
            "path_host": path_host,
            "source_name": ctx.source.name,
            "source_file": file.uri,
            "file_id": ctx.file_id,
        }
        stg = sql_text("staging", "stg_prometheus__gpu_samples")
        try:
            got = one(con, f"insert into gpu_samples by name\n{cte}select * from (\n{stg}\n)", bind)  # noqa: S608 - identifiers only, values are bound
        except duckdb.Error as exc:
            problem = duckdb_problem(exc)
            if "NOT NULL constraint" in problem and ".host" in problem:
                problem = (
                    "cannot tell the host of a series: no host label; set the source's `host` or `host_label`"
                )
            elif "NOT NULL constraint" in problem and ".ts" in problem:
                problem = 'a point without a numeric timestamp (expected [<seconds>, "<value>"])'
            raise RejectedFile(file.uri, problem) from None
        ahead = ahead_of_clock(con, [ctx])
        if ahead is not None:
            raise self._ahead_point(con, doc, params, file.uri, ahead)
        return LoadResult(rows=int(got[0]) if got else 0)

    @staticmethod
    def _ahead_point(
        con: duckdb.DuckDBPyConnection, doc: str, params: dict[str, object], uri: str, ahead: AheadOfClock
    ) -> RejectedFile:
        """The first point of a catalogue metric's series dated after the clock check's limit, named by its
        series (index and labels) and point index: a query response has no lines to speak of."""
        first = one(
            con,
            f"""with series as (
                select unnest(data.result) as s, generate_subscripts(data.result, 1) - 1 as i from {doc}
            ),
            points as (
                select
                    i,
                    s.metric as labels,
                    unnest(coalesce(s."values", [s.value])) as point,
                    generate_subscripts(coalesce(s."values", [s.value]), 1) - 1 as j
                from series
            )
            select i, j, labels, point::varchar, try_cast(json_extract(point, '$[0]') as double) as seconds
            from points
            where labels['__name__'] in (select unnest($names)) and seconds > $limit_s
            order by i, j
            limit 1""",  # noqa: S608 - identifiers only, values are bound
            {**params, "names": [str(m["metric"]) for m in metric_catalog()], "limit_s": ahead.limit_s},
        )
        if first is None:
            return ahead.refusal(uri)
        i, j, labels, point, seconds = first
        shown = ", ".join(f'{k}="{v}"' for k, v in list(labels.items())[:6])
        return ahead.refusal(uri, at_s=float(seconds), seen=f"series {i} {{{shown}}}, point {j}: {point}")

    @staticmethod
    def _json_problem(file: SourceFile, exc: duckdb.Error) -> str:
        """Python's JSON parser names the line and column DuckDB's message may not."""
        opener = gzip.open if file.compressed else open
        try:
            with opener(file.local_path, "rt", encoding="utf-8", errors="replace") as f:  # type: ignore[operator]
                json.loads(f.read())
        except json.JSONDecodeError as err:
            return f"{err.msg} at line {err.lineno}, column {err.colno}"
        except (OSError, EOFError, zlib.error) as err:
            if file.compressed:  # DuckDB could not inflate it either
                return f"the gzip stream is damaged or cut short ({err})"
        return re.sub(r"\s+", " ", duckdb_problem(exc))[:300]
