"""nvidia-smi --query-gpu CSV on the real H200 capture, in its header/unit variants."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import duckdb
import pytest

from pipelines.config import Config
from pipelines.ingest import ingest
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.marts import build_only
from tests.helpers.paths import H200, copy_into

CAPTURE = H200 / "nvidia_smi_query_gpu.csv"


def _readme_phase_means() -> dict[str, float]:
    """The per-phase mean util % the capture's README states (its summary table)."""
    out = {}
    for line in (H200 / "README.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| (job-\d{3}) \| \S+.*?\| (\d+) \| ([\d.]+) \|", line)
        if m:
            out[m.group(1)] = float(m.group(3))
    return out


def test_phase_means_match_the_capture_readme(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    copy_into(CAPTURE, project / "landing" / "telemetry", "h200-node_2026-11-30.csv")
    report = ingest(con, config)
    assert [o.status for o in report.outcomes] == ["loaded"]
    con.execute("create temp table phases as select * from read_csv($p)", {"p": str(H200 / "phases.csv")})
    got = dict(
        con.execute(
            """select p.job_id, avg(s.util_pct)
               from phases p join gpu_samples s
                 on s.ts >= p.start_ts::timestamptz at time zone 'UTC' and s.ts < p.end_ts::timestamptz at time zone 'UTC'
               group by 1 order by 1"""
        ).fetchall()
    )
    expected = _readme_phase_means()
    assert len(expected) == 7 and set(got) == set(expected)
    for job, mean in expected.items():
        assert abs(got[job] - mean) <= 1.0, (job, got[job], mean)


def test_units_values_host_and_gpu_hours(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    copy_into(CAPTURE, project / "landing" / "telemetry", "h200-node_2026-11-30.csv")
    ingest(con, config)
    row = con.execute(
        "select host, gpu_model, gpu_index, mem_total_mib, max(mem_used_mib), min(power_w), count(*) "
        "from gpu_samples group by all"
    ).fetchall()
    assert row == [("h200-node", "NVIDIA H200", 0, 143771.0, 105199.0, pytest.approx(76.5, abs=1.0), 342)]
    build_only(con, "gpu_hours")  # and the marts it reads (tests/helpers/marts.py)
    hours = con.execute("select hour, samples, coverage, util_max from gpu_hours").fetchall()
    assert len(hours) == 1
    hour, samples, coverage, util_max = hours[0]
    assert str(hour) == "2026-11-30 01:00:00" and samples == 342 and util_max == 100.0
    # 342 one-second samples cover 342 s of the hour
    assert coverage == pytest.approx(342 / 3600, rel=0.02)


def _rewrite(text: str, header: bool, units: bool) -> str:
    rows = list(csv.reader(text.splitlines(), skipinitialspace=True))
    out = []
    if header:
        out.append(", ".join(rows[0]))
    for r in rows[1:]:
        out.append(", ".join(re.sub(r" (%|MiB|W|MHz)$", "", v) if not units else v for v in r))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(("header", "units"), [(True, False), (False, True), (False, False)])
def test_noheader_and_nounits_variants_read_the_same(
    header: bool, units: bool, project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    landing = project / "landing" / "telemetry"
    (landing / "node-a.csv").write_text(
        _rewrite(CAPTURE.read_text(encoding="utf-8"), header, units), encoding="utf-8"
    )
    copy_into(CAPTURE, landing, "node-b.csv")
    report = ingest(con, config)
    assert [o.status for o in report.outcomes] == ["loaded", "loaded"]
    a, b = (
        con.execute(
            "select count(*), sum(util_pct), sum(mem_used_mib), round(sum(power_w), 2) from gpu_samples where host = $h",
            {"h": h},
        ).fetchall()[0]
        for h in ("node-a", "node-b")
    )
    assert a == b


def test_host_column_and_timezone_option(tmp_path: Path) -> None:
    from pipelines.config import load_config
    from tests.helpers.config import write_config

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "dump.csv").write_text(
        "timestamp, hostname, index, utilization.gpu [%]\n2026/06/01 12:00:00.000, gpu-7.example, 3, 42 %\n",
        encoding="utf-8",
    )
    write_config(
        tmp_path,
        """
        sources:
          - {name: t, kind: nvidia_smi, uri: t/, options: {timezone: Europe/Berlin}}
        """,
    )
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    ingest(con, config)
    assert con.execute("select ts::varchar, host, gpu_index, util_pct from gpu_samples").fetchall() == [
        ("2026-06-01 10:00:00", "gpu-7.example", 3, 42.0)
    ]
    con.close()


# a day that does not exist, and a two-digit year (strptime's %Y and DuckDB's cast read `26` as the year 26)
@pytest.mark.parametrize("bad", ["2026/13/45", "26/11/30", "26-11-30", "  26/11/30"])
def test_bad_timestamp_names_the_line(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection, bad: str
) -> None:
    landing = project / "landing" / "telemetry"
    lines = CAPTURE.read_text(encoding="utf-8").splitlines(keepends=True)
    assert "2026/11/30" in lines[5]
    lines[5] = lines[5].replace("2026/11/30", bad)
    (landing / "broken.csv").write_text("".join(lines), encoding="utf-8")
    copy_into(CAPTURE, landing, "fine.csv")
    report = ingest(con, config)
    outcome = {Path(o.uri).name: o for o in report.outcomes}
    assert outcome["fine.csv"].status == "loaded"
    assert outcome["broken.csv"].status == "rejected"
    assert "broken.csv:6: column 'timestamp': expected a timestamp" in (outcome["broken.csv"].error or "")


def _shuffled(text: str, order: list[int], sep: str = ", ") -> str:
    rows = [line.split(", ") for line in text.splitlines()]
    return "\n".join(sep.join(r[i] for i in order) for r in rows) + "\n"


def test_any_field_order_comma_only_and_repeated_headers(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    landing = project / "landing" / "telemetry"
    text = CAPTURE.read_text(encoding="utf-8")
    lines = text.splitlines()
    header = lines[0]
    # an appended capture: the header again in the middle, fields reversed, plain `,` separators
    appended = "\n".join([*lines[:100], header, *lines[100:]]) + "\n"
    n = len(header.split(", "))
    (landing / "node-a.csv").write_text(_shuffled(appended, list(range(n))[::-1], sep=","), encoding="utf-8")
    copy_into(CAPTURE, landing, "node-b.csv")
    report = ingest(con, config)
    assert [o.status for o in report.outcomes] == ["loaded", "loaded"], report.summary()
    a, b = (
        con.execute(
            "select count(*), sum(util_pct), sum(mem_used_mib), max(mem_total_mib), round(sum(power_w), 2), "
            "min(ts), max(ts), any_value(gpu_uuid), any_value(gpu_model), any_value(pstate) "
            "from gpu_samples where host = $h",
            {"h": h},
        ).fetchall()[0]
        for h in ("node-a", "node-b")
    )
    assert a == b and a[0] == 342


def test_unavailable_markers_become_null_and_total_from_used_plus_free(tmp_path: Path) -> None:
    from pipelines.config import load_config
    from tests.helpers.config import write_config

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "old-driver_2026.csv").write_text(
        "timestamp, index, uuid, name, utilization.gpu [%], memory.used [MiB], memory.free [MiB], "
        "power.draw [W], temperature.gpu, pstate\n"
        "2026/11/30 01:00:00.000, 0, GPU-a, Tesla T4, 17 %, 1000 MiB, 14000 MiB, [N/A], 40, P0\n"
        "2026/11/30 01:00:00.000, 1, GPU-b, Tesla T4, [Not Supported], [Unknown Error], 15000 MiB, "
        "[Insufficient Permissions], [N/A], [N/A]\n",
        encoding="utf-8",
    )
    write_config(tmp_path, "sources:\n  - {name: t, kind: nvidia_smi, uri: t/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    ingest(con, config)
    got = con.execute(
        "select host, gpu_index, util_pct, mem_used_mib, mem_total_mib, power_w, temperature_c, pstate "
        "from gpu_samples order by gpu_index"
    ).fetchall()
    con.close()
    assert got == [
        ("old-driver", 0, 17.0, 1000.0, 15000.0, None, 40.0, "P0"),
        ("old-driver", 1, None, None, None, None, None, None),
    ]


def test_last_line_cut_short_is_skipped_everything_else_loads(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    landing = project / "landing" / "telemetry"
    text = CAPTURE.read_text(encoding="utf-8")
    (landing / "cut.csv").write_text(text + "2026/11/30 01:48:12.348, NVIDIA H200, 0000", encoding="utf-8")
    # a cut line in the middle is not a cut-off capture: the file is rejected naming the line
    lines = text.splitlines()
    (landing / "middle.csv").write_text(
        "\n".join([*lines[:10], "2026/11/30 01:4", *lines[10:]]) + "\n", encoding="utf-8"
    )
    report = ingest(con, config)
    outcome = {Path(o.uri).name: o for o in report.outcomes}
    assert outcome["cut.csv"].status == "loaded" and outcome["cut.csv"].rows == 342
    assert outcome["middle.csv"].status == "rejected"
    assert "middle.csv:11: too few values (expected 16): the line is cut short" in (
        outcome["middle.csv"].error or ""
    )
    from pipelines.ingest.files import list_local
    from pipelines.ingest.readers.base import LoadContext
    from pipelines.ingest.readers.nvidia_smi import NvidiaSmiReader

    cut = next(f for f in list_local(config, config.sources[1]) if f.name == "cut.csv")
    con.execute("begin")
    result = NvidiaSmiReader().load(con, cut, LoadContext(config.sources[1], config, "x", None))
    con.execute("rollback")
    assert result.warnings == ["last line cut short (3 of 16 fields); skipped"]
    assert outcome["cut.csv"].repairs == result.warnings
    note = con.execute("select error from ingest_files where uri = $u", {"u": cut.uri}).fetchall()
    assert note == [("last line cut short (3 of 16 fields); skipped",)]


def test_batches_of_files_each_recorded_with_its_rows(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several batches (2 files each here), a bad file in the middle: it alone is rejected, in file order."""
    from pipelines.ingest.readers.nvidia_smi import NvidiaSmiReader

    monkeypatch.setattr(NvidiaSmiReader, "batch_files", 2)
    landing = project / "landing" / "telemetry"
    lines = CAPTURE.read_text(encoding="utf-8").splitlines(keepends=True)
    for i in range(5):
        copy_into(CAPTURE, landing, f"node-{i}.csv")
    (landing / "node-2.csv").write_text(
        "".join(lines[:50]) + "garbage, 1, 2\n" + "".join(lines[50:]), encoding="utf-8"
    )
    report = ingest(con, config)
    assert [(Path(o.uri).name, o.status, o.rows) for o in report.outcomes] == [
        ("node-0.csv", "loaded", 342), ("node-1.csv", "loaded", 342), ("node-2.csv", "rejected", 0),
        ("node-3.csv", "loaded", 342), ("node-4.csv", "loaded", 342),
    ]  # fmt: skip
    assert "node-2.csv:51: too few values (expected 16)" in (report.outcomes[2].error or "")
    ledger = con.execute(
        "select regexp_extract(uri, 'node-\\d'), status, rows from ingest_files order by uri"
    ).fetchall()
    assert ledger == [
        ("node-0", "loaded", 342), ("node-1", "loaded", 342), ("node-2", "rejected", None),
        ("node-3", "loaded", 342), ("node-4", "loaded", 342),
    ]  # fmt: skip
    counts = dict(con.execute("select host, count(*) from gpu_samples group by 1").fetchall())
    assert counts == {f"node-{i}": 342 for i in (0, 1, 3, 4)}
    # nothing changed: the loaded files are not read again; the bad one is tried again (still rejected)
    again = ingest(con, config).outcomes
    assert [o.status for o in again] == ["unchanged", "unchanged", "rejected", "unchanged", "unchanged"]


def test_gzipped_capture_reads_like_the_plain_one(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    import gzip

    landing = project / "landing" / "telemetry"
    (landing / "node-z.csv.gz").write_bytes(gzip.compress(CAPTURE.read_bytes()))
    # a name in upper case (a Windows share's copy) is gzip all the same: it was read as text before
    (landing / "NODE-X.CSV.GZ").write_bytes(gzip.compress(CAPTURE.read_bytes()))
    copy_into(CAPTURE, landing, "node-y.csv")
    report = ingest(con, config)
    assert [o.status for o in report.outcomes] == ["loaded"] * 3, report.summary()
    z, x, y = (
        con.execute(
            "select count(*), sum(util_pct), max(mem_used_mib), min(ts), max(ts) from gpu_samples where host = $h",
            {"h": h},
        ).fetchall()[0]
        for h in ("node-z", "NODE-X", "node-y")
    )
    assert z == x == y and z[0] == 342


def test_a_rejected_new_version_keeps_the_loaded_rows_and_the_next_good_version_replaces_them(
    tmp_path: Path,
) -> None:
    """A capture file rewritten with a bad line is rejected; the rows of the version loaded before stay,
    the ledger keeps holding them (so a removal or reconciliation still finds them), and the run after
    the file is fixed loads the new version in their place."""
    import os

    from pipelines.config import load_config
    from tests.helpers.config import write_config

    header = "timestamp, index, uuid, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"

    def line(minute: int, util: int) -> str:
        return f"2026/11/30 01:{minute:02d}:00.000, 0, GPU-a, NVIDIA H200, {util} %, 10 MiB, 100 MiB\n"

    (tmp_path / "t").mkdir()
    capture = tmp_path / "t" / "node1_2026.csv"
    capture.write_text(header + line(0, 10) + line(1, 20), encoding="utf-8")
    write_config(tmp_path, "sources:\n  - {name: t, kind: nvidia_smi, uri: t/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")

    def run() -> tuple[str, list[tuple], tuple]:
        con = new_warehouse(config.warehouse_path)
        try:
            [outcome] = ingest(con, config).outcomes
            samples = con.execute("select util_pct from gpu_samples order by ts").fetchall()
            ledger = con.execute("select status, error, rows from ingest_files").fetchone()
        finally:
            con.close()
        return outcome.status, samples, ledger

    assert run()[:2] == ("loaded", [(10.0,), (20.0,)])
    capture.write_text(header + line(0, 10) + line(1, 20) + "2026/13/45 01:02:00.000, 0, GPU-a, x, 5 %\n")
    os.utime(capture, (1_900_000_000, 1_900_000_000))
    status, samples, (ledger_status, error, rows) = run()
    assert status == "rejected"
    assert samples == [(10.0,), (20.0,)]  # nothing lost
    assert ledger_status == "loaded" and rows == 2
    assert error.startswith("new version rejected: ") and "node1_2026.csv:4" in error
    capture.write_text(header + line(0, 10) + line(1, 20) + line(2, 30), encoding="utf-8")
    os.utime(capture, (1_900_000_100, 1_900_000_100))
    status, samples, (ledger_status, error, rows) = run()
    assert (status, ledger_status, error, rows) == ("loaded", "loaded", None, 3)
    assert samples == [(10.0,), (20.0,), (30.0,)]
