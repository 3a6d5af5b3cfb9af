"""The `prometheus` source: hourly statistics asked of a real Prometheus equal the raw-sample roll-up of the
same samples (GPU x hour), and the client's promises (auth, retries, errors that name the query, no secret
printed). Prometheus is Debian's package (tests/helpers/prometheus_server.py); without it the server tests
skip, unless WASTEWATCH_REQUIRE_PROMETHEUS=1."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import load_config
from pipelines.ingest import IngestReport, ingest
from pipelines.ingest.readers.prometheus import build_query
from pipelines.transform.build import build_intermediate, build_mart
from pipelines.warehouse import rows
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.prometheus_server import (
    FIRST_HOUR,
    HOURS,
    Sample,
    canned_api,
    fleet_series,
    matrix,
    scrape_text,
    self_signed_cert,
    start_prometheus,
)

JOBS = (
    "job_id,user,team,state,started_at,ended_at,hosts,gpus,gpu_indices,tags\n"
    "j1,ann,nlp,COMPLETED,2026-11-30 01:20:00,2026-11-30 02:20:00,gpu-node-b,1,,\n"
)
WINDOW = f"start: '{FIRST_HOUR:%Y-%m-%dT%H:%M:%SZ}', end: '2026-11-30T{HOURS:02d}:00:00Z'"
GPU_MARTS = ("resources", "cost_hourly", "gpu_job_hours", "gpu_hours")  # what gpu_hours is built from
COMPARED = (
    "samples", "util_mean", "util_max", "util_stddev", "mem_used_mean_mib",
    "mem_used_max_mib", "mem_total_mib", "power_mean_w", "power_max_w",
)  # fmt: skip


def _gpu_hours(project: Path, sources: str) -> tuple[IngestReport, list[dict[str, Any]]]:
    write_config(project, "sources:\n" + sources)
    config = load_config(project / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        report = ingest(con, config)
        build_intermediate(con)
        for mart in GPU_MARTS:
            build_mart(con, mart)
        return report, rows(con, "select * from gpu_hours order by gpu_id, hour")
    finally:
        con.close()


def _p95(values: list[float]) -> float:
    """Type-7 quantile (linear between the samples around rank 0.95 x (n - 1)): quantile_cont's method."""
    xs = sorted(values)
    rank = 0.95 * (len(xs) - 1)
    low = int(rank)
    return xs[low] + (xs[min(low + 1, len(xs) - 1)] - xs[low]) * (rank - low)


def _utils(samples: list[Sample], uuid: str, start: datetime, end: datetime) -> list[float]:
    lo, hi = start.replace(tzinfo=UTC).timestamp() * 1000, end.replace(tzinfo=UTC).timestamp() * 1000
    return [
        s.value
        for s in samples
        if s.metric == "DCGM_FI_DEV_GPU_UTIL" and ("UUID", uuid) in s.labels and lo <= s.ts_ms < hi
    ]


