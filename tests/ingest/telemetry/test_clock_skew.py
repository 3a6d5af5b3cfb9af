"""Telemetry dated ahead of the clock (`max_clock_skew`, default 1 h): a file with a sample more than the skew
after the wall clock at ingest is rejected naming its line (or series and point), so one future-dated host can
no longer hide a silent one from the freshness check, which measures from the newest sample that landed."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import load_config
from pipelines.errors import ConfigError
from pipelines.health.freshness import stale_sources
from pipelines.ingest import IngestReport, ingest
from pipelines.warehouse import rows, utcnow
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.ingest_run import ingest_project
from tests.helpers.prometheus_server import canned_api, matrix

SMI_HEADER = (
    "timestamp, name, pci.bus_id, uuid, index, utilization.gpu [%], memory.used [MiB], power.draw [W]"
)
REMEDY = "fix the host's clock (NTP) and write the file again, or raise the source's options.max_clock_skew"
MINUTES_5 = timedelta(minutes=5)


def _now() -> datetime:
    """The wall clock (naive UTC, whole minutes): files are dated from it, as a live host dates them."""
    return utcnow().replace(second=0, microsecond=0)


def _smi_line(t: datetime, uuid: str = "GPU-1") -> str:
    return f"{t:%Y/%m/%d %H:%M:%S}.{t.microsecond // 1000:03d}, NVIDIA H100, 00000000:00:06.0, {uuid}, 0, 50 %, 0 MiB, 300 W"


def _smi(path: Path, start: datetime, end: datetime, every: timedelta = MINUTES_5) -> list[str]:
    """One host's nvidia-smi capture from `start` to `end` (exclusive); its lines."""
    lines = [SMI_HEADER]
    t = start
    while t < end:
        lines.append(_smi_line(t))
        t += every
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines


def _two_hosts(project: Path, now: datetime) -> list[str]:
    """gpu-a reporting up to now, then a file of it dated a year (and half an hour) ahead; gpu-b silent for
    nine hours, longer than the six hours of `host_silence`. The lines of the file ahead."""
    tele = project / "telemetry"
    _smi(tele / "gpu-a_today.csv", now - timedelta(days=2), now)
    _smi(tele / "gpu-b_today.csv", now - timedelta(days=2), now - timedelta(hours=9))
    ahead = now + timedelta(days=365, minutes=30)
    return _smi(tele / "gpu-a_next.csv", ahead, ahead + timedelta(hours=1))


def _ingest_and_stale(project: Path, options: str = "") -> tuple[IngestReport, list[str], Any]:
    cfg = write_config(project, f"sources:\n  - {{name: smi, kind: nvidia_smi, uri: telemetry/{options}}}\n")
    config = load_config(cfg)
    con = new_warehouse(config.warehouse_path)
    try:
        report = ingest(con, config)
        stale = [str(s) for s in stale_sources(con, config, utcnow())]
        newest = rows(con, "select host, max(ts) as newest from gpu_samples group by host order by host")
        return report, stale, newest
    finally:
        con.close()


def test_a_host_dated_a_year_ahead_is_refused_naming_its_line_and_the_silent_host_is_stale(
    tmp_path: Path,
) -> None:
    now = _now()
    ahead = _two_hosts(tmp_path / "p", now)
    report, stale, newest = _ingest_and_stale(tmp_path / "p")
    [refused] = report.rejected
    first = now + timedelta(days=365, minutes=30)
    assert refused.uri.endswith("gpu-a_next.csv") and refused.error is not None
    m = re.fullmatch(
        re.escape(
            f"{refused.uri}:2: sample dated {first:%Y-%m-%d %H:%M:%S} UTC, 365 days ahead of the clock at "
        )
        + r"ingest \((.+) UTC\)"
        + re.escape(
            f", more than max_clock_skew = 1h: {ahead[1]!r}; 12 of its samples are that far ahead: {REMEDY}"
        ),
        refused.error,
    )
    assert m, refused.error
    assert now <= datetime.fromisoformat(m.group(1)) <= utcnow()  # the wall clock as the file was read
    # the other files of the batch loaded, and nothing dated ahead landed
    assert sorted(o.uri.rsplit("/", 1)[1] for o in report.of("loaded")) == [
        "gpu-a_today.csv",
        "gpu-b_today.csv",
    ]
    assert newest == [
        {"host": "gpu-a", "newest": now - MINUTES_5},
        {"host": "gpu-b", "newest": now - timedelta(hours=9) - MINUTES_5},
    ]
    # freshness measures from the newest sample that landed: gpu-b is silent again
    assert stale == [
        "source 'smi': 1 host(s) stopped reporting or thinned out against the source's newest sample at "
        f"{now - MINUTES_5:%Y-%m-%d %H:%M} UTC: gpu-b silent since {now - timedelta(hours=9, minutes=5):%Y-%m-%d %H:%M} UTC"
    ]

    # what the check prevents: with a skew that lets the year through, gpu-a's future samples become the
    # source's newest and gpu-b (silent "for a year") drops out as gone, hidden
    _two_hosts(tmp_path / "q", now)
    report, stale, _ = _ingest_and_stale(tmp_path / "q", ", options: {max_clock_skew: 1000w}")
    assert report.rejected == [] and stale == []


