"""GPU002's smaller-GPU fit: its reference tables, its params in wastewatch.yaml, and the H200 capture.

The YAML cases (tests/fixtures/rules/GPU002.yml) cover the rule's arithmetic case by case; this file
checks what they cannot: that the built-in list prices agree with the built-in instance-type catalogue
and that every priced GPU has a peak-TFLOP/s entry (a GPU without one would silently never be offered),
that a deployment can replace the list in wastewatch.yaml (and typos are errors with a line number),
how the fit behaves on the real H200 capture when no MIG slice is allowed to fit, and that beside the
other GPU rules on one instance it prices nothing twice (tests/rules/test_gpu_precedence.py's check).
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from pipelines.config import ConfigError, load_config
from rules import get_rule
from rules.gpu002_overprovisioned_job.reference import (
    CATALOG_DIR,
    LIST_PRICES,
    default_gpu_peaks,
    default_smaller_gpus,
)
from tests.helpers import h200_capture as h200_eval
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.gpu_precedence import GPU_RULES, SETTINGS, check_no_double_counting, gpu_params
from tests.helpers.gpu_precedence import WEEK as PRECEDENCE_WEEK
from tests.helpers.mart_rows import load_given
from tests.helpers.paths import REPO

GPU002 = get_rule("GPU002")


def normalise(name: str) -> str:
    """The query's normalisation of a GPU model name (query.sql, peak_names / job_gpu / smaller_peaks)."""
    name = re.sub(r"^(nvidia|tesla)[ _-]+", "", name.strip().lower())
    return re.sub(r"[ _]+", "-", name)


def test_list_prices_agree_with_the_instance_type_catalogue() -> None:
    with (CATALOG_DIR / "gpu_instance_types.csv").open(encoding="utf-8") as f:
        types = {r["instance_type"]: r for r in csv.DictReader(f)}
    with LIST_PRICES.open(encoding="utf-8") as f:
        prices = list(csv.DictReader(f))
    smaller = default_smaller_gpus()
    assert len(prices) == len(smaller) >= 1
    for row, gpu in zip(prices, smaller, strict=True):
        spec = types[row["instance_type"]]
        assert row["provider"] == spec["provider"]
        assert gpu.gpu_model == spec["gpu_model"]
        assert gpu.gpu_memory_gib == float(spec["gpu_memory_gib"])
        assert gpu.price_per_gpu_hour == pytest.approx(float(row["price_per_hour"]) / int(spec["gpu_count"]))
        # every row says what kind of price it is, where, when and from where
        assert row["pricing"] == "On-Demand Linux" and row["region"] and row["currency"] == "USD"
        assert re.fullmatch(r"\d{4}-\d{2}", row["as_of"]), row
        assert row["source_url"].startswith("https://aws.amazon.com/"), row
        assert gpu.price_note.startswith("list price: ") and row["instance_type"] in gpu.price_note


def test_every_smaller_gpu_has_a_peak_tflops_entry() -> None:
    names = {normalise(n) for p in default_gpu_peaks() for n in (p.gpu_model, *p.aliases)}
    missing = [g.gpu_model for g in default_smaller_gpus() if normalise(g.gpu_model) not in names]
    assert not missing, f"smaller GPUs without a peak TFLOP/s entry are never offered: {missing}"
    # and the names telemetry reports resolve to the right model
    peaks = {normalise(n): p.gpu_model for p in default_gpu_peaks() for n in (p.gpu_model, *p.aliases)}

    def model_of(name: str) -> str | None:
        key = normalise(name)
        found = [n for n in peaks if key == n or key.startswith(n + "-")]
        return peaks[max(found, key=len)] if found else None

    assert model_of("NVIDIA H100 80GB HBM3") == "H100"
    assert model_of("NVIDIA H100 PCIe") == "H100 PCIe"
    assert model_of("NVIDIA A100-SXM4-40GB") == "A100"
    assert model_of("NVIDIA L40S") == "L40S"
    assert model_of("NVIDIA L40") == "L40"
    assert model_of("Tesla T4") == "T4"
    assert model_of("NVIDIA A10G") is None  # no published tensor figure: no smaller fit from an A10G


