"""STO005 log-retention: Logs, metric stores and training event files kept past a retention limit, or with none.

What it detects
    Log groups that never expire, or keep their events longer than `retention_days`: CloudWatch Logs groups
    listed by a `cloudwatch_logs` source (their retention setting and stored bytes) and priced from their
    storage lines in the bill (`USE1-TimedStorage-ByteHrs` on AmazonCloudWatch, the group's ARN as the line's
    resource); Azure Log Analytics and Google Cloud Logging retention charges (Data Retention meters, log
    retention SKUs), which bill only bytes kept past the days the provider includes; and training-log, event
    and profiler-trace files in object stores (TensorBoard `events.out.tfevents.*`, `*.log`,
    `*.pt.trace.json`, `plugins/profile/`) last written more than `retention_days` ago. Metric stores too:
    Prometheus TSDB blocks that Thanos, Grafana Mimir, Cortex or Prometheus itself keep in object storage
    (`<ULID>/chunks/000001`, `<ULID>/index`, `<ULID>/meta.json`; Mimir and Cortex under `<tenant>/<ULID>/`),
    last written more than `retention_days` ago, from the same bucket inventories; and managed metric stores
    billed by their own storage meter (Amazon Managed Service for Prometheus, `USE1-AMP:MetricStorageByteHrs`).
    One finding per log group, per billed retention or metric-storage resource, per bucket of old log files,
    and per bucket and prefix (a Mimir tenant) of old metric blocks.

Why it is waste
    A log group created without a retention keeps every event forever, and CloudWatch bills each stored GB
    every month; training jobs log verbosely, so their groups grow by the day. Old TensorBoard event files and
    profiler traces are read while a run is being debugged, then never again, yet sit in hot storage for years.
    Thanos' compactor and Mimir keep blocks forever unless a retention is set (`--retention.resolution-raw`,
    `-compactor.blocks-retention-period`, both 0 by default), so a cluster's GPU metrics pile up in a bucket.

How it is computed
    From the marts only: `log_groups_current` (the newest listing of each log group, with the growth of its
    stored bytes since an earlier listing), `log_storage_lines` (the bill's log storage, retention and
    ingestion lines, classified by `pipelines/catalog/log_usage_types.csv`), `storage_objects_current` and
    `storage_prices`. Each bill line counts for the share of its charge period inside the week.

    Log groups: the listing gives the stored bytes, not their age, so the bytes a `retention_days` retention
    would keep are `retention_days x daily ingestion`, the daily ingestion being, in this order: the bill's
    ingested bytes for the group in the week (`USE1-DataProcessing-Bytes`, GB = 2^30 bytes, over the days the
    lines cover; ingestion is billed uncompressed and storage compressed, so this overstates what a retention
    keeps and never overstates the waste); the growth of its stored bytes between the newest listing and the
    one nearest a week before (only for a group that never expires: one with a retention deletes as it grows);
    for a group with a retention of R days older than R days, stored bytes / R (it holds R days of events); for
    a group that never expires, stored bytes / its age in days. estimated_waste = the week's storage cost of the
    group x max(0, stored_bytes - retention_days x daily ingestion) / stored_bytes; the formula, the ingestion
    basis and every figure are in the evidence. A group no storage line names is `insufficient_data`.

    Provider retention lines (Azure, Google Cloud) bill only bytes older than the days the provider includes
    (31, 30): when those days are at least `retention_days`, every byte they bill is past the retention and the
    whole charge is waste; otherwise it is `suspect` at 0. AWS storage lines of log groups no listing holds are
    `suspect` at 0 (the reason states their cost).

    Log files: objects whose key matches one of `log_patterns` (case-insensitive globs), last written more than
    `retention_days` before the end of the week, in the newest snapshot of their bucket. estimated_waste =
    bytes / 2^30 x the bucket's price per GB-month for their class x 7 / 30.44; unpriced bytes make the bucket
    `insufficient_data`.

    Metric blocks: a TSDB block is a folder named by a ULID (26 upper-case Crockford base-32 characters) whose
    files match `metric_block_patterns`; the key's part before the ULID is its prefix (empty, a Thanos
    `prefix:`, or a Mimir tenant). A block is written once, when Prometheus cuts it from its head or a
    compactor merges older blocks, and never changed (a compactor writes a new block and deletes the old); all
    its samples were taken before it was written (unless a wrong clock stamped them ahead of time). So a block
    whose files were all last written more than `retention_days` before the end of the week holds only samples
    older than that, and its bytes are waste: estimated_waste = bytes / 2^30 x the bucket's price per GB-month x
    7 / 30.44, as for log files. The first 10 characters of the ULID are the milliseconds
    since the Unix epoch when the block was made (after its newest sample: Mimir's `listblocks` shows block
    01E0HMK47RGAAKZJBMG8B8QXGP, made 2020-02-08T05:33Z, holding samples up to 2020-02-08T00:00Z); the evidence
    gives the oldest block's, but the age test uses the inventory's last-modified times, which a copy or a
    restore makes newer, never older. A deletion or no-compact marker written into a block's folder later makes
    the block recent (a compactor is working on it). Thanos' `debug/metas/` and Mimir's `bucket-index.json.gz`
    and `markers/` are no block's files.

    Managed metric stores: Amazon Managed Service for Prometheus bills every stored byte of a workspace
    (`<Region>-AMP:MetricStorageByteHrs`, GB-Mo; 150 days kept by default, up to 1095 with the workspace's
    retentionPeriodInDays), new or old, so no storage line is provably past a retention: each is `suspect` at
    0, its cost in the reason. Azure Monitor workspaces (managed Prometheus, 18 months kept) and Google Cloud
    Managed Service for Prometheus and Cloud Monitoring (24 months) bill ingested samples and queries, not
    storage, so there is no storage line to price; metrics sent to a Log Analytics workspace are billed by its
    Data Retention meter, priced above like any log retention.

    Precedence, so no byte is priced twice: STO005 prices log-group storage lines, which no other rule reads
    (storage_prices takes S3 storage lines by bucket, never a log group's), and among objects only files under
    no `checkpoints:` pattern and no `datasets:` root. Everything under a checkpoint pattern is STO001's or
    STO003's (a run's event files beside its checkpoints go with the run), and everything under a dataset root
    is STO002's; incomplete multipart uploads (STO004) are not objects. A file of a metric block is the block's
    even when a log pattern matches it too (a `meta.json` under a `*.json` pattern), so it is priced once.
    Managed metric-storage lines are AmazonPrometheus lines, which no other rule reads.

Thresholds
    retention_days (default 30, days): the retention a log group or log file should not exceed.
    min_waste (default 0.10, billing currency per week): smaller findings are not reported.
    log_patterns (by default TensorBoard event files, *.log, *.log.gz, PyTorch profiler traces,
    plugins/profile/ folders and *.xplane.pb): globs on an object's key, case-insensitive; `*` also matches `/`.
    metric_block_patterns (by default */chunks/*, */index, */meta.json, */tombstones, */deletion-mark.json,
    */no-compact-mark.json): globs on an object's key, like log_patterns, for the files in a ULID folder that
    make up a TSDB block.

Known false positives
    Audit and compliance logs that must be kept for years (CloudTrail, VPC Flow Logs for security): set their
    retention explicitly and acknowledge the finding, or raise retention_days. A log group whose ingestion
    changed sharply within the week is judged by the week's rate. Event files of a paper's final runs may be
    worth keeping: move them under a `datasets:` root or a checkpoint folder, or to a cold class. Metric blocks
    kept on purpose for longer than `retention_days` (a year of capacity-planning history, often as Thanos' 5m
    and 1h downsampled blocks) are flagged: raise retention_days or acknowledge the finding. A block a
    compactor has not yet merged, or a partial upload, counts with the files it has. Other tools that name
    folders by a ULID (Pyroscope's, Loki's TSDB index) can match the `meta.json` or `index` patterns; narrow
    metric_block_patterns to `*/chunks/*` if such a bucket is flagged.

Example finding
    rule_id: STO005
    resource_id: "arn:aws:logs:us-east-1:417263541977:log-group:/aws/sagemaker/TrainingJobs"
    resource_type: log group
    status: waste
    team: nlp
    reason: "Log group /aws/sagemaker/TrainingJobs keeps its events forever (no retention set) and stores 1190.0 GiB; at 10.00 GiB a day (growth of its stored bytes), a 30-day retention would keep 300.0 GiB, so 75% of its storage (USD 6.10 of USD 8.16 this week) is past the retention."
    estimated_waste: 6.10
    currency: USD
    waste_basis: "the week's storage cost of the log group x max(0, stored bytes - retention_days x bytes ingested a day) / stored bytes"

Remediation
    Set a retention on every log group (`aws logs put-retention-policy --retention-in-days 30`, or
    `retention_in_days` in Terraform; export what must be kept to S3 first with `create-export-task`); lower
    the Log Analytics workspace or table retention, or move old tables to the archive tier; a Cloud Logging
    bucket's retention. For log files, an S3 lifecycle rule expiring (or tiering) `*.tfevents.*`, `*.log` and
    trace prefixes after N days. For metric blocks, set the compactor's retention (Thanos
    `--retention.resolution-raw=30d` and the downsampled resolutions, Mimir `-compactor.blocks-retention-period`
    or a tenant's `compactor_blocks_retention_period`) rather than a lifecycle rule, which would delete blocks
    under the bucket index and the store gateways; for Amazon Managed Service for Prometheus, the workspace's
    retention period (`aws amp update-workspace-configuration --retention-period-in-days 30`).

References
    Amazon CloudWatch Logs DescribeLogGroups and PutRetentionPolicy; Amazon CloudWatch pricing (logs storage
    per GB-month, ingestion per GB); Azure Monitor Logs cost (31 days included retention); Google Cloud
    Observability pricing (log retention beyond 30 days, Managed Service for Prometheus billed by samples,
    24 months kept); Prometheus TSDB format and Thanos / Grafana Mimir storage docs (block layout, meta.json,
    `listblocks`); the ULID specification (48-bit millisecond timestamp); Amazon Managed Service for Prometheus
    pricing (metrics stored per GB-month) and UpdateWorkspaceConfiguration (retentionPeriodInDays); Azure
    Monitor managed service for Prometheus (data retained 18 months).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from rules._contract import Rule, RuleParams

LOG_PATTERNS = (
    "*events.out.tfevents.*",
    "*.log",
    "*.log.gz",
    "*.pt.trace.json",
    "*.pt.trace.json.gz",
    "*/plugins/profile/*",
    "*.xplane.pb",
)

# The files of a Prometheus TSDB block as Prometheus, Thanos, Cortex and Mimir upload them (`<ULID>/chunks/000001`,
# `<ULID>/index`, `<ULID>/meta.json`, `<ULID>/tombstones`) and the markers Thanos and Mimir write into a block's
# folder before they delete or stop compacting it.
METRIC_BLOCK_PATTERNS = (
    "*/chunks/*",
    "*/index",
    "*/meta.json",
    "*/tombstones",
    "*/deletion-mark.json",
    "*/no-compact-mark.json",
)


class Params(RuleParams):
    retention_days: int = Field(30, ge=1, le=3650, description="Days a log group or log file should be kept.")
    min_waste: float = Field(0.10, ge=0, description="Smallest weekly waste to report (billing currency).")
    log_patterns: tuple[str, ...] = Field(
        LOG_PATTERNS, min_length=1, description="Globs on object keys that mark log, event and trace files."
    )
    metric_block_patterns: tuple[str, ...] = Field(
        METRIC_BLOCK_PATTERNS,
        min_length=1,
        description="Globs on object keys that mark the files of a Prometheus TSDB block (in a folder named by a ULID).",
    )


RULE = Rule(
    id="STO005",
    name="log-retention",
    category="retention",
    severity="low",
    status="preview",
    summary="Logs, metric stores and training event files kept past a retention limit, or with none.",
    doc=__doc__ or "",
    params=Params,
    requires=("log_groups_current", "log_storage_lines", "storage_objects_current", "storage_prices"),
    query=Path(__file__).with_name("query.sql"),
)