def test_a_replayed_old_trace_is_not_stale_and_its_silent_host_is_named_from_the_trace_s_end(
    tmp_path: Path,
) -> None:
    """A trace from 2020 loaded today: every sample is years behind the wall clock, yet nothing is stale for
    that (silence is measured from the source's newest accepted sample, never from the clock); a host
    silent for nine hours before the trace's end still is."""
    end = datetime(2020, 3, 3, 12, 0)
    tele = tmp_path / "p" / "telemetry"
    _smi(tele / "gpu-a_2020.csv", end - timedelta(days=2), end)
    report, stale, newest = _ingest_and_stale(tmp_path / "p")
    assert report.rejected == [] and stale == []
    assert newest == [{"host": "gpu-a", "newest": end - MINUTES_5}]
    _smi(tele / "gpu-b_2020.csv", end - timedelta(days=2), end - timedelta(hours=9))
    report, stale, _ = _ingest_and_stale(tmp_path / "p")
    assert report.rejected == []
    assert stale == [
        "source 'smi': 1 host(s) stopped reporting or thinned out against the source's newest sample at "
        f"{end - MINUTES_5:%Y-%m-%d %H:%M} UTC: gpu-b silent since {end - timedelta(hours=9, minutes=5):%Y-%m-%d %H:%M} UTC"
    ]


@pytest.mark.e2e  # the whole `wastewatch ingest` (its Dagster run)
def test_ingest_prints_the_refused_line_and_the_silent_host_and_exits_1(tmp_path: Path) -> None:
    now = _now()
    _two_hosts(tmp_path, now)
    cfg = write_config(tmp_path, "sources:\n  - {name: smi, kind: nvidia_smi, uri: telemetry/}\n")
    result = CliRunner().invoke(main, ["--config", str(cfg), "ingest"])
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    uri = (tmp_path / "telemetry" / "gpu-a_next.csv").resolve()
    assert [ln.split(" UTC,")[0] for ln in lines if ln.startswith("rejected:")] == [
        f"rejected: {uri}:2: sample dated {now + timedelta(days=365, minutes=30):%Y-%m-%d %H:%M:%S}"
    ]
    assert [ln.split(": gpu-b")[1] for ln in lines if ln.startswith("stale:")] == [
        f" silent since {now - timedelta(hours=9, minutes=5):%Y-%m-%d %H:%M} UTC"
    ]


# -- every telemetry kind: the first line ahead is named; a sample within the skew loads ------------------


def _dmon(times: list[datetime]) -> str:
    head = (
        "#Date        Time         gpu    pwr  gtemp     sm    mem   mclk   pclk     fb\n"
        "#YYYYMMDD    HH:MM:SS     Idx      W      C      %      %    MHz    MHz     MB\n"
    )
    return head + "".join(
        f" {t:%Y%m%d}    {t:%H:%M:%S}       0     77     30     50      0   3201    345      0\n"
        for t in times
    )


def _dcgm(times: list[datetime]) -> str:
    lines = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    lines += [
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-1",Hostname="gpu-a"}} 50 {round(t.replace(tzinfo=UTC).timestamp() * 1000)}'
        for t in times
    ]
    return "\n".join(lines) + "\n"


def _metrics_csv(times: list[datetime]) -> str:
    # ISO with an offset: 02:00 ahead of UTC written as local time, so the text reads two hours later
    body = "".join(
        f"{t.replace(tzinfo=UTC).astimezone(ZoneInfo('Europe/Athens')).isoformat()},gpu-a,GPU-1,util_pct,50\n"
        for t in times
    )
    return "timestamp,host,gpu_uuid,metric,value\n" + body


def _smi_text(times: list[datetime]) -> str:
    return "\n".join([SMI_HEADER, *(_smi_line(t) for t in times)]) + "\n"


def _prometheus_json(times: list[datetime]) -> str:
    labels = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "gpu-a", "UUID": "GPU-1", "gpu": "0"}
    return matrix([(labels, [(t.replace(tzinfo=UTC).timestamp(), "50") for t in times])])