def test_hourly_statistics_equal_the_raw_sample_roll_up(tmp_path: Path) -> None:
    """Both paths, with a job on gpu-node-b from 01:20 to 02:20: every statistic of every GPU-hour agrees
    except the p95 of the two hours the job cuts, where the raw path takes the larger of its slices' p95
    and the hourly path the hour's (docs/telemetry.md)."""
    samples = fleet_series()
    sources = "  - {name: slurm, kind: jobs_csv, uri: jobs/}\n"
    for project in (tmp_path / "raw", tmp_path / "pushed"):
        (project / "jobs").mkdir(parents=True)
        (project / "jobs" / "jobs.csv").write_text(JOBS, encoding="utf-8")
    raw_dir = tmp_path / "raw"
    (raw_dir / "dcgm").mkdir(parents=True)
    (raw_dir / "dcgm" / "fleet_20261130.prom").write_text(scrape_text(samples), encoding="utf-8")
    raw_report, raw = _gpu_hours(raw_dir, sources + "  - {name: scrapes, kind: dcgm, uri: dcgm/}\n")
    assert not raw_report.rejected and not raw_report.failures, raw_report.summary()

    with start_prometheus(tmp_path / "prom", samples) as url:
        # two hosts, one per query; three hours per query: the chunks meet inside the window
        options = f"{{{WINDOW}, series_per_query: 1, hours_per_query: 3}}"
        report, pushed = _gpu_hours(
            tmp_path / "pushed",
            sources + f"  - {{name: prom, kind: prometheus, uri: '{url}', options: {options}}}\n",
        )
    assert not report.rejected and not report.failures, report.summary()
    assert report.rows_into("gpu_hourly_stats") == 3 * HOURS

    assert len(raw) == 3 * HOURS + 1  # three GPUs, four hours; the sample at 04:00:00.000 is the fifth hour's
    raw = [r for r in raw if r["hour"] < datetime(2026, 11, 30, HOURS)]
    assert [(r["gpu_id"], r["hour"]) for r in pushed] == [(r["gpu_id"], r["hour"]) for r in raw]
    cut = {("gpu-node-b", datetime(2026, 11, 30, 1)), ("gpu-node-b", datetime(2026, 11, 30, 2))}
    for got, want in zip(pushed, raw, strict=True):
        where = (got["gpu_id"], got["hour"])
        for column in COMPARED:
            assert got[column] == pytest.approx(want[column], rel=1e-9, abs=1e-9), (*where, column)
        assert got["job_id"] == want["job_id"], where
        hour_end = got["hour"] + timedelta(hours=1)
        assert got["util_p95"] == pytest.approx(_p95(_utils(samples, got["gpu_uuid"], got["hour"], hour_end)))
        if (got["host"], got["hour"]) in cut:
            bound = datetime(2026, 11, 30, 1, 20) if got["hour"].hour == 1 else datetime(2026, 11, 30, 2, 20)
            slices = [(got["hour"], bound), (bound, hour_end)]
            assert want["util_p95"] == pytest.approx(
                max(_p95(_utils(samples, got["gpu_uuid"], a, b)) for a, b in slices)
            )
        else:
            assert got["util_p95"] == pytest.approx(want["util_p95"], rel=1e-9, abs=1e-9), where
        # coverage: samples x scrape_interval against the raw path's gaps between samples, which also hold
        # the scrapes' jitter (here under 0.3 s an hour); equal without jitter (the GPU scraped on the hour)
        assert abs(got["coverage"] - want["coverage"]) <= 0.3 / 3600, where
        if got["gpu_id"].endswith("a000"):
            assert got["coverage"] == want["coverage"] == 1.0
    assert [r["job_id"] for r in pushed if r["host"] == "gpu-node-b"] == [None, "j1", "j1", None]
    # at 02:00 the two differ: the hour's p95 against the larger of [02:00, 02:20) and [02:20, 03:00)
    differ = [
        (g["host"], g["hour"].hour)
        for g, w in zip(pushed, raw, strict=True)
        if g["util_p95"] != w["util_p95"]
    ]
    assert differ == [("gpu-node-b", 2)]
    # the GPU scraped on the hour: 60 samples an hour, the one at the hour's end counted in the next hour
    on_the_hour = [r for r in pushed if r["gpu_id"].endswith("a000")]
    assert [r["samples"] for r in on_the_hour] == [60] * HOURS
    assert {r["coverage"] for r in pushed} == {1.0}
    assert {r["host"] for r in pushed} == {"gpu-node-a", "gpu-node-b"}
    assert any(
        r["util_p95"] not in (r["util_max"], 0) for r in pushed
    )  # an interpolated quantile is compared


def test_a_label_value_is_matched_literally_in_the_series_chunks() -> None:
    from pipelines.ingest.readers.prometheus import _escape_regex

    # PromQL string escapes on top of RE2's: a dot is `\\.` in the query text, a quote `\"`
    assert _escape_regex("10.0.0.1:9400") == r"10\\.0\\.0\\.1:9400"
    assert _escape_regex('a"b') == r"a\"b"


