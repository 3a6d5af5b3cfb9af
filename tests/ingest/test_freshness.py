"""Freshness: a source that stopped delivering, or telemetry hosts that fell silent or sparse, are stale."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import load_config
from pipelines.errors import ConfigError
from pipelines.health.freshness import stale_sources
from pipelines.ingest import ingest
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

SMI_HEADER = (
    "timestamp, name, pci.bus_id, uuid, index, utilization.gpu [%], memory.total [MiB], memory.used [MiB], "
    "power.draw [W]"
)
START = datetime(2026, 11, 23)


def _smi(path: Path, start: datetime, end: datetime, every: timedelta) -> None:
    """One host's nvidia-smi capture from `start` to `end` (exclusive), one sample each `every`."""
    lines = [SMI_HEADER]
    t = start
    while t < end:
        lines.append(
            f"{t:%Y/%m/%d %H:%M:%S}.000, NVIDIA H100, 00000000:00:06.0, GPU-1, 0, 50 %, 81559 MiB, 0 MiB, 300 W"
        )
        t += every
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _two_hours(tmp_path: Path) -> None:
    """Two hours of one host's capture in the project's telemetry folder."""
    _smi(
        tmp_path / "landing" / "telemetry" / "gpu-01_2026-11-23.csv",
        START,
        START + timedelta(hours=2),
        timedelta(minutes=1),
    )


def _project(tmp_path: Path, sources: str) -> Path:
    for folder in ("billing", "telemetry", "hosts"):
        (tmp_path / "landing" / folder).mkdir(parents=True, exist_ok=True)
    return write_config(tmp_path, "sources:\n" + sources)


def _stale(config_path: Path, now: datetime) -> list[str]:
    config = load_config(config_path)
    con = new_warehouse(config.warehouse_path)
    try:
        ingest(con, config)
        return [str(s) for s in stale_sources(con, config, now)]
    finally:
        con.close()


def _loaded_at(config_path: Path) -> datetime:
    config = load_config(config_path)
    with duckdb.connect(str(config.warehouse_path), read_only=True) as con:
        row = con.execute("select max(loaded_at) from ingest_files").fetchone()
    assert row is not None and row[0] is not None
    return row[0]


def test_a_source_that_stopped_delivering_is_stale_after_its_cadence(tmp_path: Path) -> None:
    cfg = _project(
        tmp_path,
        "  - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}\n"
        "  - {name: smi-hourly, kind: nvidia_smi, uri: landing/telemetry/, expected_every: 6h}\n"
        "  - {name: smi-unchecked, kind: nvidia_smi, uri: landing/telemetry/, expected_every: 'off'}\n",
    )
    _two_hours(tmp_path)
    first = _stale(cfg, datetime(2000, 1, 1))  # the clock only matters relative to the load time below
    loaded = _loaded_at(cfg)
    assert first == []
    # the telemetry default is two days; the 6-hour source is stale after 6 hours, the unchecked one never
    assert _stale(cfg, loaded + timedelta(hours=5)) == []
    later = _stale(cfg, loaded + timedelta(days=1, hours=3))
    assert later == [
        "source 'smi-hourly' delivered nothing new for 1 day 3 hours (expected every 6 hours; "
        f"newest load {loaded:%Y-%m-%d %H:%M} UTC)"
    ]
    much_later = _stale(cfg, loaded + timedelta(days=2, minutes=1))
    assert [s.split(" delivered")[0] for s in much_later] == ["source 'smi'", "source 'smi-hourly'"]


def test_a_source_that_never_delivered_is_stale_and_says_what_it_saw(tmp_path: Path) -> None:
    cfg = _project(
        tmp_path,
        "  - {name: bill, kind: focus, uri: landing/billing/}\n"
        "  - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}\n",
    )
    (tmp_path / "landing" / "telemetry" / "gpu-01_2026-11-23.csv").write_text(
        "not a capture\n", encoding="utf-8"
    )
    found = _stale(cfg, datetime(2026, 11, 24))
    assert found == [
        f"source 'bill' has delivered nothing yet (no file it reads at {tmp_path / 'landing' / 'billing'})",
        "source 'smi' has delivered nothing yet (1 file(s) seen, none loaded)",
    ]


