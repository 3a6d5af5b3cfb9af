"""The demo's GPU006 plant: a run of one model configuration on 16 GPUs at half the per-GPU throughput of an
8-GPU run of the same configuration.

nlp's 2-node pre-training family (gpu-h100-01/02, 16 × H100) and its single-node runs on gpu-h100-08 train
the same model. Training logs (the `train_log` source, CSV, one line every 10 minutes, a configuration row
first: model, tensor/pipeline/data parallel sizes, global batch, sequence length) are written for the
report week of two of them: the longest completed single-node run on gpu-h100-08 (the baseline: 33 steps of
512 × 4096 tokens per 10 minutes on 8 GPUs, about 0.59 MFU) and the longest completed 2-node run (the same
33 steps per 10 minutes on 16 GPUs: half the per-GPU throughput, about 0.29 MFU, still above GPU005's
floor). GPU006 prices the 2-node run's GPU-hours beyond linear scaling: 16 × (1 − 0.5) = 8 of its GPUs for
its time in the week at the p5's effective hourly cost ÷ 8. The family's other runs of the week log nothing:
GPU006 says `insufficient_data` (no training log) for each, never 0 waste.

The plan only picks jobs the cloud plan already has and draws nothing from any random stream, so no other
planted amount changes; the two logs join expected.json's training-log figures.

The fleet has no eight H100 hosts free at once for a 64-GPU run (and a host added for one would change the
week's billed or modelled spend, which expected.json and its tests state), so the plant runs on the
2-node family's 16 GPUs: the same rule, the same formula.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from pipelines.demo.modelled import LOG_EVERY_S, PARAMS, PEAK_FLOPS, TOKENS_PER_STEP
from pipelines.demo.scenario import P5, Job, Planner, job_times, quantize

FAMILY_HOSTS = ["gpu-h100-01", "gpu-h100-02"]
BASELINE_HOST = "gpu-h100-08"
STEPS = 33  # steps per 10 minutes, for both runs: the same tokens per second on twice the GPUs
CONFIG = {"model": "acme-llm-6.7b", "tp": 8, "pp": 1, "global_batch": 512, "seq_len": 4096}
HEADER = "ts,job_id,host,step,tokens,step_time,params,gpus,model,tp,pp,dp,global_batch,seq_len"


@dataclass(frozen=True)
class ScalingPlant:
    big: Job  # the 2-node run, 16 GPUs
    baseline: Job  # the single-node run, 8 GPUs
    unlogged: tuple[Job, ...]  # the family's other runs of the week that did not fail (no training log)


def _in_week(j: Job, start: datetime, a: datetime, b: datetime) -> float:
    s, e = job_times(j, start)
    return max((min(e, b) - max(s, a)).total_seconds(), 0.0)


def plan_scaling(planner: Planner, start: datetime, a: datetime, b: datetime) -> ScalingPlant:
    """The longest completed 2-node run and single-node run on gpu-h100-08 of the report week [a, b)."""

    def longest(hosts: list[str]) -> Job:
        runs = [
            j for j in planner.jobs if j.hosts == hosts and j.state == "COMPLETED" and "-train-" in j.name
        ]
        return max(runs, key=lambda j: (_in_week(j, start, a, b), -j.job_id))

    big = longest(FAMILY_HOSTS)
    others = tuple(
        j
        for j in planner.jobs
        if j.hosts == FAMILY_HOSTS and j is not big and j.state != "FAILED" and _in_week(j, start, a, b) > 0
    )
    return ScalingPlant(big, longest([BASELINE_HOST]), others)


def _mfu(gpus: int) -> Decimal:
    """One 10-minute interval's MFU: 6 × N × tokens / wall seconds / (GPUs × the H100's dense peak)."""
    return 6 * PARAMS * TOKENS_PER_STEP * STEPS / LOG_EVERY_S / (gpus * PEAK_FLOPS["h100"])


def write_scaling_logs(
    root: Path, plant: ScalingPlant, start: datetime, a: datetime, b: datetime
) -> dict[int, dict[str, Any]]:
    """Each planted run's training log for its lines in [a, b); per job id its lines and median MFU, as
    modelled.write_train_logs returns them."""
    folder = root / "landing" / "train_logs"
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[int, dict[str, Any]] = {}
    for j, gpus in ((plant.baseline, 8), (plant.big, 16)):
        started, ended = job_times(j, start)
        when, times = started + timedelta(seconds=LOG_EVERY_S), []
        while when < ended:
            if a <= when < b:
                times.append(when)
            when += timedelta(seconds=LOG_EVERY_S)
        c = CONFIG
        first = max(started, a)
        rows = [
            HEADER,
            f"{first:%Y-%m-%dT%H:%M:%SZ},{j.job_id},{j.hosts[0]},,,,,{gpus},{c['model']},{c['tp']},{c['pp']},"
            f"{gpus // (c['tp'] * c['pp'])},{c['global_batch']},{c['seq_len']}",
        ]
        for k, t in enumerate(times, start=1):
            rows.append(
                f"{t:%Y-%m-%dT%H:%M:%SZ},{j.job_id},{j.hosts[0]},{STEPS * k},{TOKENS_PER_STEP},"
                f"{LOG_EVERY_S / STEPS * 0.97:.3f},{int(PARAMS)},{gpus},,,,,,{c['seq_len']}"
            )
        (folder / f"{j.name}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
        # the first line of the file has no earlier line to time it from
        mfus = [_mfu(gpus)] * (len(times) - 1)
        out[j.job_id] = {"lines": len(times), "mfu": statistics.median(mfus), "gpu": "h100", "saves": []}
    return out


def expected_scaling(plant: ScalingPlant, start: datetime, a: datetime, b: datetime) -> dict[str, Any]:
    """expected.json's GPU006 entry: the 2-node run's GPU-hours beyond linear scaling, at the p5's cost."""
    seconds = Decimal(_in_week(plant.big, start, a, b))
    gpu_hours = 16 * seconds / 3600
    # tokens/s per GPU over the baseline's: the same steps per 10 minutes on 16 GPUs and on 8
    efficiency = (Decimal(STEPS) / 16) / (Decimal(STEPS) / 8)
    per_gpu_hour = P5.effective / 8
    waste = gpu_hours * (1 - efficiency) * per_gpu_hour
    return {
        "name": "poor-scaling",
        "job_id": plant.big.job_id,
        "hosts": plant.big.hosts,
        "gpus": 16,
        "baseline_job_id": plant.baseline.job_id,
        "baseline_gpus": 8,
        "efficiency": float(efficiency),
        "gpu_hours": float(round(gpu_hours, 6)),
        "waste": float(quantize(waste)),
        "insufficient_data": sorted(j.job_id for j in plant.unlogged),
        "basis": "the 2-node run's GPU-hours in the week (16 GPUs x its sacct Start to End within the week) x "
        "(1 - efficiency) x the p5's effective hourly cost / 8; efficiency = its tokens/s per GPU (33 steps of "
        "512 x 4096 tokens per 10 minutes on 16 GPUs) / the 8-GPU run's on gpu-h100-08 (the same on 8) = 0.5; "
        "the family's other runs of the week have no training log: insufficient_data",
    }