def test_promql_reads_each_hour_without_its_end_instant() -> None:
    query = build_query('job="dcgm-exporter"', 'instance=~"a:9400"', "59m59s999ms")
    assert (
        'quantile_over_time(0.95, {__name__=~"DCGM_FI_DEV_GPU_UTIL|dcgm_gpu_utilization", job="dcgm-exporter", instance=~"a:9400"}[59m59s999ms])'
        in query
    )
    assert "label_replace(" in query and '"ww_stat", "util_p95"' in query


# a test-only password and its bcrypt hash (cost 4) for Prometheus' --web.config.file
PASSWORD = "s3cret-pass-42"
WEB_CONFIG = "basic_auth_users:\n  wastewatch: $2b$04$1vxHAw6b9mEW3SUsmjp1qul7/ZcKEsXcgrolddmCYqSmRs6ukW7Cy\n"
ONE_HOUR = "start: '2026-11-30T00:00:00Z', end: '2026-11-30T01:00:00Z'"
LABELS = {"Hostname": "gpu-node-z", "UUID": "GPU-z", "gpu": "0", "modelName": "NVIDIA H200"}
EVAL_AT = 1795996800 + 3600 - 0.001  # 2026-11-30 00:00 + 1 h - 1 ms


def _stats(**values: float) -> str:
    return matrix([({**LABELS, "ww_stat": k}, [(EVAL_AT, str(v))]) for k, v in values.items()])


OK = {
    "/api/v1/status/buildinfo": [(200, '{"status":"success","data":{"version":"2.42.0"}}', {})],
    "/api/v1/label/instance/values": [(200, '{"status":"success","data":[]}', {})],
    "/api/v1/query_range": [
        (200, _stats(samples=60, util_samples=60, util_sum=3000, util_stddev=0, util_p95=50, util_max=50), {})
    ],
}


