"""nvidia-smi --query-gpu CSV on the real H200 capture, in its header/unit variants."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import duckdb
import pytest

from pipelines.config import Config
from pipelines.ingest import ingest
from pipelines.transform import build_marts
from tests.conftest import H200, copy_into

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
    build_marts(con)
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
    from pipelines.warehouse import connect
    from tests.conftest import write_config

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
    con = connect(config.warehouse_path)
    ingest(con, config)
    assert con.execute("select ts::varchar, host, gpu_index, util_pct from gpu_samples").fetchall() == [
        ("2026-06-01 10:00:00", "gpu-7.example", 3, 42.0)
    ]
    con.close()


def test_bad_timestamp_names_the_line(project: Path, config: Config, con: duckdb.DuckDBPyConnection) -> None:
    landing = project / "landing" / "telemetry"
    lines = CAPTURE.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[5] = lines[5].replace("2026/11/30", "2026/13/45")
    (landing / "broken.csv").write_text("".join(lines), encoding="utf-8")
    copy_into(CAPTURE, landing, "fine.csv")
    report = ingest(con, config)
    outcome = {Path(o.uri).name: o for o in report.outcomes}
    assert outcome["fine.csv"].status == "loaded"
    assert outcome["broken.csv"].status == "rejected"
    assert "broken.csv:6: column 'timestamp': expected a timestamp" in (outcome["broken.csv"].error or "")
