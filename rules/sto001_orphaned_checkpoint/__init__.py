"""STO001 orphaned-checkpoint: Checkpoints nobody will load again: failed, unknown or superseded runs.

What it detects
    Checkpoint files (paths under a `checkpoints:` pattern such as `s3://acme-ckpt/{project}/{run_id}/**`)
    of three kinds of training runs, one finding per run:
    failed: the run's latest scheduler job ended FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL,
    BOOT_FAIL, DEADLINE or PREEMPTED and the run was never resumed (no later job of the run, nothing written
    after the failure): all its bytes;
    unknown: no scheduler job matches the run and nothing was written for `unknown_run_idle_days`: all its
    bytes;
    superseded: the run COMPLETED and keeps more than `keep_last` checkpoints: the older steps, except the
    best one (a `{loss}` or `{score}` in the pattern) and milestones (a path token best, final, milestone,
    keep or release).

Why it is waste
    A checkpoint of a failed run is loaded only to resume it; a run that was never resumed will not be.
    A finished run needs its final (and best) weights, not every intermediate step. Checkpoints of large
    models are hundreds of GiB each and keep billing every month until someone deletes them.

How it is computed
    From the marts only: `storage_checkpoints` (the newest inventory, listing or scan of each bucket; paths
    matched to runs and steps by the config's patterns; runs matched to scheduler jobs by run_id, job name
    or job id; each bucket's price per GB-month from the bill's storage lines, else the config's
    `prices: storage_gb_month:`). Ages are measured at the end of the week; checkpoints first written after
    it are left out. estimated_waste = flagged bytes / 2^30 x price per GB-month x 7 / 30.44 (the week's
    cost of keeping them; the monthly run-rate, what deleting them saves a month, is in the evidence).
    A run of unknown origin when the warehouse has no scheduler jobs at all, or flagged bytes without any
    price, are `insufficient_data` (never priced). Precedence (a byte is priced by at most one storage
    rule): STO001 first; a checkpoint file is never a dataset file (STO002), and STO003 tiers only what
    STO001 can never claim whatever its thresholds (the final, best and milestone checkpoints of finished
    runs, the checkpoints of running runs); STO004 prices upload parts, which are not objects; STO005 prices
    old log and event files only outside every checkpoint pattern and dataset root.

Thresholds
    keep_last (default 3, checkpoints): the newest steps of a COMPLETED run that are kept.
    failed_grace_hours (default 0, hours): how long after a failed run's last job ended its checkpoints
    start to count (resumes show up as a later job of the run whenever they happen).
    unknown_run_idle_days (default 14, days): how long a run no scheduler knows must be untouched.

Known false positives
    Runs resumed under a different run id or outside the scheduler the warehouse reads; checkpoints kept on
    purpose for a paper or an audit (mark them with a `keep` or `milestone` path token, or raise keep_last);
    runs whose scheduler records are older than the warehouse's job history count as unknown.

Example finding
    rule_id: STO001
    resource_id: "s3://acme-ckpt/vit-scaling/vit-scaling-train-41916/"
    resource_type: checkpoint run
    status: waste
    team: vision
    project: vit-scaling
    job_id: "41916"
    reason: "Run vit-scaling-train-41916 (vit-scaling) FAILED on 2026-11-24 and was never resumed; its 3 checkpoint(s), 42.0 GiB in acme-ckpt, cost USD 0.22 a week (USD 0.97 a month)."
    estimated_waste: 0.22
    currency: USD
    waste_basis: "checkpoint bytes flagged x the bucket's price per GB-month (GB = 2^30 bytes) x 7 / 30.44 days; the monthly run-rate is in the evidence"

Remediation
    Delete the run's prefix (`aws s3 rm --recursive s3://acme-ckpt/<project>/<run>/`) once nobody needs
    it; for finished runs keep the last few steps with a retention script or an S3 lifecycle rule on
    checkpoint prefixes; make training jobs delete superseded checkpoints as they write new ones (e.g.
    `save_total_limit` in Hugging Face Trainer, `save_top_k` in Lightning).

References
    Hugging Face TrainingArguments.save_total_limit; PyTorch Lightning ModelCheckpoint(save_top_k);
    AWS S3 lifecycle configuration; Slurm sacct job states; S3 Inventory.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._contract import Rule, RuleParams


class Params(RuleParams):
    keep_last: int = Field(
        3, ge=1, le=10_000, description="Newest checkpoints of a COMPLETED run that are kept."
    )
    failed_grace_hours: float = Field(
        0,
        ge=0,
        le=24 * 90,
        description="Hours after a failed run's last job ended before its checkpoints count.",
    )
    unknown_run_idle_days: int = Field(
        14,
        ge=1,
        le=3650,
        description="Days without a write before a run no scheduler knows counts as orphaned.",
    )


RULE = Rule(
    id="STO001",
    name="orphaned-checkpoint",
    category="orphaned",
    severity="medium",
    status="preview",
    summary="Checkpoints nobody will load again: failed, unknown or superseded runs.",
    doc=__doc__ or "",
    params=Params,
    requires=("storage_checkpoints",),
    query=Path(__file__).with_name("query.sql"),
)