def test_hosts_that_fell_silent_or_sparse_are_named_and_terminated_ones_are_not(tmp_path: Path) -> None:
    cfg = _project(
        tmp_path,
        "  - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}\n"
        "  - {name: hosts, kind: hosts_csv, uri: landing/hosts/}\n",
    )
    tele = tmp_path / "landing" / "telemetry"
    end = START + timedelta(days=4)
    minute = timedelta(minutes=1)
    _smi(tele / "gpu-ok_2026-11-23.csv", START, end, minute)
    _smi(tele / "gpu-dead_2026-11-23.csv", START, end - timedelta(hours=9), minute)
    _smi(tele / "gpu-gone_2026-11-23.csv", START, end - timedelta(hours=9), minute)  # terminated: not stale
    _smi(tele / "gpu-thin_2026-11-23.csv", START, end - timedelta(days=1), minute)
    _smi(tele / "gpu-thin_2026-11-26.csv", end - timedelta(days=1), end, timedelta(minutes=5))  # a fifth
    _smi(tele / "gpu-new_2026-11-26.csv", end - timedelta(hours=12), end, timedelta(minutes=5))  # no baseline
    (tmp_path / "landing" / "hosts" / "hosts.csv").write_text(
        "host,instance_id,launched_at,terminated_at\n"
        f"gpu-gone,i-gone,2026-11-01T00:00:00Z,{end - timedelta(hours=8):%Y-%m-%dT%H:%M:%SZ}\n",
        encoding="utf-8",
    )
    found = _stale(cfg, datetime(2000, 1, 1))
    assert found == [
        "source 'smi': 2 host(s) stopped reporting or thinned out against the source's newest sample at "
        "2026-11-26 23:59 UTC: gpu-dead silent since 2026-11-26 14:59 UTC, "
        "gpu-thin sent 288 samples in the last day against 1,440 a day in the week before"
    ]


def test_silence_and_cadence_are_configurable_and_checked(tmp_path: Path) -> None:
    cfg = _project(
        tmp_path, "  - {name: smi, kind: nvidia_smi, uri: landing/telemetry/, host_silence: 10h}\n"
    )
    tele = tmp_path / "landing" / "telemetry"
    end = START + timedelta(days=2)
    _smi(tele / "gpu-ok_2026-11-23.csv", START, end, timedelta(minutes=1))
    _smi(tele / "gpu-dead_2026-11-23.csv", START, end - timedelta(hours=9), timedelta(minutes=1))
    assert _stale(cfg, datetime(2000, 1, 1)) == []
    bad = _project(
        tmp_path, "  - {name: smi, kind: nvidia_smi, uri: landing/telemetry/, expected_every: 3 days}\n"
    )
    with pytest.raises(
        ConfigError,
        match=r"wastewatch.yaml:2.*expected_every.*'3 days': expected a duration such as 90m, 36h, 3d or 1w",
    ):
        load_config(bad)
    wrong = _project(tmp_path, "  - {name: bill, kind: focus, uri: landing/billing/, host_silence: 6h}\n")
    with pytest.raises(ConfigError, match="host_silence applies to telemetry sources, not to kind 'focus'"):
        load_config(wrong)


def test_ingest_names_a_stale_source_exits_1_and_the_report_lists_it(tmp_path: Path) -> None:
    cfg = _project(
        tmp_path,
        "  - {name: bill, kind: focus, uri: landing/billing/}\n"
        "  - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}\n",
    )
    _two_hours(tmp_path)
    result = CliRunner().invoke(main, ["--config", str(cfg), "run", "--week", "2026-W48"])
    assert result.exit_code == 1, result.output
    where = tmp_path / "landing" / "billing"
    line = f"stale: source 'bill' has delivered nothing yet (no file it reads at {where})"
    assert line in result.stderr.splitlines()
    assert "smi" not in result.stderr  # it delivered
    md = (tmp_path / "reports" / "2026-W48" / "report-full.md").read_text(encoding="utf-8")
    assert "1 source(s) stopped delivering" in md
    shown = str(where).replace("_", "\\_")  # report.md escapes Markdown's control characters
    assert f"- `bill`: source 'bill' has delivered nothing yet (no file it reads at {shown})" in md


def test_a_source_that_cannot_be_read_is_an_error_not_also_stale(tmp_path: Path) -> None:
    cfg = _project(
        tmp_path,
        "  - {name: bill, kind: focus, uri: landing/no-such-folder/}\n"
        "  - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}\n",
    )
    _two_hours(tmp_path)
    result = CliRunner().invoke(main, ["--config", str(cfg), "ingest"])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith(("error:", "stale:"))]
    assert len(errors) == 1 and errors[0].startswith("error: source 'bill': "), result.stderr