def _ingest(project: Path, source: str) -> tuple[IngestReport, list[dict[str, Any]]]:
    project.mkdir(exist_ok=True)
    write_config(project, "sources:\n" + source)
    config = load_config(project / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        return ingest(con, config), rows(con, "select * from gpu_hourly_stats order by hour, host, gpu_index")
    finally:
        con.close()


def test_basic_auth_against_a_real_prometheus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WW_TEST_PROM_PASS", PASSWORD)
    with start_prometheus(tmp_path / "prom", fleet_series(hours=1), web_config=WEB_CONFIG) as url:
        opts = f"{{{ONE_HOUR}, username: wastewatch, password_env: WW_TEST_PROM_PASS}}"
        report, got = _ingest(
            tmp_path / "ok", f"  - {{name: prom, kind: prometheus, uri: '{url}', options: {opts}}}\n"
        )
        assert not report.failures and not report.rejected, report.summary()
        assert [(r["host"], r["samples"]) for r in got] == [
            ("gpu-node-a", 60),
            ("gpu-node-a", 60),
            ("gpu-node-b", 60),
        ]

        monkeypatch.setenv("WW_TEST_PROM_PASS", "wrong-pass-99")
        report, got = _ingest(
            tmp_path / "bad", f"  - {{name: prom, kind: prometheus, uri: '{url}', options: {opts}}}\n"
        )
    assert got == [] and report.failures == [
        f"source 'prom': {url}: HTTP 401 Unauthorized: the server refused the credentials "
        "(bearer_token_env, username/password_env)"
    ]


def test_the_bearer_token_is_sent_and_a_503_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WW_TEST_BEARER", "tok-8f2b1c")
    answers = {
        **OK,
        "/api/v1/query_range": [(503, "overloaded", {"Retry-After": "0"}), *OK["/api/v1/query_range"]],
    }
    with canned_api(answers) as api:
        opts = f"{{{ONE_HOUR}, bearer_token_env: WW_TEST_BEARER, backoff: 0.01}}"
        report, got = _ingest(
            tmp_path / "p", f"  - {{name: prom, kind: prometheus, uri: '{api.url}/', options: {opts}}}\n"
        )
    assert not report.failures and not report.rejected, report.summary()
    assert [p for p, _, _ in api.seen] == [
        "/api/v1/status/buildinfo", "/api/v1/label/instance/values", "/api/v1/query_range", "/api/v1/query_range",
    ]  # fmt: skip
    assert {h.get("Authorization") for _, _, h in api.seen} == {"Bearer tok-8f2b1c"}
    assert [h["method"] for p, _, h in api.seen if p == "/api/v1/query_range"] == ["POST", "POST"]
    query = api.seen[-1][1]
    assert (query["start"], query["end"], query["step"]) == (["1796000399.999"], ["1796000399.999"], ["3600"])
    assert "[59m59s999ms]" in query["query"][0]  # Prometheus 2.x: the hour's end instant left out
    assert [
        (r["hour"], r["host"], r["samples"], r["util_sum"], r["util_p95"], r["observed_s"]) for r in got
    ] == [(datetime(2026, 11, 30), "gpu-node-z", 60, 3000.0, 50.0, 3600.0)]


def test_prometheus_3_ranges_exclude_their_start_so_the_hour_is_a_full_hour(tmp_path: Path) -> None:
    answers = {
        **OK,
        "/api/v1/status/buildinfo": [(200, '{"status":"success","data":{"version":"3.1.0"}}', {})],
    }
    with canned_api(answers) as api:
        report, _ = _ingest(
            tmp_path / "p",
            f"  - {{name: prom, kind: prometheus, uri: '{api.url}', options: {{{ONE_HOUR}}}}}\n",
        )
    assert not report.failures and not report.rejected, report.summary()
    assert "[1h])" in api.seen[-1][1]["query"][0]


def test_a_server_that_keeps_failing_is_a_source_failure_and_keeps_the_rows(tmp_path: Path) -> None:
    with canned_api(OK) as api:
        source = f"  - {{name: prom, kind: prometheus, uri: '{api.url}', options: {{{ONE_HOUR}, retries: 1, backoff: 0}}}}\n"
        _ingest(tmp_path / "p", source)
        report, got = _ingest(tmp_path / "p", source)  # the same hour read again replaces, never adds
        assert not report.failures and len(got) == 1
        api.answers["/api/v1/query_range"] = [(503, "overloaded", {})]
        report, got = _ingest(tmp_path / "p", source)
    assert report.failures == [
        f"source 'prom': {api.url}: HTTP 503 Service Unavailable after 2 attempt(s) "
        "(query_range 2026-11-30 00:00..2026-11-30 01:00 UTC)"
    ]
    assert len(got) == 1  # the earlier run's hour stays


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            '{"status":"success","data":{"resultType":"matrix","result":[{"metric":',
            "the response is not JSON: Expecting value at line 1, column 71",
        ),
        (
            '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"ww_stat":"samples"}}]}}',
            "series 0 has no `metric` labels with ww_stat or no `values`",
        ),
        (
            '{"status":"success","data":{"resultType":"vector","result":[]}}',
            "expected a matrix result, got 'vector'",
        ),
        (
            '{"status":"error","errorType":"execution","error":"query timed out"}',
            "the query failed (status 'error'): query timed out",
        ),
    ],
    ids=["cut-short", "no-values", "vector", "error-status"],
)
def test_a_bad_response_names_the_query_and_the_problem(tmp_path: Path, body: str, problem: str) -> None:
    with canned_api({**OK, "/api/v1/query_range": [(200, body, {})]}) as api:
        report, got = _ingest(
            tmp_path / "p",
            f"  - {{name: prom, kind: prometheus, uri: '{api.url}', options: {{{ONE_HOUR}}}}}\n",
        )
    assert got == [] and [o.error for o in report.rejected] == [
        f"{api.url}: query_range 2026-11-30 00:00..2026-11-30 01:00 UTC: {problem}"
    ]


