"""The `train_log` reader and the MFU it measures: the H200 capture's real log, and each framework's shape.

The H200 capture's `train_log.csv` (one line per step, no job id) joins its jobs (`phases.csv`) by host and
time; its well-fed phase's median MFU over the wall clock is 0.49 and the input-stalled phase's 0.14, where
the log's own step time says 0.52 (it leaves the 0.5 s input stall out).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.warehouse import rows
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.ingest_run import ingest_project
from tests.helpers.marts import build_only
from tests.helpers.paths import H200, copy_into
from tests.helpers.train_logs import EXPECTED_MFU, GPUS, PARAMS, SHAPES, TOKENS_PER_S

PHASES = """
  - name: phases
    kind: jobs_csv
    uri: landing/jobs/phases.csv
    options:
      columns: {started_at: start_ts, ended_at: end_ts, state: exit_status, job_name: phase}
      host: h200-lab
"""


def _mfu_of(tmp_path: Path, sources: str, files: dict[str, Path | str]) -> dict[str, dict[str, Any]]:
    for name, content in files.items():
        dst = tmp_path / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            copy_into(content, dst.parent)
        else:
            dst.write_text(content, encoding="utf-8")
    config = load_config(write_config(tmp_path, "sources:\n" + sources))
    con = new_warehouse(config.warehouse_path)
    try:
        report = ingest(con, config)
        assert not report.rejected, [o.error for o in report.rejected]
        build_only(con, "job_mfu")  # and the marts it reads (tests/helpers/marts.py)
        return {r["job_id"]: r for r in rows(con, "select * from job_mfu")}
    finally:
        con.close()


@pytest.fixture(scope="module")
def h200_mfu(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return _mfu_of(
        tmp_path_factory.mktemp("h200-mfu"),
        "  - {name: smi, kind: nvidia_smi, uri: landing/telemetry/, options: {host: h200-lab}}\n"
        + PHASES
        + "  - {name: steps, kind: train_log, uri: landing/train/, options: {host: h200-lab}}\n",
        {
            "landing/telemetry/nvidia_smi_query_gpu.csv": H200 / "nvidia_smi_query_gpu.csv",
            "landing/jobs/phases.csv": H200 / "phases.csv",
            "landing/train/train_log.csv": H200 / "train_log.csv",
        },
    )


def test_the_h200_log_lands_line_by_line_with_its_own_columns_kept(tmp_path: Path) -> None:
    report, got = ingest_project(
        tmp_path,
        "  - {name: steps, kind: train_log, uri: landing/train/, options: {host: h200-lab}}\n",
        {"landing/train/train_log.csv": H200 / "train_log.csv"},
        "select count(*) as n, sum(tokens) as tokens, min(ts) as first, max(params) as params, "
        "max(data_s) as stall, count(*) filter (where labels['phase'] = 'train_dataloader_stall') as stalled "
        "from train_steps",
    )
    assert [o.status for o in report.outcomes] == ["loaded"]
    (r,) = got
    assert r["n"] == 5980  # every step line of the file
    assert r["tokens"] == 324 * 16384 + 74 * 16384 + 5542 * 2048 + 40 * 16384
    assert str(r["first"]) == "2026-11-30 01:43:32.102000"
    assert r["params"] == 940707840 and r["stall"] == 0.5 and r["stalled"] == 74


def test_the_well_fed_phase_measures_its_median_mfu(h200_mfu: dict[str, dict[str, Any]]) -> None:
    busy = h200_mfu["job-001"]
    assert busy["job_match"] == "host_time" and busy["gpu_model"] == "H200" and busy["gpus"] == 1
    assert busy["mfu"] == pytest.approx(0.49, abs=0.01)
    assert busy["intervals"] == 323  # the first line of a job has no interval to time
    # its two checkpoint writes pull the time-weighted mean below the median
    assert busy["mfu_mean"] < busy["mfu"] - 0.05


def test_the_input_stalled_phase_is_measured_over_the_wall_clock_not_the_step_time(
    h200_mfu: dict[str, dict[str, Any]],
) -> None:
    stalled = h200_mfu["job-002"]
    assert stalled["mfu"] == pytest.approx(0.14, abs=0.01)
    assert stalled["mfu_step_time"] == pytest.approx(0.52, abs=0.01)  # what the step time alone claims
    assert stalled["outside_step_share"] == pytest.approx(0.73, abs=0.01)  # 0.5 s of each 0.68 s step
    assert stalled["data_share"] == pytest.approx(0.73, abs=0.01)
    assert h200_mfu["job-003"]["mfu"] < 0.05  # the tiny model on a whole H200
    assert set(h200_mfu) == {"job-001", "job-002", "job-003", "job-005"}  # the phases that trained


def test_tokens_per_gpu_hour_and_cost_per_token_follow_from_the_same_tokens(
    h200_mfu: dict[str, dict[str, Any]],
) -> None:
    busy = h200_mfu["job-001"]
    assert busy["tokens"] == 324 * 16384
    assert busy["gpu_hours"] == pytest.approx((99.924 + 3.327) / 3600, abs=2e-4)  # the job's telemetry span
    assert busy["tokens_per_gpu_hour"] == pytest.approx(busy["tokens"] / busy["gpu_hours"])
    assert busy["cost"] is None and busy["cost_per_million_tokens"] is None  # no bill in this warehouse


# each framework's run: its own job on its own host, so the shapes share one warehouse and one build
SHAPE_HOSTS = {shape: f"dgx-{i:02d}" for i, shape in enumerate(sorted(SHAPES), 1)}


@pytest.fixture(scope="module")
def shapes_mfu(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """job_mfu of one warehouse holding every framework's log, each beside its own run's job record."""
    jobs = "job_id,hosts,start,end,state,gpus,gpu_type\n" + "".join(
        f"42-{shape},{host},2026-11-30T08:59:00Z,2026-11-30T10:00:00Z,COMPLETED,8,H100\n"
        for shape, host in SHAPE_HOSTS.items()
    )
    sources = "  - {name: jobs, kind: jobs_csv, uri: landing/jobs/, options: {columns: {started_at: start, ended_at: end}}}\n"
    files: dict[str, Path | str] = {"landing/jobs/jobs.csv": jobs}
    for shape, host in SHAPE_HOSTS.items():
        name, text, options = SHAPES[shape]
        sources += (
            f"  - {{name: {shape}, kind: train_log, uri: landing/train/{shape}/, "
            f"options: {options[:-1]}, host: {host}}}}}\n"
        )
        files[f"landing/train/{shape}/{name}"] = text
    return _mfu_of(tmp_path_factory.mktemp("shapes-mfu"), sources, files)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_frameworks_log_shape_gives_the_runs_mfu(
    shape: str, shapes_mfu: dict[str, dict[str, Any]]
) -> None:
    run = shapes_mfu[f"42-{shape}"]
    assert run["params"] == PARAMS and run["gpus"] == GPUS and run["gpu_model"] == "H100"
    assert run["intervals"] == 11
    assert run["tokens_per_s"] == pytest.approx(TOKENS_PER_S, rel=1e-6)
    assert run["mfu"] == pytest.approx(EXPECTED_MFU, rel=1e-6)


@pytest.mark.parametrize(
    ("name", "text", "options", "problem"),
    [
        ("log.csv", "ts,step,tokens\n2026-11-30T01:00:00Z,1,16384\n2026-11-30T01:00:01Z,2,lots\n", "{params: 1e9}",
         "log.csv:3: column 'tokens': tokens 'lots' is not a number"),
        ("log.csv", "ts,step,tokens\nyesterday,1,16384\n", "{params: 1e9}", "log.csv:2: column 'ts': expected an ISO 8601 time"),
        ("log.csv", "ts,step,tokens\n2026-11-30T01:00:00Z,1,16384\n", "{}", "no parameter count"),
        ("log.csv", "ts,step,samples\n2026-11-30T01:00:00Z,1,8\n", "{params: 1e9}", "no token count"),
        ("log.jsonl", '{"ts": 1764464400, "tokens": 5}\n[1, 2]\n', "{params: 1e9}",
         "log.jsonl:2: expected a JSON object, found list"),
    ],
)  # fmt: skip
def test_bad_lines_reject_the_file_naming_the_line_and_field(
    name: str, text: str, options: str, problem: str, tmp_path: Path
) -> None:
    report, got = ingest_project(
        tmp_path,
        f"  - {{name: log, kind: train_log, uri: landing/, options: {options}}}\n",
        {f"landing/{name}": text},
        "select count(*) as n from train_steps",
    )
    (outcome,) = report.outcomes
    assert outcome.status == "rejected"
    assert problem in (outcome.error or ""), outcome.error
    assert got == [{"n": 0}]
