"""GPU002 overprovisioned-job: Jobs that held GPUs they did not use, or GPUs a MIG slice or a smaller GPU would serve.

What it detects
    Scheduler jobs (Slurm, Kubernetes pods, any jobs_csv log) that were allocated more GPU than they
    used: some of their GPUs stayed near zero all job long ("used 2 of 8 GPUs": a data-parallel run
    launched with the wrong world size, a notebook that asked for a whole node), or every GPU they used
    ran at low peak utilisation with a small fraction of its memory, so a MIG slice of the same GPU
    would have served the job (a 19 M-parameter model on a 141 GB H200), or, where no MIG slice fits
    (GPUs without MIG such as the L40S, or a job needing more memory than half a GPU), a smaller and
    cheaper GPU model would have (an inference job using 8 GB of a 48 GB L40S fits a 24 GB L4).

Why it is waste
    An allocated GPU is unavailable to everyone else and billed whether or not the job uses it. Seven
    of eight idle GPUs is seven eighths of an instance that costs tens of dollars an hour; a job that
    fits a 1g or 3g MIG slice pays for the other slices of the GPU; a job that fits a smaller GPU pays
    the price difference every hour it runs.

How it is computed
    From the marts only: `jobs_enriched` (the job and its state), `gpu_job_spans` (its runtime; jobs
    that did not fail), `gpu_job_hours` (per-GPU utilisation and memory for the parts of hours the job
    ran), `resources` (GPUs per instance) and `gpu_billed_hours` (each GPU resource-hour's
    `cost_hourly`). A job is judged on all its GPU-slices, also those outside the week: per GPU, its
    mean utilisation over the job (sample-weighted), its p95 utilisation and its peak memory. Jobs
    running less than `min_runtime_minutes` and jobs that failed (GPU004's) are left out.
    A GPU averaging at most `unused_util_pct` is unused: its cost is wasted. When every used GPU kept
    its p95 utilisation at or under `max_peak_util_pct` on a MIG-capable model (A100, H100, H200, B200
    and their variants: 7 compute slices; 1g/2g/3g/4g/7g profiles with 1/2/4/4/8 eighths of the
    memory), the smallest profile whose compute share and memory hold the p95 utilisation and the
    peak memory with `mig_headroom_pct` to spare is the fit; (7 − its slices) / 7 of the used GPUs'
    cost is wasted. Utilisation is the share of time a kernel ran, an upper bound on the SMs used, so
    the fit is conservative.
    Smaller GPU (only when no MIG slice fits, and never for an unused GPU): when every used GPU kept
    its p95 utilisation at or under `smaller_gpu_max_peak_util_pct` (and `max_peak_util_pct`), the
    candidates are the GPUs of `smaller_gpus` on the same cloud that are smaller than the job's (less
    peak compute, or at least 10 % less memory, and neither more) and hold the job with
    `smaller_gpu_headroom_pct` to spare: their memory (the provider's figure read as 10^9 bytes, the
    smaller reading) at least the peak memory used + headroom, and the p95 utilisation scaled by the
    two GPUs' peak dense TFLOP/s (`gpu_peak_tflops`, matched by the telemetry's model name, else the
    bill's) + headroom at most 100 %. The job's GPU with unknown peak compute gets no smaller fit.
    The job's GPU memory is the telemetry's total, else the bill's (nvidia_smi_dmon reports none).
    Each candidate is priced so that the waste is never overstated: its measured effective price is
    the median effective cost per GPU-hour of that model and memory in the week, same cloud and
    currency, over full hours only (billed in the hour before and after, within the resource's
    first_seen .. last_seen) of instances with at least as many GPUs as the job's (a 1-GPU size, a
    partial first or last hour of a run never lowers it); the price is the higher of it and the list
    price (`smaller_gpus`) when the list price is in the job's currency (a lower measured price may be
    a discount or spot rate the job could not buy), else the measured price, else nothing.
    The cheapest candidate is the fit. The job's own GPU is always priced from its bill.
    estimated_waste = sum over the job's GPU-slices in the week of c = cost_hourly(resource, hour) ÷
    the instance's GPUs × the slice's share of the hour, taken × 1 for an unused GPU, × (7 − slices) / 7
    for a MIG fit, and as max(c − the smaller GPU's price per GPU-hour × the slice's hours, 0) for a
    smaller-GPU fit (never negative), in the currency of the instance's bill.
    Within the rule a GPU is priced once: unused (its whole cost), else a MIG fit, else a smaller-GPU
    fit; a MIG fit comes before a smaller GPU because it is priced from the bill alone.
    Precedence (no GPU-hour priced twice): only the GPU-slices the `gpu_claims` mart gives this rule
    are priced. Its claim: a GPU of a job that ran at least `min_runtime_minutes`, unused (mean at most
    `unused_util_pct`) or with p95 utilisation at most `max_peak_util_pct` (both fits need it), in a
    part of an hour in which some GPU of the instance worked above GPU001's idle threshold (GPU001's own
    `max_util_pct`: a part where every GPU idled is GPU001's); failed jobs are GPU004's. GPU003 and
    GPU005 come after it, so they never price a GPU it claims.
    One finding per job and week: resource_id is the job's key (`slurm/41877`), job_id its id, team
    and project from the job record or else from the billing tags of its hosts.
    Short captures: `min_runtime_minutes` takes fractions, and jobs are judged on their own slices,
    so a capture minutes long is judged by the same rule.

Thresholds
    min_runtime_minutes (default 30, minutes): jobs that ran a shorter time are ignored.
    unused_util_pct (default 2, percent): a GPU whose mean utilisation over the job is at most this
    was not used (at most 10).
    max_peak_util_pct (default 50, percent): the highest p95 utilisation of a used GPU for the job to
    be considered for a MIG slice (at most 50).
    mig_headroom_pct (default 20, percent): spare capacity kept on the p95 utilisation and the peak
    memory when choosing the MIG slice.
    smaller_gpu_max_peak_util_pct (default 50, percent): the highest p95 utilisation of a used GPU
    for the job to be considered for a smaller GPU (at most 50; the lower of it and
    max_peak_util_pct applies).
    smaller_gpu_headroom_pct (default 20, percent): spare memory and compute kept on the smaller GPU.
    smaller_gpus (default: the built-in list, see docs/gpu.md): the GPUs a job may move to, each with
    gpu_model, gpu_memory_gib, price_per_gpu_hour, currency, provider and price_note. Built from
    `list_prices.csv` in this folder (AWS us-east-1 On-Demand Linux list prices of g6.48xlarge (L4),
    g6e.48xlarge (L40S), p4d.24xlarge (A100 40 GB) and p5.48xlarge (H100), recorded 2025-06, ÷ the
    instance's GPUs) and the built-in instance-type catalogue (GPU model, count, memory), read when
    the params are first made, not at import. They are list prices: a higher measured price of the
    same GPU on the bill replaces them, a lower one does not. Model names are normalised like
    telemetry's (`NVIDIA L4` is the L4). Overriding replaces the whole list.
    gpu_peak_tflops (default: pipelines/catalog/gpu_peak_flops.csv): peak dense tensor TFLOP/s per GPU
    model, with the aliases telemetry names it by; used to scale utilisation between two GPUs.

Known false positives
    Jobs that reserve GPUs for a later phase (evaluation after training), pipeline-parallel runs whose
    stages are busy at different times, MIG fits for models whose activation memory spikes between
    samples, and GPUs the telemetry cannot attribute to the job (several jobs sharing a node without
    GPU indices in their records). Utilisation below the sampling interval is invisible to nvidia-smi.
    Smaller-GPU fits scale utilisation by peak TFLOP/s only: a memory-bandwidth-bound job slows down
    more on a GPU with less bandwidth (an L40S has about a quarter of an H100's); jobs that need NVLink
    between GPUs, more host memory per GPU than the smaller instance has, or a feature the smaller GPU
    lacks. The list prices are on-demand prices of one region; a negotiated, reserved or spot price
    below them is never taken from the bill (set it in `smaller_gpus` to use it), so the waste of a
    team with such prices is understated.

Example finding
    rule_id: GPU002
    resource_id: slurm/41902
    resource_type: Slurm job
    status: waste
    team: nlp
    job_id: "41902"
    reason: "Job 41902 (llm-pretrain-finetune-41902) on gpu-h100-05 used 2 of its 8×H100 80GB HBM3 for 72.0 h: 6 GPU(s) averaged ≤0.0% util all job long (the others 84.5%), costing USD 1664.41."
    estimated_waste: 1664.41
    currency: USD
    waste_basis: cost_hourly ÷ GPUs × the job's hours for each GPU it did not use, plus (7 − MIG slices) / 7 of it for each GPU a MIG slice would have served, or else (that cost − the smaller GPU's price per GPU-hour × the hours, never below 0) for each GPU a smaller GPU would have served, in hours some GPU of the instance worked

Remediation
    Request the GPUs the job uses (`--gres=gpu:2`, `nvidia.com/gpu: 2`); fix the launcher's world size
    (torchrun `--nproc-per-node`); run small models, notebooks and evaluation on MIG slices
    (`nvidia.com/mig-1g.18gb`) or smaller GPUs (an L4 or L40S node pool, a `--gres=gpu:l4:1`
    partition); add a Slurm job_submit or admission check that rejects whole-node requests from
    interactive partitions.

References
    Princeton Job Defense Shield "GPU underutilization" and "multi-GPU jobs with idle GPUs" alerts;
    NVIDIA MIG user guide (supported profiles per GPU); Kubernetes device plugin MIG strategies;
    Amazon EC2 On-Demand pricing (https://aws.amazon.com/ec2/pricing/on-demand/) for the list prices;
    NVIDIA datasheets for peak TFLOP/s (pipelines/catalog/gpu_peak_flops.csv names each source).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._claims import claim_thresholds
from rules._contract import Rule, RuleParams
from rules.gpu002_overprovisioned_job.reference import (
    GpuPeak,
    SmallerGpu,
    default_gpu_peaks,
    default_smaller_gpus,
)


class Params(RuleParams):
    min_runtime_minutes: float = Field(
        30.0, ge=0, le=10080, description="Jobs that ran a shorter time (minutes) are ignored."
    )
    unused_util_pct: float = Field(
        2.0, ge=0, le=10, description="A GPU whose mean util (%) over the job is at most this was not used."
    )
    max_peak_util_pct: float = Field(
        50.0, ge=0, le=50, description="Highest p95 util (%) of a used GPU for a MIG slice to be considered."
    )
    mig_headroom_pct: float = Field(
        20.0, ge=0, le=100, description="Spare capacity (%) on p95 util and peak memory for the MIG fit."
    )
    smaller_gpu_max_peak_util_pct: float = Field(
        50.0,
        ge=0,
        le=50,
        description="Highest p95 util (%) of a used GPU for a smaller GPU to be considered.",
    )
    smaller_gpu_headroom_pct: float = Field(
        20.0, ge=0, le=100, description="Spare memory and compute (%) kept on the smaller GPU."
    )
    # the built-in tables are read when Params are first made, not at import: a bad CSV fails the runs
    # that use GPU002, never every command
    smaller_gpus: tuple[SmallerGpu, ...] = Field(
        default_factory=default_smaller_gpus,
        description=(
            "GPUs a job may move to, with list prices per GPU-hour (a higher measured price replaces them); "
            "default: the built-in list (list_prices.csv, see docs/gpu.md)."
        ),
    )
    gpu_peak_tflops: tuple[GpuPeak, ...] = Field(
        default_factory=default_gpu_peaks,
        min_length=1,
        description=(
            "Peak dense TFLOP/s per GPU model and its aliases, to scale util between GPUs; "
            "default: pipelines/catalog/gpu_peak_flops.csv."
        ),
    )


RULE = Rule(
    id="GPU002",
    name="overprovisioned-job",
    category="overprovisioned",
    severity="high",
    status="stable",
    summary="Jobs that held GPUs they did not use, or GPUs a MIG slice or a smaller GPU would serve.",
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
