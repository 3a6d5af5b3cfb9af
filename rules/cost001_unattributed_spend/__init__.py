"""COST001 unattributed-spend: Spend that carries no team tag, GPU spend first, with a suggested owner.

What it detects
    Every resource whose effective spend in the week has no team (the canonical `team` tag, resolved
    through the `tags:` config), and every charge without a resource id (support fees, marketplace
    charges) per service: untagged GPU instances launched by hand, buckets created outside the
    provisioning templates, fees nobody owns. GPU resources come first.

Why it is waste
    It is not waste by itself, so it is an attention rule: reported apart and never added to the waste
    total. Spend without an owner is spend nobody reviews: it is where idle machines live longest, and no
    team's budget or report shows it. The untagged spend is the amount at stake.

How it is computed
    From `cost_hourly` (lines with `team` NULL in the window, grouped per resource id, or per service for
    lines without one; at least `min_spend` in the currency) and `resources` (GPU count, model and host).
    A suggested owner, best evidence first, over the trailing `lookback_days`: the team named by the
    records of the scheduler jobs that ran on the resource (`jobs_enriched`, weighted by GPU-hours); else
    the team with most tagged spend of the same project tag, of the same owner tag, or of the tagged host
    the resource is named after (`gpu-node-07-scratch` -> `gpu-node-07`); the evidence says which.
    estimated_waste = the amount at stake = the untagged effective spend of the week.

Thresholds
    min_spend (default 1.0, billing currency): smallest untagged weekly spend of a resource that is listed.
    lookback_days (default 28, days): the jobs and tagged spend the owner suggestions learn from.

Known false positives
    Shared platform costs (support plans, commitment fees, NAT gateways) that are untagged on purpose
    and split by a showback rule elsewhere; resources whose tags the export drops (AWS cost allocation
    tags must be activated before they reach the bill). Acknowledge them with a reason.

Example finding
    rule_id: COST001
    resource_id: i-07731af10506bf2ef
    resource_type: Instance
    status: waste
    reason: "USD 3689.28 of GPU spend on p4d.24xlarge i-07731af10506bf2ef (gpu-a100-08, 8×A100) has no team tag; suggested owner: team speech (12 slurm job(s) ran on it, 100% of their GPU-hours team speech's)."
    estimated_waste: 3689.28
    currency: USD
    waste_basis: "amount at stake, not waste: effective cost in the week of the lines without a team tag"

Remediation
    Tag the resource (and make the provisioning template tag it); activate the team tag as a cost
    allocation tag where the provider needs it; for shared costs, agree on a split and acknowledge the
    finding with that reason.

References
    FinOps Foundation, "Allocation" capability (tagging strategy, shared costs);
    FOCUS 1.2 Tags column; AWS "Activating user-defined cost allocation tags".
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._contract import Rule, RuleParams


class Params(RuleParams):
    min_spend: float = Field(
        1.0, ge=0, description="Smallest untagged weekly spend of a resource (billing currency) listed."
    )
    lookback_days: int = Field(
        28, ge=1, le=120, description="Days of tagged spend the owner suggestions learn from."
    )


RULE = Rule(
    id="COST001",
    name="unattributed-spend",
    category="unattributed",
    severity="medium",
    status="preview",
    summary="Spend that carries no team tag, GPU spend first, with a suggested owner.",
    doc=__doc__ or "",
    params=Params,
    requires=("cost_hourly", "resources", "jobs_enriched"),
    query=Path(__file__).with_name("query.sql"),
)
