"""GPU004 failed-job-and-zombie: GPU time of jobs that failed, and instances billed after their last job.

What it detects
    Two ways GPU money buys no result. Jobs that failed, were cancelled, hit their time limit, ran out
    of memory or lost their node: the GPU-hours they burnt (since their last checkpoint, when the job
    record names it) produced nothing that survives. And zombie instances: a machine billed for hours
    after the last job on it ended, with no job running and no GPU telemetry at all — the job died or
    finished, its node stayed up and nothing watched it.

Why it is waste
    A crash after 20 hours on 8 H100s throws away 160 GPU-hours; the instance that keeps billing after
    the crash doubles the loss. Both are billed in full by the provider.

How it is computed
    From the marts only: `jobs_enriched` (state, the billed resources its hosts map to),
    `gpu_job_hours` (the parts of hours each job ran on each GPU), `storage_checkpoints`, `resources`
    and `gpu_billed_hours` (each GPU resource-hour's `cost_hourly`).
    Failed job: every GPU-slice attributed to a job whose state is FAILED, CANCELLED, TIMEOUT,
    OUT_OF_MEMORY, NODE_FAIL, BOOT_FAIL or DEADLINE; estimated_waste = sum over its in-week slices of
    cost_hourly(resource, hour) ÷ the instance's GPUs × the slice's share of the hour after the job's
    last checkpoint (all of it when unknown). The last checkpoint is the job record's
    `last_checkpoint_at`, else the newest checkpoint of the job's run that `storage_checkpoints` (the
    object-storage inventories under a `checkpoints:` pattern) saw written while the job ran. One
    finding per job (resource_id = its key).
    Zombie: billed hours of a GPU instance with no gpu_job_hours row at all (no telemetry from any
    GPU), no job running in any part of the hour, and at least one job on the instance ended before
    it, in consecutive stretches of at least `min_zombie_hours` (followed 48 h past the window's
    edges, priced for the week's hours); estimated_waste = their effective cost. One finding per
    instance. The scheduler's record is the evidence here: the hours are also reported by GPU001 as
    `insufficient_data` (no telemetry), never priced twice.
    Precedence (no GPU-hour priced twice): GPU004 owns failed jobs' GPU-hours (GPU001, GPU002 and
    GPU003 leave any part of an hour with a failed job out) and the zombie hours without telemetry;
    hours after a job whose telemetry shows idle GPUs are GPU001's (it has the measurement).
    Short captures: failed jobs are priced by their own slices, whatever their length.

Thresholds
    min_zombie_hours (default 2, hours): the shortest stretch of billed hours with no job and no
    telemetry after a job that counts.

Known false positives
    Cancelled jobs whose results were already saved (a user stopping a converged run), time limits
    reached by design with checkpoints the record does not name, and zombie hours of instances whose
    telemetry and scheduler records both stopped being collected (a broken exporter and a broken
    sacct export look the same as a forgotten machine).

Example finding
    rule_id: GPU004
    resource_id: slurm/41899
    resource_type: Slurm job
    status: waste
    team: vision
    job_id: "41899"
    reason: "Job 41899 (vit-scaling-train-41899) failed after 20.0 h on gpu-h100-09: 8×H100 at 84.5% mean util for 160 GPU-hours bought no result, costing USD 770.56."
    estimated_waste: 770.56
    currency: USD
    waste_basis: cost_hourly ÷ GPUs × the GPU-hours of the failed job in the week (after its last checkpoint when known)

Remediation
    Checkpoint often enough that a crash loses little and record the checkpoint with the job; fail
    fast (NaN checks, health checks before long runs); stop or release the node when a job ends (Slurm
    `SuspendProgram`/power saving, cluster autoscaler scale-down, an epilog that stops idle cloud
    instances).

References
    Slurm sacct job states; Meta "Revisiting Reliability in Large-Scale ML Research Clusters" (job
    failure rates and lost GPU time); Kubernetes cluster autoscaler scale-down of unneeded nodes.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._contract import Rule, RuleParams


class Params(RuleParams):
    min_zombie_hours: float = Field(
        2.0,
        gt=0,
        le=48,
        description="Shortest stretch of billed hours with no job and no telemetry after a job that counts.",
    )


RULE = Rule(
    id="GPU004",
    name="failed-job-and-zombie",
    category="failed",
    severity="high",
    status="stable",
    summary="GPU time of jobs that failed, and instances billed after their last job.",
    doc=__doc__ or "",
    params=Params,
    requires=("resources", "gpu_billed_hours", "gpu_job_hours", "jobs_enriched", "storage_checkpoints"),
    query=Path(__file__).with_name("query.sql"),
)