@pytest.mark.e2e  # the whole `wastewatch ingest` (its Dagster run and the marts)
def test_an_unreachable_server_is_one_error_line_exit_1_and_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers.prometheus_server import free_port

    monkeypatch.setenv("PROM_BEARER", "tok-never-printed-7731")
    port = free_port()  # nothing listens there
    url = f"http://127.0.0.1:{port}"
    write_config(
        tmp_path,
        f"""
        warehouse: wh/w.duckdb
        sources:
          - {{name: prom, kind: prometheus, uri: '{url}', options: {{{ONE_HOUR}, bearer_token_env: PROM_BEARER, retries: 1, backoff: 0}}}}
        """,
    )
    result = CliRunner().invoke(main, ["--config", str(tmp_path / "wastewatch.yaml"), "ingest"])
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 1, result.output
    assert len(errors) == 1 and errors[0].startswith(
        f"error: source 'prom': {url}: cannot reach the server after 2 attempt(s): "
    ), result.output
    assert "tok-never-printed-7731" not in result.output
    assert base64.b64encode(b"tok-never-printed-7731").decode() not in result.output


def test_an_hour_a_job_starts_and_ends_in_is_cut_by_the_job_records(tmp_path: Path) -> None:
    """step=1h cannot see a job boundary: the hour's row is cut where the scheduler says the job started and
    ended, each slice getting the hour's statistics and its share of the samples by length."""
    con = new_warehouse(tmp_path / "w.duckdb")
    try:
        con.execute(
            "insert into gpu_hourly_stats (hour, host, gpu_uuid, gpu_index, samples, observed_s, util_samples, "
            "util_sum, util_sumsq, util_p95, util_max, power_mean_w, source, x_source_file, x_file_id, x_hour_date) "
            "values ('2026-11-30 00:00', 'gpu-node-z', 'GPU-z', 0, 60, 3600, 59, 2950, 59 * 2600, 80, 90, 300, "
            "'prom', 'http://p', 'f-prom', '2026-11-30')"
        )
        con.execute(
            "insert into jobs (job_id, scheduler, state, started_at, ended_at, hosts, source, x_source_file, "
            "x_file_id) values ('j1', 'slurm', 'COMPLETED', '2026-11-30 00:20', '2026-11-30 00:50', "
            "['gpu-node-z'], 'sacct', 'x', 'f-jobs')"
        )
        build_intermediate(con)
        for mart in GPU_MARTS:
            build_mart(con, mart)
        cut = rows(
            con,
            "select slice_start::time::varchar as at, job_id, samples, util_samples, observed_seconds, coverage, "
            "util_mean, util_p95, power_mean_w from gpu_job_hours order by slice_start",
        )
        hour = rows(
            con, "select samples, coverage, util_mean, util_p95, util_stddev, job_id, jobs from gpu_hours"
        )
    finally:
        con.close()
    assert [(r["at"], r["job_id"], r["samples"], r["util_samples"], r["observed_seconds"]) for r in cut] == [
        ("00:00:00", None, 20, 19, 1200.0),
        ("00:20:00", "j1", 30, 30, 1800.0),
        ("00:50:00", None, 10, 10, 600.0),
    ]
    for r in cut:  # the hour's statistics, in every slice
        assert (r["coverage"], r["util_p95"], r["power_mean_w"]) == (1.0, 80.0, 300.0)
        assert r["util_mean"] == pytest.approx(2950 / 59)
    # and the hour adds back up to the row the metrics store gave
    assert len(hour) == 1
    h = hour[0]
    assert (h["samples"], h["coverage"], h["util_p95"], h["job_id"], h["jobs"]) == (60, 1.0, 80.0, "j1", 1)
    assert h["util_mean"] == pytest.approx(2950 / 59)
    assert h["util_stddev"] == pytest.approx((2600 - (2950 / 59) ** 2) ** 0.5)


