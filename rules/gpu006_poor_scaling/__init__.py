"""GPU006 poor-scaling: Jobs whose per-GPU throughput fell well below a smaller run of the same configuration.

What it detects
    Training jobs run on many GPUs whose per-GPU throughput (tokens per second of logged wall-clock time,
    over the job's GPUs) is at or below a share of the best smaller run of the same model configuration:
    the same model, parameter count, global batch, sequence length and parallel layout (tensor, pipeline
    and context parallel sizes; the data-parallel degree is what changes with the GPU count), on the same
    GPU model, as the jobs' own training logs print them (the `job_scaling` mart).

Why it is waste
    Throughput should grow with GPUs. Where communication dominates (a parallel layout that does not fit
    the topology, a batch too small for the data-parallel degree) per-GPU throughput falls and the extra
    GPUs buy little: a run on 64 GPUs at half the per-GPU throughput of an 8-GPU run pays for 64 GPU-hours
    per hour and gets 32 GPU-hours of training. Test scaling small and launch in full only where it holds.

How it is computed
    From the marts only: `job_scaling` (each job's configuration, per-GPU throughput, the best smaller run
    of its configuration and the efficiency against it), `jobs_enriched`, `gpu_job_spans`, `gpu_claims`,
    `gpu_billed_hours` and `resources` (each GPU-slice's share of cost_hourly).
    efficiency = tokens/s per GPU of the job ÷ tokens/s per GPU of the best smaller run (the run of the
    same configuration on fewer GPUs with the highest per-GPU throughput, whenever it ran).
    A job on at least `min_gpus` GPUs is low when its efficiency is at or below `min_scaling_efficiency`.
    The GPU-hours beyond what linear scaling from that run needed are gpu_hours × (1 − efficiency): in
    `gpu_claims` the job's first gpus × (1 − efficiency) GPUs (by resource and GPU id; the last of them
    for the fraction of a GPU it stands for) are this rule's claim.
    estimated_waste = sum over those GPUs' in-week GPU-slices that this rule claims of cost_hourly(resource,
    hour) ÷ the instance's GPUs × the slice's share of the hour (× the fraction, for the last GPU); with the
    job's GPUs alike, gpu_hours × (1 − efficiency) × the job's cost per GPU-hour.
    Precedence (no GPU-hour priced twice): GPU006's claim comes after GPU004 (failed jobs), GPU001 (parts
    of hours every GPU of the instance idled), GPU002 (unused or oversized GPUs) and GPU003 (starved GPUs),
    and before GPU005: GPU006 takes the hours beyond linear scaling, GPU005 prices its MFU shortfall on the
    rest of the job's GPUs (the fraction of the last GPU that GPU006 leaves is priced by neither).
    A low job whose GPU-hours beyond linear scaling another rule claims is `suspect` naming that rule.
    A job on at least `min_gpus` GPUs without a training log, without a configuration line in it, without
    a measured throughput or without a smaller run of the same configuration is `insufficient_data`
    naming what it lacks, never 0 waste. One finding per job and week: resource_id is the job's key.

Thresholds
    min_scaling_efficiency (default 0.7): per-GPU throughput at or below this share of the best smaller
    run's is low.
    min_gpus (default 16, GPUs): jobs on fewer GPUs are not judged (scaling within one 8-GPU node rarely
    loses much; their runs are still baselines for larger ones).

Known false positives
    A larger run that changed what the configuration does not name (activation recomputation, a larger
    micro-batch, a different optimiser or precision, a different data mix) is not the same workload; name
    the model distinctly in its log. Throughput over logged wall-clock time counts input stalls and
    checkpoint writes against the run, so a larger run that checkpoints more often or waits for a slower
    file system looks worse than its scaling. A job whose log speaks for part of its GPUs needs its `gpus`
    set to the GPUs that log speaks for. Some loss is inherent at large scale; lower the floor where a
    layout is known to be the best available.

Example finding
    rule_id: GPU006
    resource_id: slurm/70050
    resource_type: Slurm job
    status: waste
    team: research
    job_id: "70050"
    reason: "Job 70050 (foundation-7b-scale64-70050) ran model=foundation-7b params=6.7e+09 batch=512 seq=4096 layout=tp=8,pp=1,cp=1 gpu=H100 on 64×H100 at 50% of the per-GPU throughput of job 70049 on 8 GPUs (7208 vs 14417 tokens/s per GPU; floor 70%): the GPU-hours beyond linear scaling, 50% of its GPUs (384.0 GPU-hours in the week), cost USD 806.40."
    estimated_waste: 806.40
    currency: USD
    waste_basis: "cost_hourly ÷ GPUs for each GPU-slice of the job's GPUs beyond linear scaling (gpus × (1 − efficiency))"

Remediation
    Run a scaling test at two or three sizes before launching in full, and launch at the largest size that
    keeps most of the per-GPU throughput. Keep tensor parallelism within a node (NVLink) and spread data
    parallelism across nodes; raise the global batch (or gradient accumulation) with the data-parallel
    degree; overlap gradient all-reduce with the backward pass; check the network (EFA/InfiniBand) is
    used. Measure again: the next run's efficiency shows whether it worked.

References
    Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM"
    (2021): parallel layouts and their scaling; weak-scaling efficiency as per-GPU throughput against a
    smaller run; docs/gpu.md "Scaling efficiency".
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._claims import claim_thresholds
from rules._contract import Rule, RuleParams


class Params(RuleParams):
    min_scaling_efficiency: float = Field(
        0.7,
        gt=0,
        le=1,
        description="Per-GPU throughput at or below this share of the best smaller run's is low.",
    )
    min_gpus: int = Field(16, ge=2, description="Jobs on fewer GPUs are not judged (they are baselines).")


RULE = Rule(
    id="GPU006",
    name="poor-scaling",
    category="efficiency",
    severity="medium",
    status="preview",
    summary="Jobs whose per-GPU throughput fell well below a smaller run of the same configuration.",
    doc=__doc__ or "",
    params=Params,
    requires=(
        "job_scaling",
        "jobs_enriched",
        "gpu_job_spans",
        "gpu_billed_hours",
        "resources",
        "gpu_claims",
    ),  # fmt: skip
    query=Path(__file__).with_name("query.sql"),
    shared_params=claim_thresholds,
)
