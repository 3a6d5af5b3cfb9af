"""GPU002 overprovisioned-job: Jobs that held GPUs they did not use, or whole GPUs a MIG slice would serve.

What it detects
    Scheduler jobs (Slurm, Kubernetes pods, any jobs_csv log) that were allocated more GPU than they
    used: some of their GPUs stayed near zero all job long ("used 2 of 8 GPUs": a data-parallel run
    launched with the wrong world size, a notebook that asked for a whole node), or every GPU they used
    ran at low peak utilisation with a small fraction of its memory, so a MIG slice of the same GPU
    would have served the job (a 19 M-parameter model on a 141 GB H200).

Why it is waste
    An allocated GPU is unavailable to everyone else and billed whether or not the job uses it. Seven
    of eight idle GPUs is seven eighths of an instance that costs tens of dollars an hour; a job that
    fits a 1g or 3g MIG slice pays for the other slices of the GPU.

How it is computed
    From the marts only: `jobs_enriched` (the job, its state and runtime), `gpu_job_hours` (per-GPU
    utilisation and memory for the parts of hours the job ran), `resources` (GPUs per instance) and
    `cost_hourly`. A job is judged on all its GPU-slices, also those outside the week: per GPU, its
    mean utilisation over the job (sample-weighted), its p95 utilisation and its peak memory. Jobs
    running less than `min_runtime_minutes` and jobs that failed (GPU004's) are left out.
    A GPU averaging at most `unused_util_pct` is unused: its cost is wasted. When every used GPU kept
    its p95 utilisation at or under `max_peak_util_pct` on a MIG-capable model (A100, H100, H200, B200
    and their variants: 7 compute slices; 1g/2g/3g/4g/7g profiles with 1/2/4/4/8 eighths of the
    memory), the smallest profile whose compute share and memory hold the p95 utilisation and the
    peak memory with `mig_headroom_pct` to spare is the fit; (7 − its slices) / 7 of the used GPUs'
    cost is wasted. Utilisation is the share of time a kernel ran, an upper bound on the SMs used, so
    the fit is conservative.
    estimated_waste = sum over the job's GPU-slices in the week of cost_hourly(resource, hour) ÷ the
    instance's GPUs × the slice's share of the hour × (1 for an unused GPU, (7 − slices) / 7 for a
    MIG fit), in the currency of the instance's bill.
    Precedence (no GPU-hour priced twice): only parts of hours in which some GPU of the instance
    worked above GPU001's idle threshold are priced (`gpu001_max_util_pct`, which wastewatch takes from
    GPU001's configured `max_util_pct`): a part where every GPU idled is GPU001's. Failed jobs are
    GPU004's. GPU003 never prices a GPU this rule could claim.
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
    gpu001_max_util_pct (default 5, percent): GPU001's idle threshold; set from GPU001's
    `max_util_pct`, not by hand.

Known false positives
    Jobs that reserve GPUs for a later phase (evaluation after training), pipeline-parallel runs whose
    stages are busy at different times, MIG fits for models whose activation memory spikes between
    samples, and GPUs the telemetry cannot attribute to the job (several jobs sharing a node without
    GPU indices in their records). Utilisation below the sampling interval is invisible to nvidia-smi.

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
    waste_basis: cost_hourly ÷ GPUs × the job's hours for each GPU it did not use, plus (7 − MIG slices) / 7 of it for each GPU a MIG slice would have served, in hours some GPU of the instance worked

Remediation
    Request the GPUs the job uses (`--gres=gpu:2`, `nvidia.com/gpu: 2`); fix the launcher's world size
    (torchrun `--nproc-per-node`); run small models, notebooks and evaluation on MIG slices
    (`nvidia.com/mig-1g.18gb`) or smaller GPUs; add a Slurm job_submit or admission check that rejects
    whole-node requests from interactive partitions.

References
    Princeton Job Defense Shield "GPU underutilization" and "multi-GPU jobs with idle GPUs" alerts;
    NVIDIA MIG user guide (supported profiles per GPU); Kubernetes device plugin MIG strategies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from rules._contract import Rule, RuleParams
from rules.gpu001_idle_gpu_instance import RULE as GPU001


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
    gpu001_max_util_pct: float = Field(
        5.0, ge=0, le=100, description="GPU001's idle threshold (%); taken from GPU001's max_util_pct."
    )


def precedence_params(config: Any) -> dict[str, Any]:
    """The thresholds of the rules that come first, from their configured params (see docs/gpu.md)."""
    gpu001 = GPU001.make_params(config.rule_overrides(GPU001.id))
    return {"gpu001_max_util_pct": gpu001.max_util_pct}  # type: ignore[attr-defined]


RULE = Rule(
    id="GPU002",
    name="overprovisioned-job",
    category="overprovisioned",
    severity="high",
    status="stable",
    summary="Jobs that held GPUs they did not use, or whole GPUs a MIG slice would serve.",
    doc=__doc__ or "",
    params=Params,
    requires=("resources", "cost_hourly", "gpu_job_hours", "jobs_enriched"),
    query=Path(__file__).with_name("query.sql"),
    config_params=precedence_params,
)
