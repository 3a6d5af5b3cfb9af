"""The GPU marts as Dagster assets: a real in-process run over the H200 capture and its phases, twice.

The second run finds nothing new: the roll-up and the day-incremental marts rebuild no day, and say so
in their metadata (what a user sees in the asset's materialisation history).
"""

from __future__ import annotations

from pathlib import Path

from pipelines.runner import run_ingest
from tests.helpers.config import write_config
from tests.helpers.paths import H200, copy_into


def test_gpu_marts_report_what_they_rebuilt(tmp_path: Path) -> None:
    copy_into(
        H200 / "nvidia_smi_query_gpu.csv", tmp_path / "landing" / "telemetry", "h200-lab_2026-11-30.csv"
    )
    copy_into(H200 / "phases.csv", tmp_path / "landing" / "jobs")
    config_path = write_config(
        tmp_path,
        """
        sources:
          - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
          - name: phases
            kind: jobs_csv
            uri: landing/jobs/
            options:
              columns: {started_at: start_ts, ended_at: end_ts, state: exit_status, job_name: phase}
              host: h200-lab
        """,
    )
    first = run_ingest(config_path)
    assert first.success, first.failures
    slices = first.metadata["gpu_job_hours"]
    assert slices["dagster/row_count"] == 9  # the capture's hour cut by 7 jobs, plus before and after
    assert slices["mart_days_rebuilt"] == 1
    assert slices["mart_days"] == "2026-11-30"
    assert slices["slices_with_job"] == 7
    assert first.metadata["gpu_hours"]["mart_days_rebuilt"] == 1
    # the first mart that reads the telemetry roll-up rebuilds its one day; the others find it current
    rolled = {a: m["rollup_days_rebuilt"] for a, m in first.metadata.items() if m.get("rollup_days_rebuilt")}
    assert list(rolled.values()) == [1], rolled
    jobs = first.metadata["jobs_enriched"]
    assert (jobs["dagster/row_count"], jobs["with_telemetry"], jobs["without_team"]) == (7, 7, 7)

    again = run_ingest(config_path)
    assert again.success, again.failures
    for asset in ("resources", "gpu_job_hours", "gpu_hours"):
        meta = again.metadata[asset]
        assert meta.get("rollup_days_rebuilt", 0) == 0 and meta.get("mart_days_rebuilt", 0) == 0, asset
    assert again.metadata["gpu_job_hours"]["mart_days"] == "none (nothing changed)"
    assert again.metadata["gpu_job_hours"]["dagster/row_count"] == 9