def test_credentials_in_the_url_authenticate_and_are_never_stored(tmp_path: Path) -> None:
    with canned_api(OK) as api:
        secret_url = api.url.replace("http://", "http://reader:pw-in-url-5521@")
        report, got = _ingest(
            tmp_path / "p",
            f"  - {{name: prom, kind: prometheus, uri: '{secret_url}', options: {{{ONE_HOUR}}}}}\n",
        )
        con = new_warehouse(tmp_path / "p" / "warehouse" / "wastewatch.duckdb")
        try:
            ledger = rows(con, "select uri, status from ingest_files")
        finally:
            con.close()
    assert not report.failures and not report.rejected, report.summary()
    assert {h.get("Authorization") for _, _, h in api.seen} == {
        "Basic " + base64.b64encode(b"reader:pw-in-url-5521").decode()
    }
    assert ledger == [{"uri": api.url, "status": "loaded"}]
    assert [r["x_source_file"] for r in got] == [api.url]


def test_tls_verified_with_the_ca_file_refused_without_it_and_skipped_when_asked(tmp_path: Path) -> None:
    cert, key = self_signed_cert(tmp_path / "tls")
    web = f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n"
    with start_prometheus(tmp_path / "prom", fleet_series(hours=1), web_config=web, tls=True) as url:
        assert url.startswith("https://")
        results = {}
        for name, extra in (
            ("ca", f", ca_file: '{cert}'"),
            ("none", ""),
            ("skip", ", insecure_skip_verify: true"),
        ):
            source = f"  - {{name: prom, kind: prometheus, uri: '{url}', options: {{{ONE_HOUR}, retries: 0{extra}}}}}\n"
            results[name] = _ingest(tmp_path / name, source)
    for name in ("ca", "skip"):
        report, got = results[name]
        assert not report.failures and not report.rejected, report.summary()
        assert len(got) == 3
    report, got = results["none"]
    assert got == [] and len(report.failures) == 1
    assert report.failures[0].startswith(
        f"source 'prom': {url}: cannot reach the server after 1 attempt(s): "
    )
    assert "CERTIFICATE_VERIFY_FAILED" in report.failures[0]


def test_a_host_the_metrics_store_stopped_hearing_from_is_stale(tmp_path: Path) -> None:
    """Host silence reads the hourly rows too: gpu-node-b's last hour is 30 h before the source's newest."""
    from pipelines.health.freshness import stale_sources

    write_config(
        tmp_path,
        "sources:\n  - {name: prom, kind: prometheus, uri: 'http://127.0.0.1:9'}\n",
    )
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        con.execute(
            "insert into gpu_hourly_stats (hour, host, gpu_index, samples, observed_s, source, x_source_file, "
            "x_file_id, x_hour_date) select h, host, 0, 60, 3600, 'prom', 'http://p', 'f', h::date from ("
            "select unnest(range('2026-11-23'::timestamp, '2026-12-01'::timestamp, interval 1 hour)) as h, "
            "'gpu-node-a' as host union all select unnest(range('2026-11-23'::timestamp, "
            "'2026-11-29 18:00'::timestamp, interval 1 hour)), 'gpu-node-b')"
        )
        con.execute(  # the source's ledger row: it delivered an hour ago
            "insert into ingest_files (file_id, source, kind, uri, status, first_seen_at, checked_at, loaded_at) "
            "values ('f', 'prom', 'prometheus', 'http://p', 'loaded', '2026-12-01', '2026-12-01', '2026-12-01')"
        )
        stale = stale_sources(con, config, datetime(2026, 12, 1, 1))
    finally:
        con.close()
    assert [s.hosts for s in stale] == [("gpu-node-b",)]
    assert "gpu-node-b silent since 2026-11-29 17:00 UTC" in str(stale[0])


def test_later_runs_read_from_the_lookback_before_the_newest_hour(tmp_path: Path) -> None:
    """The first run reads `history` before `end`; the next one from `lookback` before the newest hour landed,
    so late samples of recent hours are read again and older hours are not asked for again."""
    with canned_api(OK) as api:
        source = (
            "  - {name: prom, kind: prometheus, uri: '" + api.url + "', "
            "options: {end: '2026-11-30T06:00:00Z', history: 2d, lookback: 2h}}\n"
        )
        _ingest(tmp_path / "p", source)
        first = [q for p, q, _ in api.seen if p == "/api/v1/query_range"][-1]
        report, got = _ingest(tmp_path / "p", source)
        second = [q for p, q, _ in api.seen if p == "/api/v1/query_range"][-1]
    assert not report.failures and not report.rejected, report.summary()
    # hours 2026-11-28 06:00 .. 11-30 05:00 the first time (points at each hour's end - 1 ms)
    assert (first["start"], first["end"]) == (["1795849199.999"], ["1796018399.999"])
    # newest hour landed 00:00, lookback 2 h: from 2026-11-29 23:00
    assert (second["start"], second["end"]) == (["1795996799.999"], ["1796018399.999"])
    assert len(got) == 1  # the hour read twice is one row