def test_the_built_in_tables_are_read_when_the_params_are_made_not_at_import() -> None:
    # A broken list_prices.csv / gpu_peak_flops.csv must not break every command (they import the rules):
    # only making GPU002's default params reads them, and params that replace both tables read nothing.
    code = textwrap.dedent(
        """
        import csv

        real = csv.DictReader

        def guarded(f, *args, **kwargs):
            if str(getattr(f, "name", "")).endswith(("list_prices.csv", "gpu_peak_flops.csv")):
                raise RuntimeError("read " + f.name)
            return real(f, *args, **kwargs)

        csv.DictReader = guarded
        from rules import ALL_RULES, get_rule
        from rules._docs import render_catalogue

        assert ALL_RULES and render_catalogue()
        rule = get_rule("GPU002")
        own = rule.make_params({
            "smaller_gpus": [{"gpu_model": "L4", "gpu_memory_gib": 24, "price_per_gpu_hour": 1.0}],
            "gpu_peak_tflops": [{"gpu_model": "L4", "peak_tflops": 121}],
        })
        assert own.smaller_gpus[0].gpu_model == "L4"
        try:
            rule.make_params({})
        except RuntimeError as e:
            print("default params:", e)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "default params: read " in done.stdout and "list_prices.csv" in done.stdout


def test_the_default_params_are_the_built_in_tables() -> None:
    params = GPU002.make_params({})
    assert params.smaller_gpus == default_smaller_gpus()  # type: ignore[attr-defined]
    assert params.gpu_peak_tflops == default_gpu_peaks()  # type: ignore[attr-defined]
    recorded = params.model_dump(mode="json")
    assert [g["gpu_model"] for g in recorded["smaller_gpus"]] == ["L4", "L40S", "A100", "H100"]


def test_smaller_gpus_are_replaced_in_wastewatch_yaml(tmp_path: Path) -> None:
    config = load_config(
        write_config(
            tmp_path,
            """
            sources: []
            rules:
              GPU002:
                smaller_gpu_headroom_pct: 30
                smaller_gpus:
                  - {gpu_model: L4, gpu_memory_gib: 24, price_per_gpu_hour: 0.98, price_note: "EDP price, 2026-01"}
            """,
        )
    )
    params = GPU002.make_params(config.rule_overrides("GPU002"), config)
    assert [(g.gpu_model, g.price_per_gpu_hour, g.provider, g.currency) for g in params.smaller_gpus] == [  # type: ignore[attr-defined]
        ("L4", 0.98, "AWS", "USD")
    ]
    recorded = json.loads(json.dumps(params.model_dump(mode="json")))
    assert recorded["smaller_gpus"][0]["price_note"] == "EDP price, 2026-01"
    assert recorded["gpu_peak_tflops"]  # the defaults travel with every finding's params


def test_a_typo_in_a_smaller_gpu_is_a_config_error_with_its_line(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
        sources: []
        rules:
          GPU002:
            smaller_gpus:
              - {gpu_model: L4, gpu_memory_gib: 24, price_per_gpu_hour: 0.98}
              - {gpu_model: L40S, gpu_memory: 48, price_per_gpu_hour: 1.5}
        """,
    )
    with pytest.raises(ConfigError, match=r"wastewatch.yaml:6: .*gpu_memory"):
        load_config(path)


# --- the H200 capture ------------------------------------------------------------------------------
# job-003 (a 19.7 M-parameter model: 28.1 % mean / 35 % p95 util, 2,861 of 143,771 MiB) fits a 3g MIG
# slice, so GPU002 prices the MIG fit (tests/rules/test_gpu_h200.py). With mig_headroom_pct 100 no MIG slice
# fits (35 % × 2 = 70 % of the compute needs 5 of 7 slices), and the smaller-GPU fit takes over: an H100
# (same 989.4 TFLOP/s, 80 GB) holds it at 35 % p95 (42 % with the headroom), at its list price 6.88
# against the 10.60 billed.
# No other phase has a smaller fit: job-001 / job-002 / job-005 peak at 100 %, the idle ones are GPU001's.
NO_MIG = {"min_runtime_minutes": 0.5, "mig_headroom_pct": 100}


def test_h200_capture_without_a_mig_fit_gets_the_h100(h200: duckdb.DuckDBPyConnection) -> None:
    found = h200_eval.findings(h200, "GPU002", NO_MIG)
    assert [f["job_id"] for f in found] == ["job-003"]
    (f,) = found
    ev = f["evidence"]
    assert ev["mig_profile"] is None and ev["smaller_gpu"] == "H100"
    assert ev["smaller_gpu_price_kind"] == "list" and ev["smaller_gpu_price_per_gpu_hour"] == 6.88
    assert ev["billed_per_gpu_hour"] == 10.6
    fit = "a smaller GPU fits, H100 (80 GiB, 989.4 TFLOP/s against 989.4; its p95 util would be about 35%)"
    assert fit in f["reason"]
    assert "at USD 6.88 per GPU-hour (list price: AWS us-east-1 On-Demand Linux p5.48xlarge" in f["reason"]
    assert "against USD 10.60 per GPU-hour billed" in f["reason"]
    # the job's 45.165 s × (10.60 − 6.88) per hour
    assert float(f["estimated_waste"]) == pytest.approx(45.165 / 3600 * (10.60 - 6.88), abs=0.0005)


def test_h200_capture_without_a_mig_fit_still_prices_nothing_twice(h200: duckdb.DuckDBPyConnection) -> None:
    # every rule configured as a run's config gives them (their thresholds judge each other's claims)
    params = gpu_params({**h200_eval.SHORT, "GPU002": NO_MIG})
    check_no_double_counting(h200, h200_eval.WEEK, params)
    flagged = {}
    for r in GPU_RULES:
        frame = get_rule(r).evaluate(h200, h200_eval.WEEK, params[r], datetime(2026, 12, 7))
        found = [{**f, "evidence": json.loads(f["evidence"])} for f in frame.to_dicts()]
        flagged[r] = h200_eval.jobs_flagged(found)
    assert flagged["GPU002"] == {"job-003"}
    assert flagged["GPU003"] == {"job-002"}
    assert not any("job-001" in jobs for jobs in flagged.values())


