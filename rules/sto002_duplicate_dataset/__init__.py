"""STO002 duplicate-dataset: The same dataset stored more than once, in any bucket, region or file system.

What it detects
    Dataset folders (the sub-folders of the `datasets:` roots, e.g. `s3://acme-data/datasets/imagenet/`)
    whose contents are identical or nearly so: each holds at least `min_shared_pct` of its bytes in the
    other. One finding per redundant copy; the copy to keep (canonical) gets none.

Why it is waste
    A second (or fourth) copy of a multi-terabyte dataset bills every month for bytes nobody needs twice,
    and a copy in another region than the GPUs adds cross-region transfer to every epoch that reads it.

How it is computed
    From the marts only: `storage_datasets` (size, age, region of each dataset folder in the newest
    snapshot of its bucket; the regions where GPU instances run, from the bill) and
    `storage_dataset_matches` (the bytes of dataset A also found in dataset B, per storage class and price).
    Files match by size, then ETag (an MD5 of the bytes, or of the same parts: multipart ETags are compared
    only when their part counts agree, and never for KMS-encrypted objects), then an additional full-object
    checksum (from a listing with `checksums: true`, or a file-system scan's SHA-256) or a sampled
    fingerprint (stated as such in the evidence). Same relative path and size with ETags of different part
    counts and no checksum is an ambiguous match: a pair that needs ambiguous matches to reach the
    threshold is `suspect` (estimated_waste 0, the would-be saving in the reason), never `waste`. The
    canonical copy is the best-ranked dataset a copy duplicates: in a region where the GPU jobs run first,
    then the oldest, then by name. estimated_waste = the copy's matched bytes / 2^30 x its bucket's price
    per GB-month (bill, else `prices: storage_gb_month:`) x 7 / 30.44; the monthly run-rate and a note on
    cross-region transfer (when the jobs' region differs from the copy's or the canonical copy's) are in the
    evidence. Precedence: a file under a `checkpoints:` pattern is a checkpoint (STO001/STO003), never a
    dataset file, and STO005 (old log and event files) never looks under a dataset root, so no byte is
    priced by two storage rules. With NET001 (cross-region transfer), for each
    copy its storage is weighed against the transfer it saves and only the more expensive side is flagged: a
    copy in a region where GPU jobs run, whose canonical copy is in another region, saves those jobs'
    cross-region reads, so it is `suspect` at 0 here (the reason names NET001's comparison and the storage
    it costs); NET001 prices transfer lines only, net of the storage a copy would cost, never stored bytes.

Thresholds
    min_shared_pct (default 95, percent): the share of each dataset's bytes that must be found in the other.
    min_dataset_gib (default 1, GiB): smaller dataset folders are not compared.

Known false positives
    A deliberate replica (disaster recovery, a second region for serving) is a duplicate by construction:
    acknowledge it or move it out of the `datasets:` roots. Datasets sharing most files but differing in a
    few large ones fall under the threshold, as they should; intentional versioned snapshots may not.

Example finding
    rule_id: STO002
    resource_id: "s3://acme-scratch/datasets/laion-copy/"
    resource_type: dataset copy
    status: waste
    reason: "s3://acme-scratch/datasets/laion-copy/ (2437.3 GiB, us-east-1) is a copy of s3://acme-datasets/datasets/laion-400m-subset/ (the oldest copy in us-east-1, where the GPU jobs run): 100.0% of its bytes match by ETag; keeping it costs USD 12.89 a week (USD 56.06 a month)."
    estimated_waste: 12.89
    currency: USD
    waste_basis: "bytes of the copy that match the canonical copy x the copy's price per GB-month (GB = 2^30 bytes) x 7 / 30.44 days; the monthly run-rate is in the evidence"

Remediation
    Point the jobs at the canonical copy and delete the others (or replace them with a symlink / manifest
    file pointing at it); keep per-region replicas only where jobs run in that region, and prefer S3
    Replication with a lifecycle rule over ad-hoc copies. Upload with additional checksums
    (`--checksum-algorithm CRC64NVME`) so copies can be proven identical whatever their part sizes.

References
    Amazon S3 ETag and additional checksums (ChecksumType FULL_OBJECT / COMPOSITE); S3 Inventory;
    AWS data transfer pricing (inter-region).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._contract import Rule, RuleParams


class Params(RuleParams):
    min_shared_pct: float = Field(
        95.0, ge=50, le=100, description="Share of each dataset's bytes (%) that must be found in the other."
    )
    min_dataset_gib: float = Field(
        1.0, ge=0, description="Dataset folders smaller than this are not compared."
    )


RULE = Rule(
    id="STO002",
    name="duplicate-dataset",
    category="duplicate",
    severity="medium",
    status="preview",
    summary="The same dataset stored more than once, in any bucket, region or file system.",
    doc=__doc__ or "",
    params=Params,
    requires=("storage_datasets", "storage_dataset_matches"),
    query=Path(__file__).with_name("query.sql"),
)
