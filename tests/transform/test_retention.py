"""The retention of raw GPU samples (`retention: gpu_samples_days`) on real DuckDB files: rolled-up days
older than the retention are dropped from gpu_samples, recorded in gpu_samples_pruned, and their hours stay
in the roll-up and the marts exactly as they were; a day not rolled up yet is never dropped.

Telemetry goes through the real nvidia_smi reader (tests/transform/test_gpu_marts.py writes its files); the
roll-up and the GPU marts are built alone (tests/helpers/marts.py), the report's test builds every mart.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import Config, ConfigError, load_config
from pipelines.health.coverage import no_data_message
from pipelines.ingest import ingest
from pipelines.transform.retention import prune_samples, retention_cutoff
from pipelines.warehouse import rows
from rules import Window
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.marts import build_only
from tests.transform.test_gpu_marts import T0, add_job, smi_file

DAYS = [date(2026, 11, 23), date(2026, 11, 24), date(2026, 11, 25)]
# with 8 days kept, a run on 2026-12-02 keeps 2026-11-24 on: 2026-11-23 goes
TODAY = date(2026, 12, 2)


def _with_retention(project: Path, days: int | None) -> Config:
    keep = f"retention: {{gpu_samples_days: {days}}}" if days is not None else ""
    (project / "wastewatch.yaml").write_text(
        f"{keep}\nsources:\n  - {{name: smi, kind: nvidia_smi, uri: landing/telemetry/}}\n", encoding="utf-8"
    )
    return load_config(project / "wastewatch.yaml")


def _three_days(project: Path) -> None:
    for d in range(3):
        smi_file(project / "landing" / "telemetry" / f"gpu-a_{d}.csv", T0 + timedelta(days=d), 90, gpus=2)


@contextmanager
def _ingested(project: Path, days: int | None) -> Iterator[tuple[Config, duckdb.DuckDBPyConnection]]:
    """Three days of two GPUs' samples ingested (no marts built yet) under a retention of `days`."""
    config = _with_retention(project, days)
    _three_days(project)
    con = new_warehouse(config.warehouse_path)
    try:
        ingest(con, config)
        yield config, con
    finally:
        con.close()


def _marts(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[object, ...]]]:
    return {
        t: con.execute(f"select * from {t} order by all").fetchall()  # noqa: S608 - our table names
        for t in ("int_gpu_slices", "gpu_job_hours", "gpu_hours")
    }


def _sample_days(con: duckdb.DuckDBPyConnection) -> dict[date, int]:
    return {
        r["d"]: r["n"]
        for r in rows(con, "select x_sample_date as d, count(*) as n from gpu_samples group by 1")
    }


def test_rolled_up_days_past_the_retention_are_dropped_and_their_hours_kept(project: Path) -> None:
    with _ingested(project, 8) as (config, con):
        add_job(con, "j1", "gpu-a", T0 + timedelta(minutes=30), T0 + timedelta(minutes=75), gpu_indices=[0])
        build_only(con, "gpu_hours")
        before = _marts(con)
        assert _sample_days(con) == {d: 180 for d in DAYS}
        assert retention_cutoff(config, TODAY) == date(2026, 11, 24)

        stats = prune_samples(con, config, TODAY)
        assert (stats.before, stats.days, stats.rows) == (date(2026, 11, 24), 1, 180)
        assert _sample_days(con) == {DAYS[1]: 180, DAYS[2]: 180}
        assert con.execute("select day, samples, first_ts, last_ts from gpu_samples_pruned").fetchall() == [
            (DAYS[0], 180, T0 + timedelta(seconds=0.31), T0 + timedelta(minutes=89, seconds=0.31))
        ]
        # the next runs roll nothing up again and remove nothing: the dropped day's hours are as they were
        build_only(con, "gpu_hours")
        assert _marts(con) == before
        # a second pass finds nothing more to drop
        assert prune_samples(con, config, TODAY).rows == 0
        # a job record changing later cuts only the days whose samples are kept
        con.execute("update jobs set ended_at = $e where job_id = 'j1'", {"e": T0 + timedelta(minutes=60)})
        build_only(con, "gpu_hours")
        assert _marts(con)["int_gpu_slices"] == before["int_gpu_slices"]


