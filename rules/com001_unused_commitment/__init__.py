"""COM001 unused-commitment: Commitment discounts paid for capacity nothing used.

What it detects
    Reserved Instances, Savings Plans, Azure reservations and savings plans, and FOCUS commitment discounts
    whose amortised cost in the week was partly unused: no usage took that share of the commitment. One
    finding per commitment and currency, with its utilisation over the week.

Why it is waste
    A commitment is paid whether or not anything runs on it; its unused share buys nothing. For GPU capacity
    committed for a training programme that ended or moved, it is often thousands a week.

How it is computed
    From the marts only: `commitment_lines` (billing lines of a commitment, used or unused, at effective
    cost). FOCUS and Azure lines say `Unused` themselves (CommitmentDiscountStatus; Azure's
    UnusedReservation and UnusedSavingsPlan charges). AWS CUR has no unused line: the Savings Plan's
    recurring fee line carries the commitment minus what covered usage took, and the RIFee line the
    unused upfront and recurring fee, so those lines are the unused share. Each line counts for the share of
    its charge period inside the week. estimated_waste = the unused cost; utilisation = used / (used +
    unused). Google Cloud's committed use discounts are not covered: their fee and credit lines do not
    separate the unused share. Precedence: only the lines of a commitment's unused share are priced here;
    the GPU rules price usage lines (a covered instance's hours), so no line is priced twice.

Thresholds
    min_unused (default 1.0, billing currency per week): smaller unused amounts are not reported.

Known false positives
    A commitment bought ahead of planned usage (a cluster arriving next week) is unused by design until then;
    acknowledge it until that date.

Example finding
    rule_id: COM001
    resource_id: "arn:aws:savingsplans::123456789012:savingsplan/sp-0gpu1yr"
    resource_type: ec2 instance savings plan
    status: waste
    reason: "EC2 Instance Savings Plan p4d-1yr-vision was 41.7% used this week: USD 1,960.00 of its amortised cost paid for capacity nothing used (USD 1,400.00 used); the unused share is lost unless usage moves onto it."
    estimated_waste: 1960.00
    currency: USD
    waste_basis: "the amortised cost of the commitment's unused share in the week (lines marked Unused; AWS: the recurring fee's unused part), each line counted for the share of its charge period inside the week"

Remediation
    Move steady work onto the committed instance family and region (or, for a Compute Savings Plan, any
    covered usage); sell an unused Standard RI on the Reserved Instance Marketplace or exchange a
    Convertible one; let it lapse at term end and size the next commitment from the steady floor.

References
    FOCUS 1.2 CommitmentDiscountStatus; AWS CUR savingsPlan/TotalCommitmentToDate, UsedCommitment and
    reservation/UnusedRecurringFee; Azure cost details ChargeType UnusedReservation and UnusedSavingsPlan.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._contract import Rule, RuleParams


class Params(RuleParams):
    min_unused: float = Field(
        1.0, ge=0, description="Smallest unused amount in a week to report (billing currency)."
    )


RULE = Rule(
    id="COM001",
    name="unused-commitment",
    category="idle",
    severity="high",
    status="preview",
    summary="Commitment discounts paid for capacity nothing used.",
    doc=__doc__ or "",
    params=Params,
    requires=("commitment_lines",),
    query=Path(__file__).with_name("query.sql"),
)