def test_an_hour_read_again_unchanged_is_not_rolled_up_again(tmp_path: Path) -> None:
    from pipelines.transform.days import refresh_rollups

    con = new_warehouse(tmp_path / "w.duckdb")
    insert = (
        "insert into gpu_hourly_stats (hour, host, gpu_index, samples, observed_s, util_samples, util_sum, source, "
        "x_source_file, x_file_id, x_hour_date) values ('2026-11-30 05:00', 'n', 0, 60, 3600, 60, $sum, 'prom', "
        "'http://p', 'f', '2026-11-30')"
    )
    try:
        build_intermediate(con)
        con.execute(insert, {"sum": 600})
        assert refresh_rollups(con).days_rebuilt == [datetime(2026, 11, 30).date()]
        con.execute("delete from gpu_hourly_stats")
        con.execute(insert, {"sum": 600})  # a run that read the same hour again
        assert refresh_rollups(con).days_rebuilt == []
        con.execute("update gpu_hourly_stats set util_sum = 900")  # a late sample changed it
        assert refresh_rollups(con).days_rebuilt == [datetime(2026, 11, 30).date()]
        assert rows(con, "select util_sum from int_gpu_slices") == [{"util_sum": 900.0}]
    finally:
        con.close()


def test_a_warehouse_fed_only_by_the_metrics_store_has_data_in_its_weeks(tmp_path: Path) -> None:
    from pipelines.health.coverage import data_spans
    from rules import Window

    con = new_warehouse(tmp_path / "w.duckdb")
    try:
        con.execute(
            "insert into gpu_hourly_stats (hour, host, gpu_index, samples, observed_s, source, x_source_file, "
            "x_file_id, x_hour_date) values ('2026-11-30 05:00', 'n', 0, 60, 3600, 'prom', 'http://p', 'f', "
            "'2026-11-30'), ('2026-12-01 07:00', 'n', 0, 60, 3600, 'prom', 'http://p', 'f', '2026-12-01')"
        )
        spans = data_spans(con, Window.iso_week("2026-W49"))
        before = data_spans(con, Window.iso_week("2026-W48"))
    finally:
        con.close()
    assert [(s.kind, s.first_at, s.last_at, s.in_window) for s in spans] == [
        ("GPU telemetry", datetime(2026, 11, 30, 5), datetime(2026, 12, 1, 7, 59, 59, 999999), 2)
    ]
    assert [s.in_window for s in before] == [0]


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (
            "{bearer_token_env: T, username: u, password_env: P}",
            "either bearer_token_env or username/password_env",
        ),
        ("{username: u}", "basic auth needs both username and password_env"),
        ("{lookback: 6 hours}", "expected a duration such as 90m, 36h, 3d or 1w"),
        ("{hours_per_query: 20000}", "less than or equal to 11000"),
        ("{scrape_intervall: 30}", "scrape_intervall"),
    ],
    ids=["two-auths", "user-without-password", "bad-duration", "too-many-hours", "misspelt"],
)
def test_bad_options_stop_the_run_at_config_load(tmp_path: Path, options: str, problem: str) -> None:
    from pipelines.errors import ConfigError

    write_config(
        tmp_path,
        f"sources:\n  - {{name: prom, kind: prometheus, uri: 'http://p:9090', options: {options}}}\n",
    )
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "wastewatch.yaml")
    assert problem in str(err.value) and "wastewatch.yaml" in str(err.value)
