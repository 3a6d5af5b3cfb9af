"""A Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics) -> gpu_hourly_stats.

The telemetry stays in the metrics store: instead of every raw sample, the reader asks `/api/v1/query_range`
at `step=1h` for the statistics the hourly marts need, computed by PromQL's `*_over_time` functions over
each hour's samples of the DCGM exporter's metrics (names and scales from pipelines/catalog/dcgm_metrics.csv,
as the `dcgm` reader maps them). One query per chunk returns every statistic, each series tagged by a
`ww_stat` label (`label_replace`), so a chunk is one request. Configure it as

    - {name: prom, kind: prometheus, uri: "https://prometheus.example:9090",
       options: {match: 'job="dcgm-exporter"', bearer_token_env: PROM_TOKEN}}

The hour [H, H + 1 h) is the range selector `[59m59s999ms]` evaluated at H + 1 h - 1 ms: Prometheus 2.x
includes both ends of a range, so a plain `[1h]` at H + 1 h would also count the sample scraped at exactly
H + 1 h, which the raw-sample roll-up puts in the next hour (3.x excludes the start: `[1h]` at the same
instant; `range_end` picks, auto from /api/v1/status/buildinfo). Timestamps are milliseconds, so no sample
falls between.

Chunks: at most `hours_per_query` hours per query, and the values of `series_label` (listed by
/api/v1/label/<name>/values for the chunk) `series_per_query` at a time. Each run replaces the hours it reads
for the source: [`start`, `end`) when set, else from `lookback` before the newest hour landed (the first
run: `history` before now) up to the last complete hour.

Credentials: `bearer_token_env`, or `username` + `password_env` (environment variables, never the config
file; a user:password in the URL works too), registered for redaction so that no message shows them. TLS:
`ca_file`, `insecure_skip_verify`. A connection error, a timeout, 429 or 5xx is retried `retries` times with
a doubling back-off (honouring Retry-After); a server that still cannot be reached, or refuses the
credentials, fails the source (`error: source '<name>': ...`, exit 1) and keeps its rows; a response that is
not a query result rejects the run's read naming the query and the problem.

Bounded reads (pipelines/net/limits.py): each answer must arrive whole within `timeout` seconds of its request
(also the longest wait for a byte) and be at most `max_response_mb` (default 128: a day of 4,000 GPUs at
step 1h is ~109 MB). A server that drips its answer, or sends a larger one, fails the source at once (not
retried), naming the URL, the limit and the option that moves it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
import pyarrow as pa

from pipelines.config import Source
from pipelines.errors import RejectedFile, SourceFailed
from pipelines.ingest.readers.base import (
    AheadOfClock,
    LoadContext,
    LoadResult,
    SourceReader,
    ahead_of_clock,
    duckdb_problem,
)
from pipelines.ingest.readers.dcgm import metric_catalog
from pipelines.net.limits import AnswerLimits, LimitHit, read_answer
from pipelines.redact import redact, remember
from pipelines.sources.options import PrometheusOptions
from pipelines.units import parse_duration
from pipelines.warehouse import one, sql_text

HOUR = timedelta(hours=1)
RETRY_STATUS = {429, 500, 502, 503, 504}
MAX_BACKOFF_S = 30.0
STAT_LABEL = "ww_stat"
# what else moves a limit of a query_range answer: a smaller query is smaller and quicker
_SPLIT = ", or lower hours_per_query or series_per_query to split the query"

# statistic -> (PromQL function of a range vector, the catalogue columns whose metrics it reads); the
# first column's metrics are used, else the next one's (SM activity falls back to graphics-engine activity)
STATS: dict[str, tuple[str, tuple[str, ...]]] = {
    "samples": ("count_over_time({r})", ("util_pct", "mem_used_mib", "power_w")),
    "util_samples": ("count_over_time({r})", ("util_pct",)),
    "util_sum": ("sum_over_time({r})", ("util_pct",)),
    "util_stddev": ("stddev_over_time({r})", ("util_pct",)),
    "util_p95": ("quantile_over_time(0.95, {r})", ("util_pct",)),
    "util_max": ("max_over_time({r})", ("util_pct",)),
    "mem_util_mean": ("avg_over_time({r})", ("mem_util_pct",)),
    "mem_util_max": ("max_over_time({r})", ("mem_util_pct",)),
    "mem_used_mean_mib": ("avg_over_time({r})", ("mem_used_mib",)),
    "mem_used_max_mib": ("max_over_time({r})", ("mem_used_mib",)),
    "mem_free_mean_mib": ("avg_over_time({r})", ("mem_free_mib",)),
    "mem_reserved_mean_mib": ("avg_over_time({r})", ("mem_reserved_mib",)),
    "mem_total_mib": ("max_over_time({r})", ("mem_total_mib",)),
    "power_mean_w": ("avg_over_time({r})", ("power_w",)),
    "power_max_w": ("max_over_time({r})", ("power_w",)),
    "power_limit_w": ("max_over_time({r})", ("power_limit_w",)),
    "sm_active_mean": ("avg_over_time({r})", ("sm_active", "gr_engine_active")),
    "sm_active_max": ("max_over_time({r})", ("sm_active", "gr_engine_active")),
    "tensor_active_mean": ("avg_over_time({r})", ("tensor_active",)),
    "tensor_active_max": ("max_over_time({r})", ("tensor_active",)),
}


def _escape_regex(value: str) -> str:
    """A label value as an RE2 literal inside a PromQL string."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", value).replace("\\", "\\\\").replace('"', '\\"')


