"""The demo's Slurm records load through the slurm_sacct reader: every planned job, the failed one on its host."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

pytestmark = pytest.mark.e2e


def test_demo_jobs_loaded(demo_dir: tuple[Path, str]) -> None:
    directory, _ = demo_dir
    expected = json.loads((directory / "expected.json").read_text())
    con = duckdb.connect(str(directory / "warehouse" / "wastewatch.duckdb"), read_only=True)
    try:
        jobs = con.execute(
            "select job_id, state, hosts, gpus_requested, nodes, started_at, ended_at, team from jobs"
        ).fetchall()
        ledger = con.execute("select status, error from ingest_files where kind = 'slurm_sacct'").fetchall()
    finally:
        con.close()
    assert ledger and all(status == "loaded" for status, _ in ledger), ledger
    assert len(jobs) == expected["sizes"]["jobs"]
    assert len({j[0] for j in jobs}) == len(jobs)  # .batch/.extern steps folded into their job
    # the planted crash: a 20-hour job on gpu-h100-09 that failed Tuesday 06:00 of the report week
    # (sacct times are the demo's whole seconds: start +4 s, end -9 s), after which the host idles
    crash = [j for j in jobs if j[1] == "FAILED" and j[2] == ["gpu-h100-09"]]
    crashed_at = datetime(2026, 11, 24, 5, 59, 51)
    assert (datetime(2026, 11, 23, 10, 0, 4), crashed_at) in [(j[5], j[6]) for j in crash]
    idle_until = datetime(2026, 11, 26, 6, 0)  # then nothing runs there until Thursday 06:00
    assert not [j for j in jobs if j[2] == ["gpu-h100-09"] and j[5] < idle_until and j[6] > crashed_at]
    # every job ran, ended after it started, on 8 GPUs per node; the 2-node jobs name both hosts
    assert all(j[5] is not None and j[6] > j[5] and j[3] == 8 * j[4] == 8 * len(j[2]) for j in jobs)
    assert any(j[4] == 2 for j in jobs) and all(j[7] for j in jobs)
