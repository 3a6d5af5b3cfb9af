"""The GPU rules on real data: the H200 capture and its ground-truth phases, loaded by the real readers.

`nvidia_smi_query_gpu.csv` goes through the nvidia_smi reader and `phases.csv` through jobs_csv (each
phase is a job, its exit status its state), both on host `h200-lab`; the bill is one line for the
capture's hour (an illustrative 10.60 USD for the 1-GPU instance) plus a second instance billed with no
telemetry. The capture is minutes long, so the rules run with short-window params (GPU001's
min_idle_hours 0.005 h = 18 s, GPU002/GPU003's min_runtime_minutes 0.5): the same rules, their
thresholds set for the window. Expected: GPU001 flags job-004 and job-006 (and job-000, the instance up
with no process), GPU002 job-003, GPU003 job-002, GPU004 job-005, nothing job-001; each reason carries the
numbers measured from the capture (its README's table).
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from pipelines.config import load_config
from rules import get_rule
from tests.helpers.config import write_config
from tests.helpers.gpu_precedence import GPU_RULES, check_no_double_counting, gpu_params
from tests.helpers.h200_capture import SHORT, WEEK, findings, jobs_flagged
from tests.helpers.paths import H200


def readme_table() -> dict[str, dict[str, float]]:
    """The capture README's per-phase summary: samples, mean util, max memory, mean power."""
    out = {}
    for line in (H200 / "README.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| (job-\d{3}) \| [^|]+\| (\d+) \| ([\d.]+) \| ([\d,]+) \| (\d+) \|", line)
        if m:
            out[m.group(1)] = {
                "samples": int(m.group(2)),
                "util": float(m.group(3)),
                "mem": float(m.group(4).replace(",", "")),
                "power": float(m.group(5)),
            }
    return out


def test_the_capture_lands_as_seven_jobs_and_their_gpu_slices(h200: duckdb.DuckDBPyConnection) -> None:
    table = readme_table()
    got = {
        r[0]: r[1:]
        for r in h200.execute(
            "select job_id, samples, util_mean, mem_used_max_mib, power_mean_w from gpu_job_hours "
            "where job_id is not null"
        ).fetchall()
    }
    assert set(got) == set(table) == {f"job-00{i}" for i in range(7)}
    for job, want in table.items():
        samples, util, mem, power = got[job]
        assert abs(samples - want["samples"]) <= 1, job
        assert util == pytest.approx(want["util"], abs=0.05), job
        assert mem == want["mem"], job
        assert power == pytest.approx(want["power"], abs=0.5), job
    # the job slices and the unscheduled parts before and after tile the capture's hour
    total = h200.execute("select sum(slice_seconds) from gpu_job_hours").fetchall()[0][0]
    assert total == pytest.approx(3600, abs=0.01)
    team = h200.execute("select distinct team, team_source from jobs_enriched").fetchall()
    assert team == [("research", "host billing tags")]  # from the billing tags of the host it ran on


def test_each_phase_is_flagged_by_its_rule_and_job_001_by_none(h200: duckdb.DuckDBPyConnection) -> None:
    flagged = {
        rule_id: jobs_flagged(findings(h200, rule_id, SHORT.get(rule_id, {}))) for rule_id in GPU_RULES
    }
    assert {"job-004", "job-006"} <= flagged["GPU001"]
    assert flagged["GPU001"] <= {"job-000", "job-004", "job-006"}  # job-000: the instance up, no process
    assert flagged["GPU002"] == {"job-003"}
    assert flagged["GPU003"] == {"job-002"}
    assert flagged["GPU004"] == {"job-005"}
    assert flagged["GPU006"] == set()  # one GPU: no job runs on enough GPUs to judge its scaling
    assert not any("job-001" in jobs for jobs in flagged.values())


