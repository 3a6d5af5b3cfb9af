"""COST004 storage-growth: Buckets, prefixes, teams and projects whose stored bytes grow faster than their budget.

What it detects
    Every storage-growth budget under `budgets: storage_growth:` in wastewatch.yaml (per bucket or bucket
    prefix, file-system path, `team:NAME` or `project:NAME`; a share of the stored bytes like `10%` or an
    amount like `500 GiB` a month) whose stored bytes grew faster over the inventories of the last
    `lookback_days` days: checkpoint and dataset sprawl, weeks before the bill shows it.

Why it is waste
    It is not waste by itself, so it is an attention rule: reported apart and never added to the waste
    total. Storage is billed every month for every byte kept, so a bucket growing 40 % a month doubles its
    bill in about two months and keeps it; the growth is cheap to stop early (a retention rule, a
    checkpoint cadence, a dataset kept once) and expensive once nobody remembers what the bytes are. The
    amount at stake is what the month's growth adds to the storage bill each month.

How it is computed
    From `storage_prefix_days` (stored bytes of each bucket per inventory date, prefix and storage class,
    cut to the key's first three folders) and `storage_prices` (the price of a GB-month of each bucket and
    class, and the bucket's team and project from the bill). For each budgeted scope, each of its buckets'
    first and last inventory dates in the `lookback_days` days to the window's end are taken; a bucket whose
    two dates are fewer than `min_span_days` apart is not measured. monthly growth = sum over the measured
    buckets of (bytes at the last date - bytes at the first date) x 30.44 / days between the two dates (a
    straight line through the two inventories, scaled to the average month); growth % = monthly growth /
    bytes at the first date. Over budget when the growth % exceeds a `%` limit, or the monthly growth in GiB
    (2^30 bytes) exceeds a `GiB` limit. estimated_waste = the amount at stake = sum over prefixes x classes
    of their monthly growth in GiB x the class's price per GB-month (in the currency of most of that cost;
    other currencies are shown in the evidence, never added). The finding names the `prefix_levels`-deep
    prefixes below the scope that grew most (5 at most). `waste` when over budget and the growth costs
    more than 0; `suspect` when over budget but no price is known or the growth moved to cheaper classes;
    `insufficient_data` (priced 0) when no bucket of the scope has two inventory dates `min_span_days`
    apart in the lookback, naming the dates it has, or when no inventory holds the scope at all.

Thresholds
    budgets (none unless configured): {scope: {percent: P} or {gib: G}}, taken from the config's
    `budgets: storage_growth:` ('10%' or '500 GiB' a month).
    currency (the config's `currency`, else USD): the currency of a finding with no price to go by.
    lookback_days (default 30, days): inventories before the window's end that growth is measured over.
    min_span_days (default 7, days): the least time between the two inventory dates a growth is measured from.
    prefix_levels (default 2, folders): how far below the scope the prefixes that grew most are named.

Known false positives
    A bucket filled once on purpose (a dataset landed, a migration) looks like fast growth for the month
    after; growth measured over a short span extrapolates a burst to a whole month; a lifecycle rule that
    is about to expire the new bytes. Acknowledge the finding with a reason, or raise the budget.

Example finding
    rule_id: COST004
    resource_id: "storage-growth:s3://acme-ckpt-vision/"
    resource_type: storage growth budget
    status: waste
    reason: "s3://acme-ckpt-vision/ grew 40.0 % a month (5,000.0 GiB on 2026-11-01 to 6,839.7 GiB on 2026-11-29, +2,000.0 GiB a month) against a budget of 10 % a month; the growth adds USD 46.00 to the monthly storage bill each month; grew most: s3://acme-ckpt-vision/vit-g/run-07/ (+1,130.6 GiB a month), s3://acme-ckpt-vision/vit-h/run-01/ (+869.4 GiB a month)."
    estimated_waste: 46.0
    currency: USD
    waste_basis: "amount at stake, not waste: the monthly growth of stored bytes (bytes at the last inventory date minus bytes at the first, scaled to 30.44 days) x the storage price per GB-month of its bucket and class: what the growth adds to the storage bill each month"

Remediation
    Open the prefixes that grew most: expire old checkpoints (keep the last and the best, STO001), move
    cold ones to an archive class (STO003), keep one copy of a dataset (STO002); set a lifecycle rule on
    the prefix so the growth stops by itself; or agree a larger budget with its owner.

References
    FinOps Foundation, "Budgeting" capability (budgets on usage, not only spend); AWS S3 Storage Lens
    (storage growth by prefix); S3 Inventory reports (the daily or weekly list of objects the growth is
    measured from).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rules._contract import Rule, RuleParams
from rules.cost004_storage_growth.evaluate import evaluate


class Limit(BaseModel):
    """The most a scope's stored bytes may grow in a month: a share of them, or an amount."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    percent: float | None = Field(None, ge=0, description="Percent of the scope's bytes a month.")
    gib: float | None = Field(None, ge=0, description="GiB (2^30 bytes) a month.")

    @model_validator(mode="before")
    @classmethod
    def _not_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError(
                f"{value!r}: write it under `budgets: storage_growth:` in wastewatch.yaml, or here as "
                "{percent: 10} or {gib: 500}"
            )
        return value

    @model_validator(mode="after")
    def _one(self) -> Limit:
        if (self.percent is None) == (self.gib is None):
            raise ValueError("give one of percent or gib")
        return self


class Params(RuleParams):
    budgets: dict[str, Limit] = Field(
        default_factory=dict,
        description="Monthly growth limits {scope: {percent: P} or {gib: G}}; default: the config's "
        "`budgets: storage_growth:`.",
    )
    currency: str = Field(
        "USD", min_length=3, max_length=3, description="Currency of a finding with no price (the config's)."
    )
    lookback_days: int = Field(
        30, ge=7, le=92, description="Days of inventories before the window's end growth is measured over."
    )
    min_span_days: int = Field(
        7, ge=1, le=92, description="Least days between the two inventory dates growth is measured from."
    )
    prefix_levels: int = Field(
        2, ge=1, le=3, description="Folders below the scope at which the prefixes that grew most are named."
    )

    @model_validator(mode="after")
    def _span_fits(self) -> Params:
        if self.min_span_days >= self.lookback_days:
            raise ValueError("min_span_days must be shorter than lookback_days")
        return self


def _from_config(config: Any) -> dict[str, Any]:
    return {"budgets": dict(config.budgets.get("storage_growth") or {}), "currency": config.currency}


RULE = Rule(
    id="COST004",
    name="storage-growth",
    category="budget",
    severity="medium",
    status="preview",
    summary="Buckets, prefixes, teams and projects whose stored bytes grow faster than their budget.",
    doc=__doc__ or "",
    params=Params,
    requires=("storage_prefix_days", "storage_prices"),
    evaluate_fn=evaluate,
    config_params=_from_config,
)