def test_late_samples_of_a_dropped_day_are_dropped_in_turn_and_counted(project: Path) -> None:
    with _ingested(project, 8) as (config, con):
        build_only(con, "gpu_hours")
        prune_samples(con, config, TODAY)
        before = _marts(con)
        # a late file for the dropped day (another host): loaded, never rolled up, dropped by the next pass
        smi_file(project / "landing" / "telemetry" / "gpu-b_0.csv", T0, 30, gpus=1)
        ingest(con, config)
        assert _sample_days(con)[DAYS[0]] == 30
        build_only(con, "gpu_hours")
        assert _marts(con) == before
        assert prune_samples(con, config, TODAY).rows == 30
        assert DAYS[0] not in _sample_days(con)
        assert con.execute("select samples from gpu_samples_pruned").fetchall() == [(210,)]


def test_a_day_not_rolled_up_yet_is_never_dropped(project: Path) -> None:
    with _ingested(project, 8) as (config, con):
        # no marts built: nothing is rolled up
        assert prune_samples(con, config, TODAY).rows == 0
        assert _sample_days(con) == {d: 180 for d in DAYS}


def test_without_a_retention_every_sample_is_kept(project: Path) -> None:
    with _ingested(project, None) as (config, con):
        build_only(con, "gpu_hours")
        assert prune_samples(con, config, date(2030, 1, 1)).before is None
        assert sum(_sample_days(con).values()) == 540


def test_a_new_rollup_shape_keeps_the_dropped_days_hours(project: Path) -> None:
    with _ingested(project, 8) as (config, con):
        build_only(con, "gpu_hours")
        prune_samples(con, config, TODAY)
        kept = con.execute(
            "select * exclude (pod) from int_gpu_slices where hour::date = $d order by all", {"d": DAYS[0]}
        ).fetchall()
        assert len(kept) == 4  # 2 GPUs x 2 hours
        # an older wastewatch's roll-up without `pod`: the table restarts, the dropped day is carried over
        con.execute("alter table int_gpu_slices drop column pod")
        con.execute("update int_layer_digest set digest = 'older'")
        build_only(con, "gpu_hours")
        assert "pod" in {r["column_name"] for r in rows(con, "describe int_gpu_slices")}
        assert (
            con.execute(
                "select * exclude (pod) from int_gpu_slices where hour::date = $d order by all",
                {"d": DAYS[0]},
            ).fetchall()
            == kept
        )
        assert con.execute("select count(distinct hour::date) from int_gpu_slices").fetchall() == [(3,)]


def test_the_report_still_sees_telemetry_in_a_week_whose_samples_were_dropped(project: Path) -> None:
    # the week's extent is read from the landed tables (sql/reports/rpt_data_span.sql), no mart
    with _ingested(project, 8) as (config, con):
        con.execute("delete from gpu_samples")  # as if the whole week had been dropped
        con.execute(
            "insert into gpu_samples_pruned values ($d, 540, $a, $b, $a)",
            {"d": DAYS[0], "a": T0, "b": T0 + timedelta(days=2, minutes=89)},
        )
    assert no_data_message(config, Window.iso_week("2026-W48")) is None
    assert no_data_message(config, Window.iso_week("2026-W47")) is not None


@pytest.mark.parametrize("days", [0, 7, -1])
def test_a_retention_shorter_than_the_freshness_window_is_refused(project: Path, days: int) -> None:
    _with_retention(project, 8)
    (project / "wastewatch.yaml").write_text(
        f"retention:\n  gpu_samples_days: {days}\nsources: []\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="gpu_samples_days"):
        load_config(project / "wastewatch.yaml")


def test_the_ingest_run_drops_old_samples_and_says_so(project: Path) -> None:
    """End to end: `wastewatch ingest` with a retention, on samples from weeks ago (dated from today)."""
    today = datetime.now().replace(hour=0, minute=0, second=0, microsecond=0)
    _with_retention(project, 8)
    for d in (20, 19, 2):
        smi_file(project / "landing" / "telemetry" / f"gpu-a_{d}.csv", today - timedelta(days=d), 60, gpus=1)
    result = CliRunner().invoke(main, ["--config", str(project / "wastewatch.yaml"), "ingest"])
    assert result.exit_code == 0, result.output
    first = (today - timedelta(days=8)).date().isoformat()
    assert (
        f"gpu_samples: 120 sample(s) of 2 day(s) before {first} dropped (retention: 8 days)" in result.output
    )
    con = duckdb.connect(str(project / "warehouse" / "wastewatch.duckdb"), read_only=True)
    try:
        assert con.execute("select count(*) from gpu_samples").fetchall() == [(60,)]
        assert con.execute("select count(*), sum(samples) from gpu_samples_pruned").fetchall() == [(2, 120)]
        assert con.execute("select count(distinct hour::date) from gpu_hours").fetchall() == [(3,)]
    finally:
        con.close()
