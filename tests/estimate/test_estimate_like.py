"""`estimate(..., like=TYPE)`: a planned job like a recurring job type takes that type's failure rate and
checkpoint write time from the same SQL ADV003 reads (sql/advice/job_failures.sql,
sql/advice/checkpoint_write_time.sql), on tests/advice/test_cadence.py's hand-made warehouse."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from pipelines.advice.estimate import estimate, measured_mtbf, measured_write_seconds
from tests.advice.test_cadence import MON, _warehouse


def test_a_planned_job_like_a_type_takes_its_failure_rate_and_write_time(
    tmp_path: Path, empty_marts: Path
) -> None:
    con = _warehouse(tmp_path, empty_marts)
    try:
        # ten more finished pretrain-a runs: 14 x 24 h x 8 GPUs = 2,688 GPU-hours, 2 of them failed
        for n in range(10):
            s = MON - timedelta(days=20 - n)
            con.execute(
                "insert into jobs (job_id, scheduler, job_name, state, started_at, ended_at, gpus_requested, "
                "source, x_source_file, x_file_id) values ($id, 'slurm', $n, 'COMPLETED', $s, $e, 8, 'slurm', "
                "'b.txt', 'f')",
                {"id": str(900 + n), "n": f"pretrain-a-{900 + n}", "s": s, "e": s + timedelta(hours=24)},
            )
        mtbf = measured_mtbf(con, "pretrain-a")
        assert mtbf is not None and mtbf.value == pytest.approx(2688 / 2)
        assert "2 failed job(s)" in mtbf.source and "14 finished pretrain-a jobs" in mtbf.source
        assert measured_mtbf(con, "tuned-d") is None  # 288 GPU-hours: too few to measure
        write = measured_write_seconds(con, "pretrain-a")
        assert write is not None and write.value == 360 and "12 save(s)" in write.source
        dip = measured_write_seconds(con, "tuned-d")
        assert dip is not None and dip.value == 180 and "dip at 6 checkpoint write(s)" in dip.source
        assert measured_write_seconds(con, "eval-c") is None  # no checkpoint, no log
        e = estimate(7e9, 1e11, "H100", 8, 0.4, price=10.0, con=con, like="pretrain-a")
    finally:
        con.close()
    assert e.mtbf_gpu_hours == pytest.approx(1344) and e.job_mtbf_hours == pytest.approx(168)
    assert e.checkpoint_write_seconds == 360
    assert e.young_daly_interval_hours == pytest.approx((2 * 0.1 * 168) ** 0.5)
    assert any("checkpoint write time 360.0 s, measured for pretrain-a" in n for n in e.notes)


def test_the_cli_passes_like_through(tmp_path: Path, empty_marts: Path) -> None:
    """`wastewatch estimate --like TYPE` estimates with that type's measured write time, from the config's
    warehouse."""
    import json

    from click.testing import CliRunner

    from pipelines.cli import main

    _warehouse(tmp_path, empty_marts).close()  # tmp_path/w.duckdb
    config = tmp_path / "wastewatch.yaml"
    config.write_text("warehouse: w.duckdb\n", encoding="utf-8")
    args = ["--config", str(config), "estimate", "--params", "7e9", "--tokens", "1e11", "--gpu", "h100"]
    result = CliRunner().invoke(
        main, [*args, "--gpus", "8", "--price", "10", "--like", "pretrain-a", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["checkpoint_write_seconds"] == 360
