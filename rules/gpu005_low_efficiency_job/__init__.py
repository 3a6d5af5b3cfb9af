"""GPU005 low-efficiency-job: Training jobs whose measured MFU stayed below a floor.

What it detects
    Training jobs whose model FLOPs utilisation, measured from their own training log (the `job_mfu`
    mart: 6 × parameters × tokens per second over the wall clock between log lines ÷ GPUs × the GPU's
    dense peak), stayed below a floor for at least a minimum time. The finding names the likeliest cause
    the telemetry shows: input stalls (much of the wall clock falls outside the log's step times, or the
    log says it waited for data), low power (the GPUs drew little of their power limit: small batches,
    launch-bound kernels, a model too small for the GPU), or memory-bound (busy GPUs that deliver few
    FLOPs).

Why it is waste
    A GPU-hour at 12 % MFU buys half the training of one at the 25 % a well-configured job reaches on
    the same GPU; the difference is paid for and produces nothing. Teams that set a floor of acceptable
    effective utilisation catch the jobs that need their input pipeline, batch size or parallelism fixed.

How it is computed
    From the marts only: `job_mfu` (the job's median MFU over its log intervals, the time outside steps,
    power), `job_mfu_hourly` (how long it stayed below the floor), `jobs_enriched`, `gpu_job_spans` (jobs
    that did not fail), `gpu_job_hours` and `gpu_billed_hours` (each GPU-slice's share of cost_hourly).
    A job is low when its median MFU is below its floor (`team_floors`, else the `size_floors` entry of
    the largest `min_params` at most its parameter count, else `floor`) and the hours whose MFU was
    below the floor cover at least `min_low_minutes` of logged time.
    estimated_waste = sum over the job's in-week GPU-slices that no other GPU rule prices of
    cost_hourly(resource, hour) ÷ the instance's GPUs × the slice's share of the hour × (1 − MFU / floor).
    Precedence (no GPU-hour priced twice), GPU005 comes last: its claim in the `gpu_claims` mart is
    whatever GPU time of a job that did not fail no other GPU rule claims, so it prices never a failed
    job (GPU004), only parts of hours in which some GPU of the instance worked above GPU001's idle
    threshold, never a GPU GPU002 claims (unused, or p95 low enough for a MIG slice or a smaller GPU),
    never a GPU GPU003 finds starved and never a GPU GPU006 takes as beyond what linear scaling from a
    smaller run of the job's configuration needed, each judged by that rule's own configured params. A low job
    whose GPU-hours another rule claims is reported as `suspect` with no money, naming that rule; one
    with no billed hours as `insufficient_data`.
    One finding per job and week: resource_id is the job's key, job_id its id.

Thresholds
    floor (default 0.25, share of the dense peak): MFU below this is low.
    team_floors (empty by default): {team, floor} entries; a team's floor wins over the others.
    size_floors (empty by default): {min_params, floor} entries; the largest min_params at most the model's
    parameter count gives its floor (a 1 B model rarely reaches what a 70 B one does).
    min_low_minutes (default 60, minutes): least logged time in hours below the floor.
    stall_share (default 0.3): share of the wall clock outside step times (or waiting for input) that
    names input stalls as the cause.
    low_power_share (default 0.5): mean power below this share of the limit names low power.
    busy_util_pct (default 80, percent): utilisation at least this with low MFU names memory-bound.

Known false positives
    MFU counts 6 × N FLOPs per token: models with long sequences (attention FLOPs), mixture-of-experts
    (N should be the active parameters), activation recomputation or FP8 training report less or more
    than they do; give the log's active parameter count, and set floors per model size. Fine-tuning and
    evaluation-heavy jobs legitimately run lower. A job whose log misses some of its GPUs' work (a
    per-rank log of one data-parallel group) needs its `gpus` set to the GPUs that log speaks for.

Example finding
    rule_id: GPU005
    resource_id: slurm/52310
    resource_type: Slurm job
    status: waste
    team: nlp
    job_id: "52310"
    reason: "Job 52310 (llm-7b-pretrain) on gpu-h100-02 trained its 7.0B-parameter model at 12.0% MFU (median of 1,440 log intervals on 8×H100; floor 25%) for 12.0 h; likeliest cause: input stalls (61% of the wall clock outside training steps); the shortfall, 52% of 96.0 GPU-hours, cost USD 198.14."
    estimated_waste: 198.14
    currency: USD
    waste_basis: cost_hourly ÷ GPUs × (1 − MFU / floor) for each GPU-slice of the job no other GPU rule prices

Remediation
    Input stalls: more data-loader workers and prefetching, a local cache or pre-sharded dataset, larger
    sequential reads. Low power: a larger micro-batch, fused kernels, CUDA graphs, fewer or smaller GPUs.
    Memory-bound: activation checkpointing trade-offs, fused optimisers, FlashAttention, BF16 throughout.
    Measure again: the next week's MFU shows whether it worked.

References
    Chowdhery et al., "PaLM: Scaling Language Modeling with Pathways" (2022), appendix B: model FLOPs
    utilisation; Kaplan et al. (2020): 6 × N FLOPs per token; NVIDIA datasheets for dense peaks
    (pipelines/catalog/gpu_peak_flops.csv); docs/gpu.md "MFU".
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rules._claims import claim_thresholds
from rules._contract import Rule, RuleParams


class TeamFloor(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    team: str = Field(min_length=1)
    floor: float = Field(gt=0, le=1)


class SizeFloor(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    min_params: float = Field(ge=0, description="Parameter count from which this floor applies.")
    floor: float = Field(gt=0, le=1)


class Params(RuleParams):
    floor: float = Field(0.25, gt=0, le=1, description="MFU below this share of the dense peak is low.")
    team_floors: tuple[TeamFloor, ...] = Field((), description="{team, floor}: a team's own floor.")
    size_floors: tuple[SizeFloor, ...] = Field(
        (),
        description="{min_params, floor}: the largest min_params at most the model's size gives its floor.",
    )
    min_low_minutes: float = Field(
        60.0,
        ge=0,
        le=10080,
        description="Least logged time (minutes) in hours whose MFU was below the floor.",
    )
    stall_share: float = Field(
        0.3, ge=0, le=1, description="Share of the wall clock outside step times that names input stalls."
    )
    low_power_share: float = Field(
        0.5, ge=0, le=1, description="Mean power below this share of the limit names low power."
    )
    busy_util_pct: float = Field(
        80.0, ge=0, le=100, description="Utilisation (%) at least this with low MFU names memory-bound."
    )


RULE = Rule(
    id="GPU005",
    name="low-efficiency-job",
    category="efficiency",
    severity="medium",
    status="preview",
    summary="Training jobs whose measured MFU stayed below a floor.",
    doc=__doc__ or "",
    params=Params,
    requires=(
        "job_mfu",
        "job_mfu_hourly",
        "jobs_enriched",
        "gpu_job_spans",
        "gpu_job_hours",
        "gpu_billed_hours",
        "resources",
        "gpu_claims",
    ),  # fmt: skip
    query=Path(__file__).with_name("query.sql"),
    shared_params=claim_thresholds,
)