KINDS = {
    # kind: (file name, writer, the line of the third sample: after a blank line, which CSV readers skip)
    "nvidia_smi": ("gpu-a_today.csv", _smi_text, 5),
    "nvidia_smi_dmon": ("gpu-a_today.txt", _dmon, 6),
    "dcgm": ("gpu-a_today.prom", _dcgm, 6),
    "metrics_csv": ("gpu-a_today.csv", _metrics_csv, 5),
    "prometheus_json": ("gpu-a_today.json", _prometheus_json, None),
}


def _text(kind: str, times: list[datetime]) -> str:
    """The kind's file of `times`; a text format has a blank line before its last sample."""
    _, write, line = KINDS[kind]
    text = write(times)
    if line is None:
        return text
    head, last = text.rstrip("\n").rsplit("\n", 1)
    return f"{head}\n\n{last}\n"


def _run(tmp_path: Path, kind: str, times: list[datetime]) -> tuple[IngestReport, list[dict[str, Any]]]:
    return ingest_project(
        tmp_path,
        f"  - {{name: t, kind: {kind}, uri: telemetry/}}\n",
        {f"telemetry/{KINDS[kind][0]}": _text(kind, times)},
        "select ts from gpu_samples order by ts",
    )


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_names_the_first_sample_ahead_and_loads_those_within_the_skew(
    tmp_path: Path, kind: str
) -> None:
    now = _now()
    # sub-second times: 50 minutes ahead is within the hour, the third sample two hours ahead is not
    times = [now - timedelta(minutes=1), now + timedelta(minutes=50, seconds=0.25), now + timedelta(hours=2)]
    if kind in ("nvidia_smi_dmon",):  # dmon writes whole seconds
        times[1] = now + timedelta(minutes=50)
    report, got = _run(tmp_path / "ahead", kind, times)
    [refused] = report.rejected
    _, _, line = KINDS[kind]
    assert refused.error is not None and got == []
    where = f"{refused.uri}:{line}:" if line else f"{refused.uri}:"
    # ahead of the clock at ingest, a few seconds after `now`: just under two hours
    assert re.match(
        re.escape(f"{where} sample dated {times[2]:%Y-%m-%d %H:%M:%S} UTC, ")
        + r"1 hour 5\d minutes ahead of the clock at ingest \(.+ UTC\), more than max_clock_skew = 1h: ",
        refused.error,
    ), refused.error
    assert refused.error.endswith(f"; 1 of its samples is that far ahead: {REMEDY}")
    if kind == "prometheus_json":  # no lines: the series and the point
        stamp = json.dumps([times[2].replace(tzinfo=UTC).timestamp(), "50"], separators=(",", ":"))
        assert (
            ': series 0 {__name__="DCGM_FI_DEV_GPU_UTIL", Hostname="gpu-a", UUID="GPU-1", gpu="0"}, '
            f"point 2: {stamp};" in refused.error
        )
    else:  # the line's own text, its timestamp as the file writes it
        text = _text(kind, times).splitlines()[line - 1]
        assert f": {text[:120]!r};" in refused.error

    # within the skew, and a replayed trace's sample from 2020: never too old
    within = [datetime(2020, 3, 3, 8, 0, 0), *times[:2]]
    report, got = _run(tmp_path / "within", kind, within)
    assert report.rejected == [] and [r["ts"] for r in got] == within


def test_a_capture_in_local_time_read_as_utc_is_ahead_and_loads_with_its_timezone(tmp_path: Path) -> None:
    """A Tokyo host writing local time without a zone, read as UTC (the default), is nine hours ahead."""
    now = _now()
    tokyo = [
        (now - timedelta(minutes=m)).replace(tzinfo=UTC).astimezone(ZoneInfo("Asia/Tokyo")) for m in (10, 5)
    ]
    text = "\n".join([SMI_HEADER, *(_smi_line(t.replace(tzinfo=None)) for t in tokyo)]) + "\n"
    files = {"telemetry/gpu-t_today.csv": text}
    report, got = ingest_project(
        tmp_path / "utc",
        "  - {name: t, kind: nvidia_smi, uri: telemetry/}\n",
        files,
        "select ts from gpu_samples",
    )
    [refused] = report.rejected
    assert refused.error is not None and got == []
    read_as = now - timedelta(minutes=10) + timedelta(hours=9)
    assert re.match(
        re.escape(f"{refused.uri}:2: sample dated {read_as:%Y-%m-%d %H:%M:%S} UTC, ")
        + r"8 hours (4\d|50) minutes ahead of the clock at ingest",
        refused.error,
    ), refused.error
    report, got = ingest_project(
        tmp_path / "tokyo",
        "  - {name: t, kind: nvidia_smi, uri: telemetry/, options: {timezone: Asia/Tokyo}}\n",
        files,
        "select ts from gpu_samples order by ts",
    )
    assert report.rejected == [] and [r["ts"] for r in got] == [now - timedelta(minutes=10), now - MINUTES_5]


