"""GPU004 failed-job-and-zombie: GPU time of jobs that failed, and instances billed after their last job.

What it detects
    Two ways GPU money buys no result. Jobs that failed, were cancelled, hit their time limit, ran out
    of memory or lost their node: the GPU-hours they burnt (since their last checkpoint, when the job
    record names it) produced nothing that survives. And zombie instances: a machine billed for hours
    after the last job on it ended, with no job running and no GPU telemetry at all — the job died or
    finished, its node stayed up and nothing watched it.
    Failed jobs that repeat are one finding: a crash loop, the same job name failing
    `loop_min_failures` times within `loop_window_hours` (3 in 24 h) with no success between, groups
    its attempts, prices them once and names the cause they share.

Why it is waste
    A crash after 20 hours on 8 H100s throws away 160 GPU-hours; the instance that keeps billing after
    the crash doubles the loss. Both are billed in full by the provider. A job resubmitted or retried
    automatically (Slurm scripts that resubmit themselves, a Kubernetes Job's backoffLimit, a CronJob)
    that fails the same way each time burns its GPUs again with every attempt.

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
    Crash loop: the failures (FAILED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, BOOT_FAIL, DEADLINE; not
    CANCELLED, which a person decided) and successes (COMPLETED) of one job name, ordered by the time
    they ended, from `loop_window_hours` before the window to its end (never after it, so a week's
    findings do not change when later weeks arrive). A success ends a streak. A failure is an attempt
    of a loop when some `loop_window_hours` of its streak hold at least `loop_min_failures` failures
    including it. One finding per name and week (resource_id `crash-loop:<scheduler>/<cluster>/
    <account>/<user>/<name>`, the parts the records have; job_id = the latest attempt); estimated_waste
    = the sum of its attempts' failed-job waste in the week, exactly as above (each attempt's slices
    after its own last checkpoint), and those attempts get no failed-job finding of their own. The
    evidence lists the attempts (the latest 50: job id and key, start, end, state, exit code, hosts,
    lost GPU-hours and its cost in this week; attempts before the window are listed at 0, they were
    priced in their week).
    The reason says "failed N times in H hours" (H from the first failure to the last) and the
    likeliest shared cause visible, in this order: the same terminal state (out of memory, time limit,
    lost node: it names the cause), failing at the same time into the run (runtimes within 10 % or
    2 min: a step the run reaches every time — a bad data shard, an evaluation, a checkpoint write, a
    memory peak), the same host (a bad node), the same exit code; or "none visible".
    The name: Slurm JobName (by default the batch script's name) and jobs_csv job_name, as written;
    for Kubernetes the pod's Job (its owner reference, else its `job-name` label, else the pod name
    without the generated suffixes of a Job, an indexed Job or a ReplicaSet), and a CronJob's Jobs
    (`<cronjob>-<scheduled minute>`) under the CronJob's name. The key also holds cluster, account
    (Slurm account, Kubernetes namespace) and user: two people's `train.sh` are not one loop. Retries:
    a Kubernetes Job's retries are new pods, so each is an attempt; a container restarted inside one
    pod (restartPolicy OnFailure, CrashLoopBackOff) is one pod record with no per-restart times, so
    one attempt. A requeued Slurm job keeps its JobID and the warehouse keeps its latest record, so its
    requeues are one attempt; a job that resubmits itself gets a new JobID and each run is an attempt.
    Slurm array tasks carry the array's JobName and are attempts of that name: an array whose tasks
    all fail is a loop, while a sweep whose tasks mostly succeed is not (the successes end the streaks).
    Jobs without a name are never grouped.
    Why GPU004 and not a rule of its own: a loop's waste is exactly its attempts' failed-job waste, the
    same GPU-slices priced by the same formula, so the rule that prices failed jobs groups them; the
    loop adds no priced unit (`priced_units` is unchanged) and no GPU-hour can be priced twice by
    construction. A separate rule would price the same slices and need GPU004 to leave the loop's
    attempts out, repeating the loop detection with the other rule's thresholds in two queries that
    must agree, and switching that rule off would silently move money back into GPU004.
    Precedence (no GPU-hour priced twice): GPU004's claims come first in the `gpu_claims` mart: failed
    jobs' GPU-hours, a crash loop's among them (GPU001 leaves any part of an hour with a failed job out,
    GPU002, GPU003 and GPU005 any failed job), and the billed hours without telemetry (its zombie hours); hours after a job whose telemetry shows idle GPUs are GPU001's (it has the
    measurement). Within GPU004 each failed job's slices are in one finding: its loop's, else its own.
    Short captures: failed jobs are priced by their own slices, whatever their length.

Thresholds
    min_zombie_hours (default 2, hours): the shortest stretch of billed hours with no job and no
    telemetry after a job that counts.
    loop_min_failures (default 3): failures of one job name within loop_window_hours, with no success
    between, that make a crash loop; 1000 keeps one finding per failed job.
    loop_window_hours (default 24, at most 168): the window in which they must fail.

Known false positives
    Cancelled jobs whose results were already saved (a user stopping a converged run), time limits
    reached by design with checkpoints the record does not name, and zombie hours of instances whose
    telemetry and scheduler records both stopped being collected (a broken exporter and a broken
    sacct export look the same as a forgotten machine). A crash loop of unrelated jobs that share a
    generic name (`bash`, `python`, `interactive`) and a user: give jobs names.

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
    instances). For a crash loop, fix the shared cause before the next attempt: cap automatic retries
    (a Job's `backoffLimit`, a `podFailurePolicy` that fails the Job on a non-retriable exit code,
    resubmission scripts that stop after N failures), drain a node all attempts failed on, and resume
    from the last checkpoint rather than from scratch.

References
    Slurm sacct job states and `--requeue`; Kubernetes Job `backoffLimit` and `podFailurePolicy`,
    CronJob job naming; Meta "Revisiting Reliability in Large-Scale ML Research Clusters" (job
    failure rates and lost GPU time); Kubernetes cluster autoscaler scale-down of unneeded nodes.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._claims import claim_thresholds
from rules._contract import Rule, RuleParams


class Params(RuleParams):
    min_zombie_hours: float = Field(
        2.0,
        gt=0,
        le=48,
        description="Shortest stretch of billed hours with no job and no telemetry after a job that counts.",
    )
    loop_min_failures: int = Field(
        3,
        ge=2,
        le=1000,
        description="Failures of one job name within loop_window_hours that make a crash loop (1000: never).",
    )
    loop_window_hours: float = Field(
        24.0,
        gt=0,
        le=168,
        description="The window, in hours, in which loop_min_failures failures of one job name are a crash loop.",
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
    requires=(
        "resources",
        "gpu_billed_hours",
        "gpu_job_hours",
        "jobs_enriched",
        "storage_checkpoints",
        "gpu_claims",
    ),  # fmt: skip
    query=Path(__file__).with_name("query.sql"),
    shared_params=claim_thresholds,
)