def test_reasons_carry_the_measured_numbers(h200: duckdb.DuckDBPyConnection) -> None:
    t = readme_table()
    (gpu001,) = [f for f in findings(h200, "GPU001", SHORT["GPU001"]) if f["resource_id"] == "i-h200"]
    assert gpu001["status"] == "waste"
    assert "sat idle for 1.9 min" in gpu001["reason"]
    assert f"holding {t['job-004']['mem']:,.0f} MiB (73%) of GPU memory" in gpu001["reason"]
    assert "during job(s) job-000, job-004, job-006" in gpu001["reason"]
    assert gpu001["evidence"]["idle_max_mem_used_mib"] == t["job-004"]["mem"]
    # idle 40 + 50.1 + 25.0 s of the 10.60 hour
    assert float(gpu001["estimated_waste"]) == pytest.approx(10.60 * 115.05 / 3600, abs=0.002)

    (gpu002,) = findings(h200, "GPU002", SHORT["GPU002"])
    assert gpu002["job_id"] == "job-003" and gpu002["resource_id"] == "csv/job-003"
    assert f"at {t['job-003']['util']:.1f}% mean / 35% p95 util" in gpu002["reason"]
    assert f"at most {t['job-003']['mem']:,.0f} of 143,771 MiB (2.0%)" in gpu002["reason"]
    assert "a 3g.71gb MIG slice (3/7 of the GPU) fits, so 4/7 of its cost bought nothing" in gpu002["reason"]
    assert float(gpu002["estimated_waste"]) == pytest.approx(10.60 * 45.165 / 3600 * 4 / 7, abs=0.001)

    (gpu003,) = findings(h200, "GPU003", SHORT["GPU003"])
    assert gpu003["job_id"] == "job-002"
    assert f"{t['job-002']['util']:.1f}% mean util in bursts (p95 100%, σ 36.1)" in gpu003["reason"]
    assert f"{t['job-002']['power']:.0f} W (39% of the power limit)" in gpu003["reason"]
    assert "61% of samples idle" in gpu003["reason"]
    assert float(gpu003["estimated_waste"]) == pytest.approx(10.60 * 56.565 / 3600 * 0.76, abs=0.002)

    (gpu004,) = findings(h200, "GPU004", SHORT["GPU004"])
    assert gpu004["job_id"] == "job-005"
    assert "failed (failed: simulated NaN loss: aborting job) after 14 s on h200-lab" in gpu004["reason"]
    assert f"1×H200 at {t['job-005']['util']:.1f}% mean util" in gpu004["reason"]
    assert float(gpu004["estimated_waste"]) == pytest.approx(10.60 * 13.957 / 3600, abs=0.001)


def test_billed_hours_without_telemetry_are_insufficient_data_with_the_hours_counted(
    h200: duckdb.DuckDBPyConnection,
) -> None:
    found = {f["resource_id"]: f for f in findings(h200, "GPU001", SHORT["GPU001"])}
    spare = found["i-h200-spare"]
    assert spare["status"] == "insufficient_data"
    assert float(spare["estimated_waste"]) == 0
    assert spare["evidence"]["hours_without_telemetry"] == 3
    assert spare["reason"].startswith("3 of 3 billed hours of GPU instance i-h200-spare")
    # the capture's own hour: the 54 minutes before and after the capture had no telemetry, and say so
    assert found["i-h200"]["evidence"]["hours_without_telemetry"] == pytest.approx(0.907, abs=0.001)
    assert "54.4 min of billed time had no telemetry" in found["i-h200"]["reason"]


def test_default_params_are_for_hours_not_minutes(h200: duckdb.DuckDBPyConnection) -> None:
    """With the default (hour-scale) thresholds nothing in a 6-minute capture is waste: the short-window
    behaviour comes from the params, not from a special case."""
    for rule_id in GPU_RULES:
        if rule_id == "GPU004":
            continue  # a failed job is lost compute whatever its length
        assert not [f for f in findings(h200, rule_id, {}, {}) if f["status"] == "waste"], rule_id


def test_no_second_of_the_capture_is_priced_twice(h200: duckdb.DuckDBPyConnection) -> None:
    params = gpu_params(SHORT)
    waste = check_no_double_counting(h200, WEEK, params)
    # GPU006: one GPU, no scaling to judge
    assert all(waste[r] > 0 for r in GPU_RULES if r not in ("GPU005", "GPU006")) and waste["GPU006"] == 0
    assert (
        waste["GPU005"] == 0
    )  # its low-MFU jobs are GPU002's and GPU003's (tests/rules/test_gpu005_h200.py)
    assert float(sum(waste.values())) < 10.60


def test_short_window_params_reach_the_rules_through_the_config(tmp_path: Path) -> None:
    config = load_config(
        write_config(
            tmp_path,
            """
            sources: []
            rules:
              GPU001: {min_idle_hours: 0.005}
              GPU002: {min_runtime_minutes: 0.5}
            """,
        )
    )
    assert get_rule("GPU001").make_params(config.rule_overrides("GPU001"), config).min_idle_hours == 0.005
    gpu002 = get_rule("GPU002").make_params(config.rule_overrides("GPU002"), config)
    assert gpu002.min_runtime_minutes == 0.5
    # the other rules' thresholds reach GPU002's claims from their own params, not as params of GPU002's
    assert "gpu001_max_util_pct" not in gpu002.model_dump()
    thresholds = get_rule("GPU002").sql_params(WEEK, gpu002, "select $claim_thresholds")["claim_thresholds"]
    assert {"key": "GPU001.min_idle_hours", "value": 0.005} in thresholds
    assert {"key": "GPU002.min_runtime_minutes", "value": 0.5} in thresholds
