"""STO003 cold-checkpoint-tiering: Old checkpoints that are kept, but still stored in a hot storage class.

What it detects
    Checkpoints written more than `min_age_days` ago that still sit in a hot S3 storage class
    (`hot_classes`) although nobody trains from them any more: the final, best and milestone checkpoints of
    finished runs (the ones worth keeping), and old checkpoints of runs still running. One finding per run.

Why it is waste
    A checkpoint kept for reference is read rarely, if ever; STANDARD storage costs several times a colder
    class such as GLACIER_IR for the same bytes, every month it is kept.

How it is computed
    From the marts only: `storage_checkpoints` (checkpoint files of the newest snapshot of each bucket, with
    their run's state from the scheduler, step rank, best/milestone flags and the bucket's price per
    GB-month for their class) and `storage_prices` (the bucket's price for `target_class`, from the bill or
    else `prices: storage_gb_month:`). Age is the checkpoint's last write, measured at the end of the week.
    estimated_waste = bytes / 2^30 x (hot class price - target class price) x 7 / 30.44; the monthly
    run-rate is in the evidence. Checkpoints without a price for either class make the run
    `insufficient_data`. Precedence: STO003 considers only the checkpoints STO001 can never claim whatever
    its thresholds (every checkpoint of a running run; the newest, best and milestone checkpoints and the
    files outside any step of a COMPLETED run); failed, unknown and superseded checkpoints are STO001's to
    delete, so no byte is priced twice.

Thresholds
    min_age_days (default 30, days): how long ago a checkpoint must have been written.
    hot_classes (by default STANDARD, REDUCED_REDUNDANCY and EXPRESS_ONEZONE): the classes that count as
    hot.
    target_class (by default GLACIER_IR): the colder class the saving is computed against.

Known false positives
    Checkpoints a serving or evaluation pipeline still loads often (retrievals from colder classes are
    charged per GB, and GLACIER_IR bills at least 90 days of storage); buckets under S3 Intelligent-Tiering
    (not hot by default) already move cold objects themselves.

Example finding
    rule_id: STO003
    resource_id: "s3://acme-ckpt/llm-pretrain/llm-pretrain-train-40112/"
    resource_type: checkpoint run
    status: waste
    team: nlp
    project: llm-pretrain
    reason: "Run llm-pretrain-train-40112 (llm-pretrain) (COMPLETED) keeps 1 checkpoint(s), 98.0 GiB, in hot storage although the newest was written on 2026-09-14 (over 30 days ago); moving them to GLACIER_IR would save USD 0.43 a week (USD 1.86 a month)."
    estimated_waste: 0.43
    currency: USD
    waste_basis: "checkpoint bytes x (hot class price - target class price) per GB-month (GB = 2^30 bytes) x 7 / 30.44 days; the monthly run-rate is in the evidence"

Remediation
    Add an S3 lifecycle rule transitioning checkpoint prefixes to GLACIER_IR (or STANDARD_IA for
    checkpoints read monthly) after N days, or enable Intelligent-Tiering on the checkpoint bucket.

References
    Amazon S3 storage classes and lifecycle transitions; S3 pricing (retrieval fees, minimum storage
    duration).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from rules._contract import Rule, RuleParams


class Params(RuleParams):
    min_age_days: int = Field(30, ge=1, le=3650, description="Days since a checkpoint's last write.")
    hot_classes: tuple[str, ...] = Field(
        ("STANDARD", "REDUCED_REDUNDANCY", "EXPRESS_ONEZONE"),
        min_length=1,
        description="Storage classes that count as hot.",
    )
    target_class: str = Field("GLACIER_IR", min_length=1, description="The colder class to price against.")

    @field_validator("hot_classes")
    @classmethod
    def _upper_classes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(v.strip().upper() for v in value)

    @field_validator("target_class")
    @classmethod
    def _upper_target(cls, value: str) -> str:
        return value.strip().upper()


RULE = Rule(
    id="STO003",
    name="cold-checkpoint-tiering",
    category="overprovisioned",
    severity="low",
    status="preview",
    summary="Old checkpoints that are kept, but still stored in a hot storage class.",
    doc=__doc__ or "",
    params=Params,
    requires=("storage_checkpoints", "storage_prices"),
    query=Path(__file__).with_name("query.sql"),
)
