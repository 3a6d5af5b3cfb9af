"""`engine: spark` with the GPU roll-up on Spark (`int_gpu_slices` in spark.marts): the demo's nvidia-smi
captures read by Spark where they lie and sliced by job boundaries give the roll-up DuckDB gives, row for
row (DOUBLEs to 1e-9), and so the same hourly GPU marts; a capture changed since its ingest fails naming it."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from pipelines.config import Config, load_config
from pipelines.errors import WarehouseError
from pipelines.ingest import ingest
from pipelines.transform.build import build_mart, build_mart_with_rollup
from pipelines.warehouse import connect
from tests.helpers import spark as spark_helper

SLICE_KEYS = ["day", "host", "gpu_id", "hour", "slice_start"]


def test_spark_rollup_equals_duckdb_on_the_demo(
    spark: Any, demo_dir: tuple[Path, str], tmp_path: Path
) -> None:
    config = spark_helper.demo_copy(demo_dir[0], tmp_path)
    con = connect(config.warehouse_path)
    try:
        for t in ("int_gpu_slices", "gpu_job_hours", "gpu_hours"):
            con.execute(f"create table expected_{t} as from {t}")
        # forget what was rolled up: every day is rolled up again, on Spark
        con.execute("delete from int_incremental_days")
        build_mart(con, "gpu_job_hours", config)
        build_mart(con, "gpu_hours", config)
        assert (
            tmp_path / "marts" / "int_gpu_slices"
        ).is_dir()  # Spark wrote there (and the rows were copied)
        assert list((tmp_path / "marts" / "int_gpu_slices").iterdir()) == []
        n = spark_helper.assert_same_rows(con, "int_gpu_slices", "expected_int_gpu_slices", SLICE_KEYS)
        assert n > 1000
        # the demo slices hours at job starts and ends, and attributes them
        sliced = con.execute(
            "select count(*) filter (where slice_end - slice_start < interval 1 hour), "
            "count(job_key), count(distinct day) from int_gpu_slices"
        ).fetchall()[0]
        assert sliced[0] > 0 and sliced[1] > 0 and sliced[2] == 7, sliced
        spark_helper.assert_same_rows(
            con, "gpu_job_hours", "expected_gpu_job_hours", ["hour", "gpu_id", "host", "job_key"]
        )
        spark_helper.assert_same_rows(con, "gpu_hours", "expected_gpu_hours", ["hour", "gpu_id", "host"])
    finally:
        con.close()


SMI_HEADER = (
    "timestamp, name, pci.bus_id, uuid, index, utilization.gpu [%], utilization.memory [%], "
    "memory.total [MiB], memory.used [MiB], memory.free [MiB], power.draw [W], power.limit [W], pstate"
)


def _smi_line(ts: str, index: int, util: str, sep: str = ", ", pad: str = "") -> str:
    values = [
        ts, "NVIDIA H100 80GB HBM3", f"00000000:0{index}:00.0", f"GPU-{index:04d}-quirk", str(index), util,
        "12 %", "81559 MiB", f"{1000 + index} MiB", "[N/A]", f"{300 + index}.25 W", "700.00 W", "P0",
    ]  # fmt: skip
    return sep.join(f"{pad}{v}{pad}" for v in values)


def _quirky_captures() -> dict[str, str | Path]:
    """Captures with what real ones have: a byte order mark, CRLF, a repeated header, a blank line, a
    last line cut short, 1-digit milliseconds and ISO times, padded `,` separators, gzip, a path with
    blanks and `%`, no header, a local timezone through the hour clocks go back, a host column."""
    from datetime import datetime, timedelta

    a = ["\ufeff" + SMI_HEADER]
    t = datetime(2026, 11, 23, 10, 0, 0, 500000)
    for i in range(90):
        stamp = t + timedelta(seconds=60 * i)
        ts = f"{stamp:%Y/%m/%d %H:%M:%S}.{stamp.microsecond // 100000}"  # `.5`: one digit
        if i == 40:
            ts = f"{stamp:%Y-%m-%dT%H:%M:%S}"  # an ISO time the strptime form does not read
        if i == 45:
            a.append(SMI_HEADER)  # a capture appended to the file repeats its header
        if i == 50:
            a.append("")
        for g in (0, 1):
            a.append(_smi_line(ts, g, "[N/A]" if i == 7 else f"{(i * 7 + g * 13) % 101} %"))
    a_text = "\r\n".join(a) + "\r\n" + "2026/11/23 11:30:00.000, NVIDIA H1"  # killed while writing

    b = [SMI_HEADER.replace(", ", ",")]
    for i in range(30):
        stamp = datetime(2026, 11, 23, 23, 50) + timedelta(seconds=45 * i)  # past midnight: two days
        b.append(_smi_line(f"{stamp:%Y/%m/%d %H:%M:%S}.125", 0, f"{i * 3} %", sep=",", pad="\u00a0 "))

    ny = []
    for i in range(16):
        stamp = datetime(2026, 11, 1, 0, 30) + timedelta(minutes=10 * i)  # 01:00-02:00 happens twice
        ny.append(f"{stamp:%Y/%m/%d %H:%M:%S}.000, 0, {i * 5} %, {2000 + i} MiB, 250.5 W")

    hosts = ["timestamp, hostname, index, utilization.gpu [%]"]
    for i in range(20):
        for h in ("alpha.cluster.local", "beta"):
            hosts.append(f"2026/11/24 08:{i:02d}:07.250, {h}, 0, {i * 4 % 100} %")

    # what the ingest reads and Java would read otherwise: an index written as a decimal, Java-only number
    # forms (`5d`, a hex float: NULL in both), upper-case Greek and Turkish host names (Java lower-cases Σ
    # at a word's end as ς and İ as two characters), glob characters in the file's name
    odd = [
        "timestamp, hostname, index, utilization.gpu [%], utilization.memory [%], power.limit [W]",
        "2026/11/25 05:00:00.000, ΝΟΔΟΣ, 1.0, 40 %, 5d %, 0x1p10 W",
        "2026/11/25 05:01:00.000, ΝΟΔΟΣ, 1.0, 41 %, 7 %, 700 W",
        "2026/11/25 05:00:00.000, İSTANBUL, 2.5, 42 %, 7 %, 700 W",
    ]

    import gzip as gz

    return {
        "smi/odd[1]{a,b}_2026-11-25.csv": "\n".join(odd) + "\n",
        # gzip under an upper-case name: the ingest reads it; Hadoop would not inflate it (handed over)
        "smi/gpu-c_2026-11-23.CSV.GZ": gz.compress(("\n".join(b[:5]) + "\n").encode()),
        "smi/h200_2026-11-30.csv": FIXTURE_H200,
        "smi/gpu-a_2026-11-23.csv": a_text,
        "smi/gpu-b 1%+x_2026-11-23.csv.gz": gz.compress(("\n".join(b) + "\n").encode()),
        "ny/racks/node9-2026-11-01.log": "\n".join(ny) + "\n",
        "hosts/both.csv": "\n".join(hosts) + "\n",
        "dcgm/gpu-node-a_20261130T014200Z.prom": FIXTURE_DCGM,
    }


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "telemetry"
FIXTURE_H200 = FIXTURES / "h200" / "nvidia_smi_query_gpu.csv"
FIXTURE_DCGM = FIXTURES / "dcgm" / "gpu-node-a_20261130T014200Z.prom"
QUIRKY_SOURCES = """\
  - {name: smi, kind: nvidia_smi, uri: smi/}
  - name: smi-ny
    kind: nvidia_smi
    uri: ny/
    options:
      timezone: America/New_York
      fields: [timestamp, index, utilization.gpu, memory.used, power.draw]
      host_pattern: '(?P<host>node\\d+)'
  - {name: smi-hosts, kind: nvidia_smi, uri: hosts/}
  - {name: dcgm, kind: dcgm, uri: dcgm/}