# --- precedence with a smaller-GPU fit --------------------------------------------------------------
# One 8×L40S g6e.48xlarge (30.13118 an hour, 3.7663975 per GPU-hour) on Mon 2026-11-23:
#   00-06 job 301: GPUs 0-3 at 20 % / 25 % p95 with 8 GB for 4 h then idle 2 h, GPUs 4-7 unused
#         (GPU002: the unused GPUs' cost and the L4 difference for GPUs 0-3 in 00-04; GPU001: 04-06);
#   06-14 job 302 input-starved on all 8 GPUs (GPU003; p95 93 %, so no smaller fit);
#   14-16 job 303 FAILED at 80 % (GPU004).
L40S_WEEK: dict[str, object] = {
    "resources": [
        {"resource_id": "i-3", "host": "g6e-03", "instance_type": "g6e.48xlarge", "gpu_model": "L40S",
         "gpu_count": 8, "gpu_memory_gib": 48},
    ],
    "jobs_enriched": [
        {"job_id": "301", "started_at": "2026-11-23T00:00", "ended_at": "2026-11-23T06:00", "resource_ids": ["i-3"]},
        {"job_id": "302", "started_at": "2026-11-23T06:00", "ended_at": "2026-11-23T14:00", "resource_ids": ["i-3"]},
        {"job_id": "303", "state": "FAILED", "started_at": "2026-11-23T14:00", "ended_at": "2026-11-23T16:00",
         "resource_ids": ["i-3"]},
    ],
    "cost_hourly": [
        {"resource_id": "i-3", "from": "2026-11-23T00:00", "to": "2026-11-23T16:00", "effective_cost": 30.13118},
    ],
    "gpu_job_hours": [
        {"resource_id": "i-3", "job_id": "301", "gpus": [0, 1, 2, 3], "from": "2026-11-23T00:00",
         "to": "2026-11-23T04:00", "util_mean": 20.0, "util_p95": 25, "mem_used_mean_mib": 8192,
         "mem_total_mib": 46068},
        {"resource_id": "i-3", "job_id": "301", "gpus": [0, 1, 2, 3], "from": "2026-11-23T04:00",
         "to": "2026-11-23T06:00", "util_mean": 0.0, "mem_total_mib": 46068},
        {"resource_id": "i-3", "job_id": "301", "gpus": [4, 5, 6, 7], "from": "2026-11-23T00:00",
         "to": "2026-11-23T06:00", "util_mean": 0.0, "mem_total_mib": 46068},
        {"resource_id": "i-3", "job_id": "302", "gpus": 8, "from": "2026-11-23T06:00", "to": "2026-11-23T14:00",
         "util_mean": 22.9, "util_stddev": 37.2, "util_p95": 93, "power_mean_w": 140, "power_limit_w": 350,
         "mem_total_mib": 46068},
        {"resource_id": "i-3", "job_id": "303", "gpus": 8, "from": "2026-11-23T14:00", "to": "2026-11-23T16:00",
         "util_mean": 80.0, "util_p95": 97, "mem_total_mib": 46068},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def l40s_week(
    tmp_path_factory: pytest.TempPathFactory, empty_marts: Path
) -> Iterator[duckdb.DuckDBPyConnection]:
    con = open_copy(empty_marts, tmp_path_factory.mktemp("l40s") / "wastewatch.duckdb")
    load_given(con, L40S_WEEK, {})
    yield con
    con.close()


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_a_smaller_gpu_fit_prices_nothing_twice(
    l40s_week: duckdb.DuckDBPyConnection, tmp_path: Path, setting: str
) -> None:
    config = load_config(
        write_config(
            tmp_path, "sources: []\n" + (f"rules:\n  {SETTINGS[setting]}\n" if SETTINGS[setting] else "")
        )
    )
    params = {r: get_rule(r).make_params(config.rule_overrides(r), config) for r in GPU_RULES}
    waste = check_no_double_counting(l40s_week, PRECEDENCE_WEEK, params)
    if setting == "defaults":
        per_gpu_hour = 30.13118 / 8
        assert float(waste["GPU001"]) == pytest.approx(2 * 30.13118, abs=0.01)
        assert float(waste["GPU002"]) == pytest.approx(
            4 * 4 * per_gpu_hour + 4 * 4 * (per_gpu_hour - 13.3504 / 8), abs=0.01
        )
        assert float(waste["GPU003"]) == pytest.approx(8 * 8 * per_gpu_hour * (1 - 0.229), abs=0.01)
        assert float(waste["GPU004"]) == pytest.approx(2 * 30.13118, abs=0.01)