def test_a_scrape_without_timestamps_takes_the_file_names_time_and_is_named_by_it(tmp_path: Path) -> None:
    ahead = _now() + timedelta(days=30, minutes=30)
    name = f"gpu-a_{ahead:%Y%m%dT%H%M%S}Z.prom"
    scrape = '# HELP x\nDCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1"} 50\nDCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-1"} 300\n'
    report, got = ingest_project(
        tmp_path,
        "  - {name: d, kind: dcgm, uri: telemetry/}\n",
        {f"telemetry/{name}": scrape},
        "select * from gpu_samples",
    )
    [refused] = report.rejected
    assert refused.error is not None and got == []
    assert refused.error.startswith(
        f"{refused.uri}:2: sample dated {ahead:%Y-%m-%d %H:%M:%S} UTC, 30 days ahead"
    )
    assert (
        """: 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1"} 50' (no sample timestamp: the file's time, from its name); """
        "1 of its samples is that far ahead" in refused.error
    )


def test_an_api_answer_holding_an_hour_ahead_is_refused_naming_its_series(tmp_path: Path) -> None:
    """A server (or a proxy) answering outside the range asked: the read is refused, the hours kept."""
    now = _now()
    hour = now.replace(minute=0) - timedelta(hours=3)
    at = (hour + timedelta(days=365, hours=1)).replace(tzinfo=UTC).timestamp() - 0.001
    labels = {"Hostname": "gpu-z", "UUID": "GPU-z", "gpu": "0"}
    stats = {
        "samples": 60,
        "util_samples": 60,
        "util_sum": 3000,
        "util_stddev": 0,
        "util_p95": 50,
        "util_max": 50,
    }
    answer = matrix([({**labels, "ww_stat": k}, [(at, str(v))]) for k, v in stats.items()])
    with canned_api(
        {
            "/api/v1/status/buildinfo": [(200, '{"status":"success","data":{"version":"2.42.0"}}', {})],
            "/api/v1/label/instance/values": [(200, '{"status":"success","data":[]}', {})],
            "/api/v1/query_range": [(200, answer, {})],
        }
    ) as api:
        opts = f"{{start: '{hour:%Y-%m-%dT%H:%M:%SZ}', range_end: inclusive}}"
        report, got = ingest_project(
            tmp_path,
            f"  - {{name: prom, kind: prometheus, uri: '{api.url}', options: {opts}}}\n",
            {},
            "select * from gpu_hourly_stats",
        )
    [refused] = report.rejected
    assert got == [] and refused.error is not None
    future = hour + timedelta(days=365)
    assert refused.error.startswith(f"{api.url}: sample dated {future:%Y-%m-%d %H:%M:%S} UTC, "), (
        refused.error
    )
    assert (
        ', more than max_clock_skew = 1h: the hour of series {Hostname="gpu-z", UUID="GPU-z", gpu="0"} (samples); '
        f"1 of its samples is that far ahead: {REMEDY}" in refused.error
    )


# -- the option --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "value", "problem"),
    [
        ("nvidia_smi", "'-1h'", "max_clock_skew: '-1h': a clock skew cannot be negative"),
        ("dcgm", "soon", "max_clock_skew: 'soon': expected a duration such as 90m, 36h, 3d or 1w"),
        ("metrics_csv", "3600", "max_clock_skew: '3600': expected a duration such as 90m, 36h, 3d or 1w"),
        ("train_log", "1h", "max_clock_skew: unknown key"),  # its steps do not feed the freshness check
        ("slurm_sacct", "1h", "max_clock_skew: unknown key"),
    ],
    ids=["negative", "unparseable", "bare-number", "train-log", "jobs"],
)
def test_a_skew_that_cannot_be_is_a_config_error_naming_the_key(
    tmp_path: Path, kind: str, value: str, problem: str
) -> None:
    write_config(
        tmp_path, f"sources:\n  - {{name: s, kind: {kind}, uri: t/, options: {{max_clock_skew: {value}}}}}\n"
    )
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "wastewatch.yaml")
    assert problem in str(err.value) and "wastewatch.yaml:2" in str(err.value)
    if kind == "nvidia_smi":  # at the command line: exit 2, one line, nothing done
        result = CliRunner().invoke(main, ["--config", str(tmp_path / "wastewatch.yaml"), "ingest"])
        assert result.exit_code == 2 and problem in result.stderr, result.output
        assert not (tmp_path / "warehouse").exists()