"""


def _quirky_project(tmp_path: Path, more: dict[str, str] | None = None) -> Config:
    """The captures (and `more`) ingested into a new warehouse under tmp_path; its config on Spark."""
    from tests.helpers.config import write_config

    for name, content in {**_quirky_captures(), **(more or {})}.items():
        dst = tmp_path / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copyfile(content, dst)
        elif isinstance(content, bytes):
            dst.write_bytes(content)
        else:
            dst.write_bytes(content.encode())
    write_config(tmp_path, "sources:\n" + QUIRKY_SOURCES)
    config = load_config(tmp_path / "wastewatch.yaml")
    con = connect(config.warehouse_path)
    try:
        report = ingest(con, config)
        assert report.exit_code == 0, report.summary()
    finally:
        con.close()
    return config.model_copy(update={"engine": "spark", "spark": spark_helper.settings(tmp_path / "marts")})


def test_spark_rollup_reads_captures_as_the_reader_does(spark: Any, tmp_path: Path) -> None:
    config = _quirky_project(tmp_path)
    (tmp_path / "hosts" / "both.csv").unlink()  # removed once ingested: its samples are handed over
    con = connect(config.warehouse_path)
    try:
        # `resources` is the first mart that reads the roll-up: building it rolls the samples up
        build_mart(con, "resources", config.model_copy(update={"engine": "duckdb"}))
        con.execute("create table expected as from int_gpu_slices")
        con.execute("delete from int_incremental_days")
        build_mart(con, "resources", config)
        n = spark_helper.assert_same_rows(con, "int_gpu_slices", "expected", SLICE_KEYS)
        by_host = dict(con.execute("select host, sum(samples) from int_gpu_slices group by 1").fetchall())
        # 90 minutes of 2 GPUs less the cut line; 30 lines over midnight; 16 local times, 6 of them in the
        # hour that happens twice; the host column's two hosts; the real H200 capture; the DCGM scrape
        assert by_host["gpu-a"] == 180 and by_host["gpu-b 1%+x"] == 30 and by_host["gpu-c"] == 4, by_host
        assert by_host["node9"] == 16 and by_host["alpha.cluster.local"] == 20 and by_host["beta"] == 20
        assert by_host["h200"] == 342 and by_host["gpu-node-a"] > 0, by_host
        assert n > 10

        # the next night: a new day's capture; Spark rolls up that day alone, the others stay as they are
        lines = [SMI_HEADER] + [_smi_line(f"2026/11/25 03:{m:02d}:00.000", 0, f"{m} %") for m in range(30)]
        (tmp_path / "smi" / "gpu-a_2026-11-25.csv").write_text("\n".join(lines) + "\n")
        ingest(con, config)
        _, stats = build_mart_with_rollup(con, "resources", config)
        assert stats[0].days_rebuilt == [date(2026, 11, 25)]
        con.execute("create table spark_built as from int_gpu_slices")
        con.execute("delete from int_incremental_days")
        build_mart(con, "resources", config.model_copy(update={"engine": "duckdb"}))
        assert spark_helper.assert_same_rows(con, "spark_built", "int_gpu_slices", SLICE_KEYS) == n + 1
    finally:
        con.close()


def test_spark_rollup_fails_naming_a_capture_changed_since_its_ingest(spark: Any, tmp_path: Path) -> None:
    config = _quirky_project(tmp_path)
    capture = tmp_path / "smi" / "gpu-a_2026-11-23.csv"
    # a value rewritten where the capture lies after the ingest: the warehouse no longer holds what it says
    capture.write_bytes(capture.read_bytes().replace(b"2026/11/23 10:00:00.5,", b"2026/11/23 10:00:01.5,"))
    con = connect(config.warehouse_path)
    try:
        with pytest.raises(
            WarehouseError, match=r"gpu-a_2026-11-23.csv: Spark read 180 samples of 2026-11-23"
        ):
            build_mart(con, "resources", config)
        assert con.execute("select count(*) from int_gpu_slices").fetchall() == [(0,)]
        # and the same warehouse rolls up on DuckDB from the rows it holds
        build_mart(con, "resources", config.model_copy(update={"engine": "duckdb"}))
        assert con.execute("select sum(samples) from int_gpu_slices where host = 'gpu-a'").fetchall() == [
            (180,)
        ]
    finally:
        con.close()


def test_spark_rollup_fails_naming_a_capture_it_cannot_read(spark: Any, tmp_path: Path) -> None:
    config = _quirky_project(tmp_path)
    capture = tmp_path / "smi" / "gpu-b 1%+x_2026-11-23.csv.gz"
    whole = capture.read_bytes()
    con = connect(config.warehouse_path)
    try:
        # the gzip stream cut short where it lies: before its first line ends (the layout cannot be read),
        # then further on (Spark's read of the lines fails)
        for cut, message in (
            (
                40,
                r"gpu-b 1%\+x_2026-11-23.csv.gz: Spark's roll-up cannot read this capture's "
                r"first line",
            ),
            (len(whole) * 2 // 3, r"Spark could not roll up the telemetry .*gpu-b"),
        ):
            capture.write_bytes(whole[:cut])
            with pytest.raises(WarehouseError, match=message) as failed:
                build_mart(con, "resources", config)
            assert "engine: duckdb" in str(failed.value)
            assert con.execute("select count(*) from int_gpu_slices").fetchall() == [(0,)]
            builds = tmp_path / "marts" / "int_gpu_slices"
            assert not builds.exists() or list(builds.iterdir()) == []  # nothing left behind
    finally:
        con.close()


def test_spark_rollup_slices_hours_at_jobs_and_cuts_a_metrics_stores_hours(
    spark: Any, tmp_path: Path
) -> None:
    """Jobs starting and ending inside hours (one naming its GPU, one running on), on captures and on a
    metrics store's hourly rows (named and unnamed GPUs, their labels ordering them): Spark slices and
    attributes them as DuckDB does."""
    config = _quirky_project(tmp_path)
    con = connect(config.warehouse_path)
    try:
        jobs = [
            ("j1", "2026-11-23 10:17:30", "2026-11-23 10:48:00.5", ["gpu-a"], None),
            ("j2", "2026-11-23 10:30:00", None, ["gpu-a"], [1]),  # still running, on GPU 1 only
            ("j3", "2026-11-24 08:05:00", "2026-11-24 08:12:00", ["alpha", "beta"], []),
            ("j4", "2026-11-30 00:20:00", "2026-11-30 02:50:00", ["store-node"], None),
            ("j5", "2026-11-25 05:00:30", "2026-11-25 05:30:00", ["ΝΟΔΟΣ.cluster"], [1]),
        ]
        for job_id, start, end, hosts, indices in jobs:
            con.execute(
                "insert into jobs (job_id, scheduler, state, started_at, ended_at, hosts, gpu_indices, source, "
                "x_source_file, x_file_id) values ($id, 'slurm', 'COMPLETED', $s, $e, $h, $g, 'sacct', 'x', "
                "'f-jobs')",
                {"id": job_id, "s": start, "e": end, "h": hosts, "g": indices},
            )
        for hour in range(4):
            for uuid, index, labels in (
                ("GPU-s0", 0, None),
                (None, None, {"pod": "b"}),
                (None, None, {"pod": "a"}),
            ):
                con.execute(
                    "insert into gpu_hourly_stats (hour, host, gpu_uuid, gpu_index, samples, observed_s, "
                    "util_samples, util_sum, util_sumsq, util_p95, util_max, power_mean_w, labels, source, "
                    "x_source_file, x_file_id, x_hour_date) values ($hour, 'store-node', $uuid, $index, 61, "
                    "3600, 59, 2950.5, 59 * 2600.25, 80.5, 90, 300, $labels, 'prom', 'http://p', 'f-prom', "
                    "'2026-11-30')",
                    {"hour": f"2026-11-30 0{hour}:00", "uuid": uuid, "index": index, "labels": labels},
                )
        build_mart(con, "resources", config.model_copy(update={"engine": "duckdb"}))
        con.execute("create table expected as from int_gpu_slices")
        con.execute("delete from int_incremental_days")
        build_mart(con, "resources", config)
        spark_helper.assert_same_rows(con, "int_gpu_slices", "expected", SLICE_KEYS)
        cut = con.execute(
            "select count(*) filter (where slice_end - slice_start < interval 1 hour), count(job_key), "
            "count(*) filter (where host = 'store-node' and job_key is not null), max(jobs_running) "
            "from int_gpu_slices"
        ).fetchall()[0]
        assert cut[0] > 5 and cut[1] > 5 and cut[2] > 3 and cut[3] == 2, cut
    finally:
        con.close()


def test_spark_rollup_fails_naming_a_capture_it_reads_otherwise(spark: Any, tmp_path: Path) -> None:
    """A utilisation written `4_1` (DuckDB's cast reads 41, Java's parser nothing): the mart fails naming the
    file, the day and the figure, rather than rolling up the hour without it."""
    capture = "2026/11/30 10:00:00.000, 0, 40 %\n2026/11/30 10:01:00.000, 0, 4_1 %\n"
    config = _quirky_project(
        tmp_path, {"smi/under_2026-11-30.csv": "timestamp, index, utilization.gpu [%]\n" + capture}
    )
    con = connect(config.warehouse_path)
    try:
        with pytest.raises(
            WarehouseError,
            match=r"under_2026-11-30.csv: Spark read 2 samples of 2026-11-30 .*differing: util_n",
        ):
            build_mart(con, "resources", config)
    finally:
        con.close()
