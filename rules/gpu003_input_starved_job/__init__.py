"""GPU003 input-starved-job: Jobs whose GPUs spent most of their time waiting for data.

What it detects
    Jobs whose GPUs worked in bursts and waited in between: a moderate mean utilisation made of short
    peaks near full load and long stretches near zero, at low power. The usual cause is the input
    pipeline (too few data-loader workers, a slow network file system or object store, CPU-bound
    decoding or augmentation, small reads): the GPU finishes a step and waits for the next batch.

Why it is waste
    The GPUs are allocated and billed for the whole job; the time they wait for input buys nothing.
    A job at 23 % utilisation in 1-in-4 bursts pays for four times the GPU-hours its compute needs.

How it is computed
    From the marts only: `jobs_enriched`, `gpu_job_spans` (the job's runtime; jobs that did not fail),
    `gpu_job_hours` (per-GPU utilisation, its exact sums and p95, power and memory for the parts of
    hours the job ran), `resources` and `gpu_billed_hours` (each GPU resource-hour's `cost_hourly`).
    Each GPU of a job is judged over the whole job (also outside the week): its sample-weighted mean
    utilisation between `min_mean_util_pct` and `max_mean_util_pct`, the standard deviation of its
    samples (pooled from the hourly sums, so a duty cycle within minutes shows) at least
    `min_util_stddev`, its p95 at least `min_peak_util_pct` (the bursts reach near full load), and its
    mean power at most `max_power_pct` of its power limit (when known). Jobs running less than
    `min_runtime_minutes` and failed jobs (GPU004's) are left out.
    estimated_waste = sum over the in-week slices of each starved GPU of cost_hourly(resource, hour) ÷
    the instance's GPUs × the slice's share of the hour × (1 − the slice's mean utilisation / 100):
    the idle share of its GPU-hours, in the currency of the instance's bill.
    The test of a starved GPU (these thresholds and `min_runtime_minutes`) is this rule's claim in the
    `gpu_claims` mart. Precedence (no GPU-hour priced twice): only the GPU-slices gpu_claims gives this
    rule are priced: parts of hours in which some GPU of the instance worked above GPU001's idle
    threshold, never a failed job (GPU004), never a GPU GPU002 claims (mean utilisation at most
    GPU002's `unused_util_pct` or p95 at most its `max_peak_util_pct`, in a job that ran GPU002's
    `min_runtime_minutes`). The other rules' thresholds are their own params, never copied here.
    One finding per job and week: resource_id is the job's key, job_id its id.
    Short captures: `min_runtime_minutes` takes fractions, and jobs are judged on their own samples, so
    a capture minutes long is judged by the same rule.

Thresholds
    min_runtime_minutes (default 30, minutes): jobs that ran a shorter time are ignored.
    min_mean_util_pct (default 10, percent): lowest mean utilisation of a starved GPU.
    max_mean_util_pct (default 50, percent): highest mean utilisation of a starved GPU.
    min_util_stddev (default 25, percentage points): lowest spread of a starved GPU's samples.
    min_peak_util_pct (default 60, percent): lowest p95 utilisation (its bursts reach near full load).
    max_power_pct (default 50, percent of the power limit): highest mean power of a starved GPU.

Known false positives
    Jobs with legitimate pauses (evaluation, checkpoint writes, gradient accumulation across slow
    collectives: a communication-bound job looks starved too), interactive sessions with bursts of
    work, and coarse sampling (a 30 s DCGM interval can hide or exaggerate a duty cycle). The
    remedy is in the job's input pipeline or placement, so confirm with the job's own step timings.

Example finding
    rule_id: GPU003
    resource_id: slurm/41907
    resource_type: Slurm job
    status: waste
    team: vision
    job_id: "41907"
    reason: "Job 41907 (vit-scaling-train-41907) on gpu-a100-04 kept 8×A100-SXM4-40GB waiting on input for 60.0 h: 22.9% mean util in bursts (p95 93%, σ 37.2), 75% of samples idle, 141 W (35% of the power limit); the idle 77% of 480.00 GPU-hours cost USD 1016.53."
    estimated_waste: 1016.53
    currency: USD
    waste_basis: cost_hourly ÷ GPUs × (1 − util_mean / 100) for each hour of each starved GPU of the job, in hours some GPU of the instance worked

Remediation
    Profile the input pipeline (PyTorch profiler, `torch.utils.data` worker timings, DALI); raise
    `num_workers` and prefetching, cache or pre-shard the dataset on local NVMe, move decoding to the
    GPU, use larger sequential reads from object storage; or run the job on fewer GPUs until the
    pipeline keeps up.

References
    NVIDIA DCGM profiling metrics (SM activity vs GPU utilisation); PyTorch "Performance Tuning
    Guide" (data loading); Princeton jobstats GPU utilisation reports.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._claims import claim_thresholds
from rules._contract import Rule, RuleParams


class Params(RuleParams):
    min_runtime_minutes: float = Field(
        30.0, ge=0, le=10080, description="Jobs that ran a shorter time (minutes) are ignored."
    )
    min_mean_util_pct: float = Field(
        10.0, ge=0, le=100, description="Lowest mean util (%) over the job of a starved GPU."
    )
    max_mean_util_pct: float = Field(
        50.0, ge=0, le=100, description="Highest mean util (%) over the job of a starved GPU."
    )
    min_util_stddev: float = Field(
        25.0, ge=0, le=100, description="Lowest standard deviation (points) of a starved GPU's util samples."
    )
    min_peak_util_pct: float = Field(
        60.0,
        ge=0,
        le=100,
        description="Lowest p95 util (%) of a starved GPU: its bursts reach near full load.",
    )
    max_power_pct: float = Field(
        50.0, ge=0, le=100, description="Highest mean power (% of the power limit) of a starved GPU."
    )


RULE = Rule(
    id="GPU003",
    name="input-starved-job",
    category="overprovisioned",
    severity="medium",
    status="stable",
    summary="Jobs whose GPUs spent most of their time waiting for data.",
    doc=__doc__ or "",
    params=Params,
    requires=(
        "resources",
        "gpu_billed_hours",
        "gpu_job_hours",
        "gpu_job_spans",
        "jobs_enriched",
        "gpu_claims",
    ),
    query=Path(__file__).with_name("query.sql"),
    shared_params=claim_thresholds,
)
