"""NET001 cross-region-transfer: Data moved across regions that a copy in the readers' region would avoid.

What it detects
    The bill's inter-region and inter-zone data-transfer lines (AWS usage types `USE1-EUC1-AWS-Out-Bytes`,
    `USE1-DataTransfer-Regional-Bytes`; Azure Bandwidth Inter-Region and Inter Availability Zone meters;
    Google Cloud Network Inter Region / Inter Zone SKUs), per resource and region pair. Transfer out of a
    bucket that holds datasets into a region where jobs read them is waste when a copy in that region costs
    less than the transfer; a copy already there costs nothing more. Internet egress is not priced: no copy
    avoids it.

Why it is waste
    Training jobs read their datasets every epoch; when the data sits in another region than the GPUs, every
    epoch pays inter-region transfer (USD 0.02 a GB between AWS regions, more between continents), often more
    a week than storing a second copy next to the GPUs for a month.

How it is computed
    From the marts only: `transfer_lines` (the bill's transfer lines, classified by
    `pipelines/catalog/transfer_usage_types.csv`; AWS region codes from `aws_region_codes.csv`),
    `storage_datasets` and `storage_dataset_matches` (the datasets in the bucket, their copies and their
    storage cost), `jobs_enriched` (the teams whose jobs ran in the destination region). Each line counts for
    the share of its charge period inside the week. For each resource and (source, destination) region pair:
    transfer = the lines' effective cost; copy = the week's storage cost of the bucket's datasets that have
    no copy in the destination region yet (a copy holds at least `min_shared_pct` of a dataset's bytes by
    proven matches), at their current price (monthly x 7 / 30.44). estimated_waste = transfer - copy when
    positive, status `waste`; when the copy would cost more, reading across regions is the cheaper side and
    there is no finding. The finding's team is the readers' team when one team's jobs ran in the destination
    region, else the bucket's; the readers, the datasets, the copies and the usage types are in the evidence.
    Transfer with no dataset inventory behind it, without a destination region on the line (Azure, Google
    Cloud) or between zones of one region is `suspect` at 0 (the reason states its cost); datasets without a
    price make it `insufficient_data`.

    Precedence with STO002 (duplicate dataset), so no dollar is counted by both: for each dataset copy the
    storage it costs is weighed against the transfer it saves, and only the more expensive side is flagged.
    NET001 prices transfer lines only, and only the part a copy would avoid net of that copy's storage;
    STO002 prices stored bytes only. A copy in a region where GPU jobs run, of a dataset whose canonical copy
    is in another region, saves those jobs' transfer: STO002 flags it `suspect` at 0 and names this
    comparison instead of pricing its deletion. A copy outside every job region saves no transfer and stays
    STO002's; transfer that reaches the jobs' region although a copy is already there is NET001's (point the
    jobs at that copy).

Thresholds
    min_transfer (default 1.0, billing currency per week): smaller flows are not reported.
    min_shared_pct (default 95, percent): the share of a dataset's bytes a folder elsewhere must hold to count
    as its copy in that region.

Known false positives
    Replication by design (S3 Cross-Region Replication for disaster recovery, serving in a second region) is
    transfer the organisation chose: acknowledge it. A bucket that holds several datasets is judged as a
    whole: the transfer may come from only one of them, so the saving assumes all its datasets would be copied.

Example finding
    rule_id: NET001
    resource_id: "acme-datasets-eu -> us-east-1"
    resource_type: inter-region transfer
    status: waste
    reason: "acme-datasets-eu (eu-central-1) sent 4200.0 GB to us-east-1 this week for USD 84.00 of cross-region transfer (12 job(s) of nlp ran in us-east-1), yet a copy of its data is already in us-east-1 (s3://acme-datasets/datasets/laion-400m-subset/): reading that copy would have avoided all of it."
    estimated_waste: 84.00
    currency: USD
    waste_basis: "the week's inter-region transfer out of the bucket into the readers' region, minus the week's storage cost of a copy there (0 when one exists), each line counted for the share of its charge period inside the week"

Remediation
    Point the jobs at the copy in their region; where none exists and the transfer costs more than storage,
    replicate the dataset next to the GPUs (S3 Replication, or a one-off copy) and read it there; schedule
    jobs in the region of their data; keep compute and data in one Availability Zone for heavy reads.

References
    AWS Region billing codes and data transfer usage types (`<from>-<to>-AWS-Out-Bytes`,
    `DataTransfer-Regional-Bytes`); Azure Bandwidth pricing (inter-region, inter-continent); Google Cloud
    network data transfer SKUs.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._contract import Rule, RuleParams


class Params(RuleParams):
    min_transfer: float = Field(
        1.0, ge=0, description="Smallest weekly transfer cost of a flow to report (billing currency)."
    )
    min_shared_pct: float = Field(
        95.0, ge=50, le=100, description="Share of a dataset's bytes (%) a copy elsewhere must hold."
    )


RULE = Rule(
    id="NET001",
    name="cross-region-transfer",
    category="placement",
    severity="medium",
    status="preview",
    summary="Data moved across regions that a copy in the readers' region would avoid.",
    doc=__doc__ or "",
    params=Params,
    requires=("transfer_lines", "storage_datasets", "storage_dataset_matches", "jobs_enriched"),
    query=Path(__file__).with_name("query.sql"),
)
