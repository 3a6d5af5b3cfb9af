"""`nvidia-smi dmon -o DT` on the real H200 capture, header changes, a capture cut mid-line, bad lines."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import pytest

from pipelines.config import load_config
from pipelines.ingest import IngestReport, ingest
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import H200

DMON = H200 / "nvidia_smi_dmon.txt"


def _run(tmp_path: Path, files: dict[str, str | Path], options: str = "") -> tuple[IngestReport, list[tuple]]:
    (tmp_path / "dmon").mkdir(exist_ok=True)
    for name, content in files.items():
        if isinstance(content, Path):
            shutil.copyfile(content, tmp_path / "dmon" / name)
        else:
            (tmp_path / "dmon" / name).write_text(content, encoding="utf-8")
    write_config(tmp_path, f"sources:\n  - {{name: dmon, kind: nvidia_smi_dmon, uri: dmon/{options}}}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        report = ingest(con, config)
        got = con.execute(
            "select host, count(*), min(ts), max(ts), round(avg(util_pct), 2), max(mem_used_mib), "
            "round(avg(power_w), 2), max(sm_clock_mhz), max(mem_clock_mhz), max(temperature_c), "
            "any_value(gpu_index), count(mem_util_pct) from gpu_samples group by 1 order by 1"
        ).fetchall()
    finally:
        con.close()
    return report, got


def test_real_capture_agrees_with_the_capture_readme(tmp_path: Path) -> None:
    report, got = _run(tmp_path, {"h200-node_2026-11-30.txt": DMON})
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    (row,) = got
    # 357 lines: 16 header lines, 341 one-second samples of GPU 0
    assert row[:4] == ("h200-node", 341, datetime(2026, 11, 30, 1, 42, 29), datetime(2026, 11, 30, 1, 48, 12))
    assert (row[5], row[7], row[8], row[10], row[11]) == (105199.0, 1980.0, 3201.0, 0, 341)
    # per phase, dmon's sm % is the README's mean util % (measured by --query-gpu on the same GPU)
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    means = dict(
        con.execute(
            """select p.job_id, avg(s.util_pct) from read_csv($p) p join gpu_samples s
               on s.ts >= p.start_ts::timestamptz at time zone 'UTC' and s.ts < p.end_ts::timestamptz at time zone 'UTC'
               group by 1""",
            {"p": str(H200 / "phases.csv")},
        ).fetchall()
    )
    con.close()
    readme = {
        "job-000": 0.0,
        "job-001": 61.7,
        "job-002": 24.0,
        "job-003": 28.1,
        "job-004": 0.0,
        "job-005": 57.3,
        "job-006": 0.0,
    }
    assert set(means) == set(readme)
    for job, mean in readme.items():
        assert abs(means[job] - mean) <= 8.0, (job, means[job], mean)  # 1-s samples, phases of 14-103 s


def test_header_change_timezone_and_unavailable_values(tmp_path: Path) -> None:
    text = (
        "#Date        Time         gpu    pwr     sm    mem\n"
        "#YYYYMMDD    HH:MM:SS     Idx      W      %      %\n"
        " 20260601    12:00:00       0     70      5      -\n"
        " 20260601    12:00:00       1      -     10      2\n"
        "# a restarted capture with other groups (-s uc)\n"
        "#Date        Time         gpu     sm    mem    enc    dec   mclk   pclk\n"
        "#YYYYMMDD    HH:MM:SS     Idx      %      %      %      %    MHz    MHz\n"
        " 20260601    12:00:01       0     99     40      0      0   3201   1980\n"
    )
    report, got = _run(tmp_path, {"box7.txt": text}, ", options: {timezone: Europe/Berlin}")
    assert [o.status for o in report.outcomes] == ["loaded"], report.summary()
    (row,) = got
    assert row[:4] == ("box7", 3, datetime(2026, 6, 1, 10, 0), datetime(2026, 6, 1, 10, 0, 1))
    assert (row[4], row[7], row[8], row[11]) == (38.0, 1980.0, 3201.0, 2)  # '-' read as NULL, not 0


def test_capture_cut_mid_line_keeps_every_complete_line(tmp_path: Path) -> None:
    text = DMON.read_text(encoding="utf-8")
    cut = text + " 20261130    01:48:13       0    118     32"  # the capture stopped while writing
    report, got = _run(tmp_path, {"cut.txt": cut, "whole.txt": DMON})
    assert [o.status for o in report.outcomes] == ["loaded", "loaded"], report.summary()
    assert {r[0]: r[1] for r in got} == {"cut": 341, "whole": 341}
    # a documented skip, counted: in the run summary and as the file's ledger note
    assert report.outcomes[0].repairs == ["line 358: last line cut short, too few values (5 of 17); skipped"]
    assert "cut.txt: line 358: last line cut short" in report.summary()


@pytest.mark.parametrize(
    ("line", "where", "problem"),
    [
        (" 20261130    01:42:3x       0     77     30     34      0      0      0      0      0      0   3201    345      0      1      0",
         "bad.txt:5: column 'Date/Time'", "expected YYYYMMDD HH:MM:SS, found '20261130 01:42:3x'"),
        (" 20261130    01:42:30       0     7O     30     34      0      0      0      0      0      0   3201    345      0      1      0",
         "bad.txt:5: column 'pwr'", "not a number: '7O'"),
        (" 20261130    01:42:30       0     77     30",
         "bad.txt:5", "too few values (5 of 17)"),
    ],
)  # fmt: skip
def test_bad_line_in_the_middle_rejects_the_file_naming_it(
    tmp_path: Path, line: str, where: str, problem: str
) -> None:
    lines = DMON.read_text(encoding="utf-8").splitlines()
    bad = "\n".join([*lines[:4], line, *lines[4:]]) + "\n"
    report, got = _run(tmp_path, {"bad.txt": bad, "good.txt": DMON})
    outcome = {Path(o.uri).name: o for o in report.outcomes}
    assert outcome["good.txt"].status == "loaded" and [r[:2] for r in got] == [
        ("good.txt".split(".")[0], 341)
    ]
    assert outcome["bad.txt"].status == "rejected"
    assert where in (outcome["bad.txt"].error or "") and problem in (outcome["bad.txt"].error or "")


def test_dmon_without_date_time_is_rejected(tmp_path: Path) -> None:
    text = "# gpu    pwr  gtemp\n# Idx      W      C\n    0     69     31\n"
    report, _ = _run(tmp_path, {"n.txt": text})
    assert report.outcomes[0].status == "rejected"
    assert "n.txt:3: no Date and Time columns: capture with `nvidia-smi dmon -o DT`" in (
        report.outcomes[0].error or ""
    )