def _selector(names: list[str], match: str | None, extra: str | None) -> str:
    matchers = ['__name__=~"' + "|".join(_escape_regex(n) for n in names) + '"']
    matchers += [m for m in (match, extra) if m]
    return "{" + ", ".join(matchers) + "}"


def build_query(match: str | None, extra: str | None, window: str) -> str:
    """One PromQL expression for every statistic: each a `*_over_time` over `window`, tagged by ww_stat."""
    by_column: dict[str, dict[float, list[str]]] = {}
    for m in metric_catalog():
        scale = float(str(m["scale"]))
        by_column.setdefault(str(m["column_name"]), {}).setdefault(scale, []).append(str(m["metric"]))
    parts = []
    for stat, (func, columns) in STATS.items():
        alternatives = []
        for column in columns:
            for scale, names in sorted(by_column.get(column, {}).items()):
                expr = func.format(r=f"{_selector(names, match, extra)}[{window}]")
                alternatives.append(expr if scale == 1 else f"({expr}) * {scale!r}")
        if stat in ("samples", "util_samples") or len(alternatives) > 1:
            body = " or ".join(f"({a})" for a in alternatives)
        else:
            body = alternatives[0]
        parts.append(f'label_replace({body}, "{STAT_LABEL}", "{stat}", "", "")')
    return "\n or ".join(parts)


@dataclass(frozen=True)
class _Client:
    base: str  # the server's base URL without credentials
    headers: dict[str, str]
    context: ssl.SSLContext | None
    opts: PrometheusOptions
    limits: AnswerLimits  # each answer whole within `timeout` s and at most `max_response_mb`

    def get(self, path: str, params: list[tuple[str, str]], what: str, post: bool = False) -> Any:
        """GET `path` (JSON), retrying what may pass; SourceFailed when the server cannot answer. With
        `post`, the parameters go form-encoded in the body (a long PromQL query would outgrow a URL that
        proxies accept; Prometheus, Thanos, Mimir and VictoriaMetrics take query_range by POST)."""
        encoded = urllib.parse.urlencode(params)
        url = self.base.rstrip("/") + path + ("" if post else "?" + encoded)
        body_out = encoded.encode() if post else None
        headers = (
            {**self.headers, "Content-Type": "application/x-www-form-urlencoded"} if post else self.headers
        )
        delay = self.opts.backoff
        attempts = self.opts.retries + 1
        for attempt in range(1, attempts + 1):
            request = urllib.request.Request(url, data=body_out, headers=headers)  # noqa: S310 - http(s) only
            retry_after: float | None = None
            started = time.monotonic()
            try:
                with urllib.request.urlopen(  # noqa: S310 - http(s) only, checked
                    request, timeout=self.opts.timeout, context=self.context
                ) as resp:
                    body = read_answer(resp, self.limits, started, url, resp.headers.get("Content-Length"))
                break
            except LimitHit as exc:  # too slow or too large: the same answer would be again, not retried
                split = _SPLIT if path == "/api/v1/query_range" else ""
                raise SourceFailed(f"{exc}{split} ({what})") from None
            except urllib.error.HTTPError as exc:
                # an error page too slow or too large to read is left unread: its status says enough
                try:
                    body = read_answer(exc, self.limits, started, url, exc.headers.get("Content-Length"))
                except (LimitHit, OSError):
                    body = b""
                if exc.code in RETRY_STATUS and attempt < attempts:
                    retry_after = _retry_after(exc.headers.get("Retry-After"))
                elif exc.code in (401, 403):
                    raise SourceFailed(
                        f"{self.base}: HTTP {exc.code} {exc.reason}: the server refused the credentials "
                        "(bearer_token_env, username/password_env)"
                    ) from None
                elif exc.code in RETRY_STATUS:
                    raise SourceFailed(
                        f"{self.base}: HTTP {exc.code} {exc.reason} after {attempts} attempt(s) ({what})"
                    ) from None
                else:  # 400 bad query, 422 cannot execute: the server says why in its JSON
                    raise RejectedFile(
                        self.base, f"{what}: HTTP {exc.code}: {_error_text(body) or exc.reason}"
                    ) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError, ssl.SSLError) as exc:
                if attempt == attempts:
                    reason = getattr(exc, "reason", exc)
                    raise SourceFailed(
                        f"{self.base}: cannot reach the server after {attempts} attempt(s): {reason}"
                    ) from None
            time.sleep(min(retry_after if retry_after is not None else delay, MAX_BACKOFF_S))
            delay = min(delay * 2, MAX_BACKOFF_S)
        try:
            doc = json.loads(body)
        except json.JSONDecodeError as exc:
            problem = f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
            raise RejectedFile(self.base, f"{what}: the response is not JSON: {problem}") from None
        except UnicodeDecodeError as exc:
            raise RejectedFile(self.base, f"{what}: the response is not UTF-8 JSON: {exc.reason}") from None
        if not isinstance(doc, dict) or doc.get("status") != "success":
            status = doc.get("status") if isinstance(doc, dict) else None
            error = doc.get("error") if isinstance(doc, dict) else None
            raise RejectedFile(
                self.base, f"{what}: the query failed (status {status!r}): {error or 'no error message'}"
            )
        return doc.get("data")


