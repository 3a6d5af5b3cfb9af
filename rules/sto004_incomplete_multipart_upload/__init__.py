"""STO004 incomplete-multipart-upload: Multipart uploads never completed, whose parts keep billing.

What it detects
    Multipart uploads started more than `min_age_days` before the end of the week and neither completed
    nor aborted (a checkpoint upload that crashed mid-way, a killed `aws s3 cp`). One finding per bucket.

Why it is waste
    S3 stores and bills the uploaded parts of an unfinished upload until it is aborted, and they appear in
    no object listing or inventory, so nobody notices them.

How it is computed
    From the marts only: `storage_incomplete_uploads` (the newest `s3_listing` of each bucket:
    ListMultipartUploads, with ListParts for each upload's bytes; S3 Inventory reports do not list uploads,
    so only buckets read through a listing are covered). estimated_waste = the parts' bytes / 2^30 x the
    bucket's price per GB-month for the upload's storage class (bill, else `prices: storage_gb_month:`)
    x 7 / 30.44; the monthly run-rate is in the evidence. Uploads whose parts were not listed, or without a
    price, are `insufficient_data`. Precedence: upload parts are not objects, so no byte priced here is
    priced by STO001-STO003.

Thresholds
    min_age_days (default 7, days): how long ago an upload must have been started.

Known false positives
    Very large uploads still in progress for more than a week (rare; raise min_age_days for such buckets).

Example finding
    rule_id: STO004
    resource_id: "s3://acme-ckpt/"
    resource_type: bucket
    status: waste
    reason: "3 multipart upload(s) in acme-ckpt started more than 7 days ago (the oldest on 2026-10-02) were never completed; their 412 part(s), 206.0 GiB, cost USD 1.09 a week (USD 4.74 a month)."
    estimated_waste: 1.09
    currency: USD
    waste_basis: "bytes of the incomplete uploads' parts x the bucket's price per GB-month (GB = 2^30 bytes) x 7 / 30.44 days; the monthly run-rate is in the evidence"

Remediation
    Add a lifecycle rule with AbortIncompleteMultipartUpload (DaysAfterInitiation: 7) to every bucket;
    abort the listed uploads now (`aws s3api abort-multipart-upload`).

References
    Amazon S3 ListMultipartUploads, ListParts and AbortIncompleteMultipartUpload lifecycle action.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._contract import Rule, RuleParams


class Params(RuleParams):
    min_age_days: int = Field(7, ge=1, le=3650, description="Days since an upload was started.")


RULE = Rule(
    id="STO004",
    name="incomplete-multipart-upload",
    category="orphaned",
    severity="low",
    status="preview",
    summary="Multipart uploads never completed, whose parts keep billing.",
    doc=__doc__ or "",
    params=Params,
    requires=("storage_incomplete_uploads",),
    query=Path(__file__).with_name("query.sql"),
)
