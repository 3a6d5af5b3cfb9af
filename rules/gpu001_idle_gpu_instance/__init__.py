"""GPU001 idle-gpu-instance: GPU instances billed while every one of their GPUs sat idle.

What it detects
    GPU instances (any resource whose instance type has GPUs, or whose host reported GPUs) that were
    billed for stretches of at least `min_idle_hours` consecutive hours during which every GPU averaged
    at most `max_util_pct` utilisation: instances left running overnight or over a weekend, a node whose
    job crashed while the machine kept billing, a reservation nobody scheduled onto.

Why it is waste
    A GPU instance is billed by the hour whether or not its GPUs compute. An 8-GPU H100 instance costs
    tens of dollars an hour; an idle night is hundreds of dollars that bought nothing.

How it is computed
    From the marts only: `resources` (GPU count per billed resource), `gpu_billed_hours` (the effective
    cost of each GPU resource-hour, from `cost_hourly`) and `gpu_job_hours` (per-GPU utilisation, power,
    memory and coverage per hour, split where a job starts or ends on the host, mapped to the billed
    resource through the inventory, the billing host tag, the resource name or id). Each part of a billed hour (the whole
    hour unless a job started or ended in it) is `idle` when every GPU of the instance has telemetry
    for at least `min_coverage` of it and none averaged above `max_util_pct` utilisation (or SM
    activity, when DCGM reports it), above `max_power_pct` of its power limit or above
    `max_mem_util_pct` memory-controller utilisation. Memory held is not work: an idle GPU holding
    most of its memory (a parked notebook) is idle, and the reason says how much it held. A part is
    `no_data` when any GPU lacks that telemetry or reports no utilisation (each GPU counted once,
    whichever host name reported it), and GPU004's when a failed, cancelled or OOM job ran in it.
    Consecutive idle parts form a stretch (an unbilled, busy, failed-job or unobserved part ends it);
    stretches are followed 48 h past the window's edges so a stretch crossing midnight on Sunday is
    judged by its whole length.
    estimated_waste = sum of effective_cost x (share of the hour the stretch spans) over the in-week
    hours of stretches of at least `min_idle_hours` hours, in the resource's billing currency
    (`resources.currency`): lines billed in another currency are left out, never added to it. A
    resource with no idle waste but at least `min_idle_hours` billed hours without telemetry gets an
    `insufficient_data` finding (estimated_waste 0): missing telemetry is never read as "busy".
    Precedence (no GPU-hour priced twice, the `gpu_claims` mart): GPU004 owns the hours of failed jobs
    and the billed hours with no telemetry after a host's last job; GPU001 claims every part of an hour
    in which each GPU of the instance is at or under `max_util_pct` (and prices the idle stretches
    among them), including the hours after a crashed job when telemetry shows the GPUs idle, and the
    hours of an idle job (a parked notebook); GPU002, GPU003 and GPU005 price only parts of hours in
    which some GPU worked (docs/gpu.md).
    Short captures: `min_idle_hours` takes fractions (0.01 = 36 s), so a capture minutes long is
    judged by the same rule.

Thresholds
    max_util_pct (default 5, percent): the highest mean utilisation of any GPU for a part of an hour to
    count as idle.
    min_idle_hours (default 2, hours): the shortest stretch of consecutive idle billed time that counts;
    fractions allowed.
    min_coverage (default 0.5, share of the hour): how much of an hour (or part) a GPU's samples must
    cover for it to count as observed.
    max_power_pct (default 35, percent of the power limit): a GPU drawing more on average is working
    (copies, memory-bound kernels) even at low utilisation; ignored when power or its limit is unknown.
    max_mem_util_pct (default 10, percent): a GPU whose memory controller is busier is working; ignored
    when unknown.

Known false positives
    Warm pools and standby capacity kept idle on purpose; instances doing CPU-only work (data
    preparation) on a GPU machine; GPUs used through a path the telemetry does not see (MIG instances
    reported on a different host). Acknowledge such findings (`wastewatch ack`) or raise thresholds.

Example finding
    rule_id: GPU001
    resource_id: i-0a1b2c3d4e5f60718
    resource_type: GPU instance
    status: waste
    team: nlp
    reason: "p5.48xlarge i-0a1b2c3d4e5f60718 (gpu-node-03, 8×H100) sat idle for 30 of 168 billed hours in 3 stretch(es) of ≥2 h (every GPU ≤5.0% util, mean 0.3%, 68 W), costing USD 1651.20."
    estimated_waste: 1651.20
    currency: USD
    waste_basis: effective cost (cost_hourly) of the billed hours in idle stretches of at least 2 consecutive hours

Remediation
    Stop or terminate the instance when no job is queued for it (a scheduler idle-shutdown, an
    auto-stop script on the node watching nvidia-smi, or a Slurm/Kubernetes autoscaler scale-down);
    release reservations nobody uses; for crashed jobs, make the job's exit stop the machine.

References
    Princeton jobstats / Job Defense Shield zero-utilisation alerts (60-120 min);
    gpu-pruner idle definition (30 min under 1 % engine activity);
    Azure Advisor idle VM thresholds; FOCUS 1.2 EffectiveCost semantics.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._claims import claim_thresholds
from rules._contract import Rule, RuleParams


class Params(RuleParams):
    max_util_pct: float = Field(
        5.0, ge=0, le=100, description="Highest mean GPU util (%) of an idle hour (or part of one)."
    )
    # int | float: whole hours stay whole in messages and effective params; fractions for short captures
    min_idle_hours: int | float = Field(
        2, gt=0, le=48, description="Shortest stretch of idle billed hours that counts (fractions allowed)."
    )
    min_coverage: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Share of an hour a GPU's samples must cover for the hour to be observed.",
    )
    max_power_pct: float = Field(
        35.0, ge=0, le=100, description="Highest mean power (% of the GPU's power limit) of an idle GPU."
    )
    max_mem_util_pct: float = Field(
        10.0, ge=0, le=100, description="Highest mean memory-controller util (%) of an idle GPU."
    )


RULE = Rule(
    id="GPU001",
    name="idle-gpu-instance",
    category="idle",
    severity="high",
    status="stable",
    summary="GPU instances billed while every one of their GPUs sat idle.",
    doc=__doc__ or "",
    params=Params,
    requires=("resources", "gpu_billed_hours", "gpu_job_hours", "gpu_claims"),
    query=Path(__file__).with_name("query.sql"),
    shared_params=claim_thresholds,
)