def _retry_after(value: str | None) -> float | None:
    try:
        return max(float(value), 0.0) if value else None
    except ValueError:
        return None


def _error_text(body: bytes) -> str | None:
    try:
        doc = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = body.decode("utf-8", "replace").strip()
        return text.splitlines()[0][:300] if text else None
    return str(doc.get("error")) if isinstance(doc, dict) and doc.get("error") else None


def _client(source: Source, opts: PrometheusOptions, ca_file: str | None) -> _Client:
    parts = urllib.parse.urlsplit(source.uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RejectedFile(
            redact(source.uri), "a prometheus source's uri is the server's http(s):// base URL"
        )
    headers = {"Accept": "application/json", "User-Agent": "wastewatch"}
    user, password = urllib.parse.unquote(parts.username or ""), urllib.parse.unquote(parts.password or "")
    netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
    if ":" in parts.hostname:  # IPv6 literal
        netloc = f"[{parts.hostname}]" + (f":{parts.port}" if parts.port else "")
    base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    if opts.bearer_token_env:
        token = os.environ.get(opts.bearer_token_env)
        if not token:
            raise SourceFailed(f"environment variable {opts.bearer_token_env} (bearer_token_env) is not set")
        remember(token)
        headers["Authorization"] = f"Bearer {token}"
    elif opts.username or user:
        if opts.password_env:
            password = os.environ.get(opts.password_env) or ""
            if not password:
                raise SourceFailed(f"environment variable {opts.password_env} (password_env) is not set")
        remember(password)
        creds = base64.b64encode(f"{opts.username or user}:{password}".encode()).decode()
        remember(creds)
        headers["Authorization"] = f"Basic {creds}"
    context = None
    if parts.scheme == "https":
        try:
            context = ssl.create_default_context(cafile=ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise SourceFailed(f"ca_file {ca_file}: {getattr(exc, 'strerror', None) or exc}") from None
        if opts.insecure_skip_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    return _Client(base, headers, context, opts, AnswerLimits.of(opts))


def _window(client: _Client) -> tuple[str, float]:
    """The range selector and the evaluation offset (seconds before the hour's end) covering [H, H + 1 h)."""
    mode = client.opts.range_end
    if mode == "auto":
        try:
            info = client.get("/api/v1/status/buildinfo", [], "GET /api/v1/status/buildinfo")
            major = int(str((info or {}).get("version", "2")).split(".")[0])
        except (RejectedFile, ValueError):  # Thanos, Mimir, VictoriaMetrics may not say: 2.x semantics
            major = 2
        mode = "exclusive" if major >= 3 else "inclusive"
    # inclusive (2.x): [t - 59m59.999s, t] at t = H + 1 h - 1 ms; exclusive (3.x): (t - 1 h, t], the same
    return ("59m59s999ms", 0.001) if mode == "inclusive" else ("1h", 0.001)


def _floor_hour(t: datetime) -> datetime:
    return t.replace(minute=0, second=0, microsecond=0)


def _naive_utc(t: datetime) -> datetime:
    return t.astimezone(UTC).replace(tzinfo=None) if t.tzinfo else t


def _epoch(t: datetime) -> float:
    return t.replace(tzinfo=UTC).timestamp()


def _chunks(first: datetime, end: datetime, hours: int) -> Iterator[tuple[datetime, datetime]]:
    t = first
    while t < end:
        nxt = min(t + hours * HOUR, end)
        yield t, nxt
        t = nxt


class PrometheusReader(SourceReader):
    # the reader replaces the hours it reads itself: earlier hours of the source stay
    replaces_all = False

    def load_source(self, con: duckdb.DuckDBPyConnection, source: Source, ctx: LoadContext) -> LoadResult:
        opts = source.options_as(PrometheusOptions)
        ca_file = str(ctx.config.resolve(opts.ca_file)) if opts.ca_file else None
        client = _client(source, opts, ca_file)
        first, end = self._span(con, source, opts, ctx)
        if first >= end:
            return LoadResult(rows=0, changed=False)
        window, before = _window(client)
        # each chunk's points go straight into a temporary table, the series' labels once each, so memory
        # holds one response at a time however long the span or large the fleet
        con.execute(
            "create or replace temp table _prom_points (series_id integer, hour timestamp, stat varchar, value double)"
        )
        series: dict[tuple[tuple[str, str], ...], int] = {}
        try:
            for lo, hi in _chunks(first, end, opts.hours_per_query):
                for extra in self._series_groups(client, opts, lo, hi):
                    query = build_query(opts.match, extra, window)
                    params = [
                        ("query", query),
                        ("start", f"{_epoch(lo + HOUR) - before:.3f}"),
                        ("end", f"{_epoch(hi) - before:.3f}"),
                        ("step", "3600"),
                    ]
                    what = f"query_range {lo:%Y-%m-%d %H:%M}..{hi:%Y-%m-%d %H:%M} UTC" + (
                        f" for {extra}" if extra else ""
                    )
                    data = client.get("/api/v1/query_range", params, what, post=True)
                    chunk = _points(data, what, before, client.base, series)
                    con.register("_prom_chunk", chunk)
                    con.execute("insert into _prom_points select * from _prom_chunk")
                    con.unregister("_prom_chunk")
            con.execute(
                "delete from gpu_hourly_stats where source = $s and hour >= $lo and hour < $hi",
                {"s": source.name, "lo": first, "hi": end},
            )
            if not series:
                return LoadResult(
                    rows=0, warnings=[f"no series in {first:%Y-%m-%d %H:%M}..{end:%Y-%m-%d %H:%M} UTC"]
                )
            labels = pa.table(
                {
                    "series_id": pa.array(list(series.values()), pa.int32()),
                    "labels": pa.array([list(k) for k in series], pa.map_(pa.string(), pa.string())),
                }
            )
            con.register("_prom_series", labels)
            stg = sql_text("staging", "stg_prometheus__gpu_hourly_stats")
            got = one(
                con,
                f"insert into gpu_hourly_stats by name\nselect * from (\n{stg}\n)",  # noqa: S608 - our SQL file
                {
                    "host": opts.host,
                    "host_label": opts.host_label,
                    "scrape_interval": opts.scrape_interval,
                    "source_name": source.name,
                    "source_file": client.base,
                    "file_id": ctx.file_id,
                },
            )
            ahead = ahead_of_clock(con, [ctx])
            if ahead is not None:
                raise _ahead_hour(con, client.base, series, ahead)
        except duckdb.Error as exc:
            problem = duckdb_problem(exc)
            if "NOT NULL constraint" in problem and ".host" in problem:
                problem = (
                    "cannot tell the host of a series: no host label; set the source's `host` or `host_label`"
                )
            raise RejectedFile(client.base, problem) from None
        finally:
            with contextlib.suppress(duckdb.Error):
                con.unregister("_prom_series")
            con.execute("drop table if exists _prom_points")
        return LoadResult(rows=int(got[0]) if got else 0)

    @staticmethod
    def _span(
        con: duckdb.DuckDBPyConnection, source: Source, opts: PrometheusOptions, ctx: LoadContext
    ) -> tuple[datetime, datetime]:
        """The hours this run reads: [first, end), whole UTC hours, the last one complete."""
        now = (
            _naive_utc(ctx.loaded_at)
            if isinstance(ctx.loaded_at, datetime)
            else _naive_utc(datetime.now(UTC))
        )
        end = _floor_hour(min(_naive_utc(opts.end), now) if opts.end else now)
        if opts.start:
            return _floor_hour(_naive_utc(opts.start)), end
        newest = one(con, "select max(hour) from gpu_hourly_stats where source = $s", {"s": source.name})
        if newest and newest[0] is not None:
            return _floor_hour(newest[0] + HOUR - parse_duration(opts.lookback)), end
        return _floor_hour(end - parse_duration(opts.history)), end

    @staticmethod
    def _series_groups(
        client: _Client, opts: PrometheusOptions, lo: datetime, hi: datetime
    ) -> Iterator[str | None]:
        """Matchers that split a chunk by series: groups of `series_label` values (None: one query for all)."""
        names = [str(m["metric"]) for m in metric_catalog() if m["column_name"] == "util_pct"]
        label = opts.series_label
        data = client.get(
            f"/api/v1/label/{urllib.parse.quote(label, safe='')}/values",
            [
                ("match[]", _selector(names, opts.match, None)),
                ("start", f"{_epoch(lo):.3f}"),
                ("end", f"{_epoch(hi):.3f}"),
            ],
            f"label values of {label!r}",
        )
        values = sorted(str(v) for v in data) if isinstance(data, list) else []
        if len(values) <= opts.series_per_query:
            yield None
            return
        for i in range(0, len(values), opts.series_per_query):
            group = values[i : i + opts.series_per_query]
            yield f'{label}=~"' + "|".join(_escape_regex(v) for v in group) + '"'


def _ahead_hour(
    con: duckdb.DuckDBPyConnection,
    where: str,
    series: dict[tuple[tuple[str, str], ...], int],
    ahead: AheadOfClock,
) -> RejectedFile:
    """The rejection of a read whose answers hold an hour after the clock check's limit (a server or proxy
    that answered outside the range asked), naming the first such hour's series and statistic."""
    first = one(
        con,
        "select series_id, stat, epoch(hour) from _prom_points where hour > $limit order by hour, series_id limit 1",
        {"limit": ahead.limit},
    )
    if first is None:
        return ahead.refusal(where)
    labels = next(k for k, v in series.items() if v == first[0])
    shown = ", ".join(f'{k}="{v}"' for k, v in labels[:6])
    return ahead.refusal(where, at_s=float(first[2]), seen=f"the hour of series {{{shown}}} ({first[1]})")


def _points(
    data: Any, what: str, before: float, where: str, series: dict[tuple[tuple[str, str], ...], int]
) -> pa.Table:
    """The matrix result as (series id, hour, stat, value) columns, new label sets added to `series`; a
    malformed result names what is wrong."""
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        got = data.get("resultType") if isinstance(data, dict) else type(data).__name__
        raise RejectedFile(where, f"{what}: expected a matrix result, got {got!r}")
    result = data.get("result")
    if not isinstance(result, list):
        raise RejectedFile(where, f"{what}: the response has no `result` list")
    ids: list[int] = []
    hours: list[datetime] = []
    stats: list[str] = []
    values: list[float] = []
    for i, one_series in enumerate(result):
        metric = one_series.get("metric") if isinstance(one_series, dict) else None
        points = one_series.get("values") if isinstance(one_series, dict) else None
        if not isinstance(metric, dict) or not isinstance(points, list) or STAT_LABEL not in metric:
            raise RejectedFile(
                where, f"{what}: series {i} has no `metric` labels with {STAT_LABEL} or no `values`"
            )
        stat = str(metric[STAT_LABEL])
        key = tuple((str(k), str(v)) for k, v in sorted(metric.items()) if k != STAT_LABEL and v != "")
        sid = series.setdefault(key, len(series))
        for point in points:
            try:
                ts, value = float(point[0]), float(point[1])
            except (TypeError, ValueError, IndexError):
                raise RejectedFile(
                    where, f'{what}: series {i} ({stat}): point {point!r} is not [<seconds>, "<value>"]'
                ) from None
            ids.append(sid)
            hours.append(datetime.fromtimestamp(round(ts + before) - 3600, UTC).replace(tzinfo=None))
            stats.append(stat)
            values.append(value)
    return pa.table(
        {
            "series_id": pa.array(ids, pa.int32()),
            "hour": pa.array(hours, pa.timestamp("us")),
            "stat": pa.array(stats, pa.string()),
            "value": pa.array(values, pa.float64()),
        }
    )
