"""The `options:` each source kind accepts, one pydantic model per kind (unknown keys are config errors).

`wastewatch.yaml` is validated against these models when it loads, so a misspelt or ill-typed option stops
the run with the file, line and key named before anything is read; readers then get the validated model.
Defaults here are the documented defaults (docs/ingestion.md and docs/billing.md list them).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)

from pipelines.sources.mapped_csv import (
    HOSTS_CSV,
    JOBS_CSV,
    METRICS_CSV,
    SAMPLE_COLUMNS,
    FileColumn,
    column_key,
    state_value,
)
from pipelines.units import parse_duration

# the keys `columns:` takes and the values `states:` takes, per column-mapped kind (pipelines/sources/mapped_csv.py)
JobsColumn = column_key(JOBS_CSV)
HostsColumn = column_key(HOSTS_CSV)
MetricsColumn = column_key(METRICS_CSV)
JobState = state_value(JOBS_CSV)


def _known_zone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown timezone {value!r}: give an IANA zone name such as UTC or Europe/Berlin"
        ) from None
    return value


# a `timezone:` option: an IANA zone name, checked when the config loads so a misspelt zone reads no file
Timezone = Annotated[str, AfterValidator(_known_zone)]
# a gpu_samples column a metrics_csv metric lands in
SampleColumn = Literal[SAMPLE_COLUMNS]  # type: ignore[valid-type]


class Options(BaseModel):
    """Base of every kind's options: frozen, unknown keys forbidden, numbers accepted where text is."""

    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)


# -- network limits (pipelines/net/limits.py, docs/reliability.md "Bounded network reads") ---------------


class AnswerOptions(Options):
    """Limits of each API answer a source reads (a ListObjectsV2, DescribeInstances or DescribeLogGroups
    page): one that takes longer or grows larger fails the source, naming the limit."""

    timeout: float = Field(
        60.0,
        gt=0,
        description="Seconds one API answer (a listing page) may take whole, from the request to its last "
        "byte; also the longest wait for a byte.",
    )
    max_response_mb: float = Field(
        64.0,
        gt=0,
        description="Largest API answer (a listing page) in MB (2^20 bytes). The largest pages are "
        "DescribeInstances': 1,000 instances of up to ~20 KB of XML each, ~20 MB; 64 leaves room for three.",
    )


class DownloadOptions(Options):
    """The throughput floor of a file download (an S3 object, possibly many GB): no deadline, but a download
    that receives fewer than `min_download_kbps` KB/s over `download_window` fails, naming both."""

    min_download_kbps: float = Field(
        64.0, gt=0, description="Slowest acceptable download, in KB/s (2^10 bytes) over `download_window`."
    )
    download_window: float = Field(
        30.0,
        gt=0,
        description="Seconds the download rate is measured over (each window in turn must reach the floor).",
    )


class S3ReadOptions(AnswerOptions, DownloadOptions):
    """Options of a kind whose files may sit under an s3:// prefix: limits on its listing and downloads."""


# -- billing ---------------------------------------------------------------------------------------


class BillingOptions(S3ReadOptions):
    """`options:` of a billing source (every billing kind)."""

    manifest: Literal["auto", "required", "ignore"] = Field(
        "auto",
        description="auto: follow a manifest where the export has one; required: skip periods without one; "
        "ignore: read every data file.",
    )
    on_removed: Literal["delete", "keep"] = Field(
        "delete", description="A loaded file that disappears from the source: delete its rows, or keep them."
    )
    delimiter: str | None = Field(
        None, min_length=1, max_length=1, description="CSV delimiter (default: sniffed)."
    )
    date_format: str | None = Field(
        None,
        min_length=2,
        pattern=r"%",
        description="strptime-style form of the file's dates and times (e.g. '%m/%d/%y %H:%M'), for a producer "
        "that writes neither the format's documented forms; every date and time column is then read in "
        "this form only (default: the format's own forms, docs/billing.md).",
    )
    max_period_skew: StrictInt = Field(
        1,
        ge=0,
        description="How many billing periods (months) a usage line's charge period may lie before or after "
        "its billing period; a line further away rejects the file. Corrections, credits, fees, purchases and "
        "taxes have their own bounds (docs/billing.md).",
    )


class AzureOptions(BillingOptions):
    dataset: Literal["amortized", "actual"] = Field(
        "amortized", description="Which Cost Management dataset to load; files of the other one are skipped."
    )


class GcpOptions(BillingOptions):
    invoice_timezone: Timezone = Field(
        "America/Los_Angeles", description="Zone of invoice.month (Google bills in US Pacific time)."
    )
    project_labels: bool = Field(True, description="Add project.labels to the tags (resource labels win).")


# -- telemetry -------------------------------------------------------------------------------------


class ClockOptions(Options):
    """How far ahead of the wall clock a GPU sample may be dated (the kinds writing gpu_samples or
    gpu_hourly_stats, whose newest sample the freshness check measures host silence from)."""

    max_clock_skew: str = Field(
        "1h",
        description="A file with a sample dated more than this after the clock at ingest is rejected, naming "
        "the line (90m, 2h, 1d; 0m allows none). Fix the host's clock rather than raising it far.",
    )

    @field_validator("max_clock_skew")
    @classmethod
    def _skew(cls, value: str) -> str:
        if value.strip().startswith("-"):
            raise ValueError(f"{value!r}: a clock skew cannot be negative (0m allows no sample ahead)")
        parse_duration(value)  # ValueError names the value
        return value

    def clock_skew(self) -> timedelta:
        return parse_duration(self.max_clock_skew)


class HostOptions(S3ReadOptions, ClockOptions):
    """Where a sample's host comes from when the file does not say it."""

    host: str | None = Field(None, description="Host name for every sample of the source.")
    host_pattern: str | None = Field(
        None, description="Regular expression with a `host` group, matched on the file's relative path."
    )


class NvidiaSmiDmonOptions(HostOptions):
    timezone: Timezone = Field("UTC", description="Zone of the file's timestamps.")


class NvidiaSmiOptions(NvidiaSmiDmonOptions):
    fields: list[str] | str | None = Field(
        None,
        description="Column names of a capture written without a header (default: the documented query).",
    )


class PrometheusJsonOptions(HostOptions):
    host_label: str | None = Field(None, description="Series label that holds the host name.")


class DcgmOptions(PrometheusJsonOptions):
    file_time: Literal["name_or_mtime", "name", "mtime"] = Field(
        "name_or_mtime", description="Where a scrape's time comes from: its file name, or the file's mtime."
    )


class PrometheusOptions(ClockOptions):
    """`options:` of a `prometheus` source: hourly statistics asked of a Prometheus-compatible HTTP API."""

    match: str | None = Field(
        None,
        description='Label matchers added to every selector, e.g. `job="dcgm-exporter", cluster="a"`.',
    )
    host: str | None = Field(None, description="Host name for every series of the source.")
    host_label: str | None = Field(None, description="Series label that holds the host name.")
    scrape_interval: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="The exporter's scrape interval in seconds: an hour's coverage is its samples x this, "
        "at most 1 h.",
    )
    start: datetime | None = Field(
        None, description="First hour to read (UTC); default: `history` before the newest complete hour."
    )
    end: datetime | None = Field(None, description="Read the hours before this time (UTC); default: now.")
    history: str = Field("7d", description="How far back the first run reads.")
    lookback: str = Field(
        "6h", description="Later runs read again from this long before the newest hour landed (late samples)."
    )
    hours_per_query: StrictInt = Field(
        168, ge=1, le=11000, description="Hours (points per series) per query."
    )
    series_label: str = Field(
        "instance", description="Label whose values split a query by series (one group of values per query)."
    )
    series_per_query: StrictInt = Field(
        20, ge=1, description="Values of `series_label` (hosts, for `instance`) per query."
    )
    range_end: Literal["auto", "inclusive", "exclusive"] = Field(
        "auto",
        description="Whether the server's range selectors include their start instant (Prometheus 2.x: "
        "inclusive; 3.x: exclusive); auto asks /api/v1/status/buildinfo.",
    )
    bearer_token_env: str | None = Field(
        None, description="Environment variable holding a bearer token (sent as `Authorization: Bearer`)."
    )
    username: str | None = Field(None, description="Basic auth user name.")
    password_env: str | None = Field(
        None, description="Environment variable holding the basic auth password."
    )
    ca_file: str | None = Field(None, description="PEM file of the CA that signed the server's certificate.")
    insecure_skip_verify: StrictBool = Field(False, description="Do not verify the server's TLS certificate.")
    timeout: float = Field(
        60.0,
        gt=0,
        description="Seconds one answer may take whole, from the request to its last byte (a server that "
        "drips bytes fails then, not retried); also the longest wait for a byte (a timeout, retried).",
    )
    # A day of 4,000 GPUs in one answer (step 1h): 80,000 series (20 statistics a GPU), each ~450 bytes of
    # DCGM exporter labels plus 24 points of ~38 bytes, ~1.36 KB; ~109 MB in all, rounded up to 128.
    max_response_mb: float = Field(
        128.0,
        gt=0,
        description="Largest answer in MB (2^20 bytes): a day of 4,000 GPUs at step 1h is ~109 MB. Parsing "
        "takes about four times the answer's size in memory; lower hours_per_query or series_per_query "
        "rather than raising this far.",
    )
    retries: StrictInt = Field(
        4, ge=0, description="Attempts after the first on a connection error, a timeout, 429 or 5xx."
    )
    backoff: float = Field(
        1.0, ge=0, description="Seconds before the first retry; doubled each time (<= 30 s)."
    )

    @field_validator("history", "lookback")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)  # ValueError names the value
        return value

    @model_validator(mode="after")
    def _one_auth(self) -> PrometheusOptions:
        if self.bearer_token_env and (self.username or self.password_env):
            raise ValueError("give either bearer_token_env or username/password_env, not both")
        if bool(self.username) != bool(self.password_env):
            raise ValueError("basic auth needs both username and password_env")
        return self


class MetricTarget(Options):
    """A `metrics:` entry with a scale: the gpu_samples column a metric lands in and the factor its values take."""

    column: SampleColumn  # type: ignore[valid-type]
    scale: float = 1.0


class MetricsCsvOptions(S3ReadOptions, ClockOptions):
    columns: dict[MetricsColumn, FileColumn] = Field(  # type: ignore[valid-type]
        default_factory=dict, description="Canonical name -> the file's column."
    )
    metrics: dict[str, MetricTarget] | None = Field(
        None, description="Metric name -> gpu_samples column, or {column, scale}; wins over the catalogue."
    )
    timezone: Timezone = Field("UTC", description="Zone of timestamps without an offset.")
    host: str | None = Field(None, description="Host name when the file has no host column.")
    metric: str | None = Field(
        None,
        min_length=1,
        description="The one metric of a single-metric file (no metric column): e.g. util_pct.",
    )

    @field_validator("metrics", mode="before")
    @classmethod
    def _column_alone(cls, value: Any) -> Any:
        """`name: column` is short for `name: {column: column}`."""
        if isinstance(value, dict):
            return {k: {"column": v} if isinstance(v, str) else v for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _one_metric_source(self) -> MetricsCsvOptions:
        if self.metric is not None and "metric" in self.columns:
            raise ValueError(
                "give either metric (one metric per file) or columns.metric (a metric column), not both"
            )
        return self


class TrainLogOptions(S3ReadOptions):
    """`options:` of a `train_log` source: a training throughput log (JSON lines or CSV)."""

    format: Literal["auto", "csv", "jsonl", "kv"] = Field(
        "auto",
        description="csv, jsonl (JSON lines) or kv (`key: value | ...` or `key=value, ...` text lines such as "
        "Megatron-LM's and DeepSpeed's); auto: .csv is csv, .log/.txt kv, anything else JSON lines.",
    )
    columns: dict[str, str] = Field(
        default_factory=dict,
        description="Canonical name -> the file's column (JSON lines: a key, or a dotted path into nested objects).",
    )
    host: str | None = Field(None, description="Host of every line when the log has no host column.")
    job_id: str | None = Field(None, description="Scheduler job id of every line when the log has none.")
    params: float | None = Field(None, gt=0, description="The model's parameter count when the log has none.")
    gpus: StrictInt | None = Field(None, ge=1, description="GPUs of the run when the log has no gpus column.")
    seq_len: StrictInt | None = Field(
        None, ge=1, description="Tokens per sample, to turn samples into tokens when the log has no seq_len."
    )
    batch_size: StrictInt | None = Field(
        None, ge=1, description="Samples per step (the global batch size) when the log has no samples column."
    )
    tokens_per: Literal["step", "line"] = Field(
        "step",
        description="step: `tokens`/`samples` count one step (a line ending N steps after the previous one stands "
        "for N times them); line: they count everything since the previous line.",
    )
    tokens_per_s_per: Literal["job", "gpu"] = Field(
        "job",
        description="Whether a `tokens_per_s` column is the whole run's rate or one GPU's (torchtitan's tps).",
    )
    step_time_unit: Literal["s", "ms"] = Field("s", description="Unit of the step_s and data_s columns.")
    timezone: Timezone = Field("UTC", description="Zone of timestamps without an offset.")


# -- jobs --------------------------------------------------------------------------------------------


class SlurmSacctOptions(S3ReadOptions):
    timezone: Timezone = Field("UTC", description="Zone sacct printed its times in.")
    fields: list[str] | str | None = Field(
        None, description="Column names of output written without a header."
    )
    cluster: str | None = Field(None, description="Cluster name for every job of the source.")
    team_from: Literal["account", "wckey", "none"] = Field("account", description="Where a job's team is.")
    project_from: Literal["wckey", "account", "none"] = Field("wckey", description="Where its project is.")


class K8sPodsOptions(S3ReadOptions):
    cluster: str | None = Field(None, description="Cluster name for every pod of the source.")
    gpu_only: StrictBool = Field(True, description="Keep only pods that request GPUs.")


class JobsCsvOptions(S3ReadOptions):
    columns: dict[JobsColumn, FileColumn] = Field(  # type: ignore[valid-type]
        default_factory=dict, description="Canonical name -> the file's column."
    )
    host: str | None = None
    instance_id: str | None = None
    gpus: str | None = Field(None, description="GPUs of a job without a gpus column (a whole number).")
    gpu_type: str | None = None
    cluster: str | None = None
    timezone: Timezone = "UTC"
    scheduler: str = "csv"
    states: dict[str, JobState] = Field(  # type: ignore[valid-type]
        default_factory=dict, description="The file's state -> a canonical state."
    )

    @field_validator("gpus")
    @classmethod
    def _whole(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"\s*\d+(\.0+)?\s*", value):
            raise ValueError(f"expected a whole number of GPUs, found {value!r}")
        return value


# -- resources ---------------------------------------------------------------------------------------


class Ec2InstancesOptions(AnswerOptions):
    region: str | None = None
    endpoint_url: str | None = None
    filters: dict[str, Any] | list[dict[str, Any]] | None = Field(
        None, description="DescribeInstances filters: {name: [values]} or a list of {Name, Values}."
    )
    page_size: int = Field(1000, ge=1, description="Instances per DescribeInstances page.")
    states: list[str] = Field(default_factory=list, description="Instance states to keep (default: all).")


class CloudWatchLogsOptions(S3ReadOptions):
    region: str | None = None
    endpoint_url: str | None = None
    prefix: str | None = Field(
        None, description="Only log groups whose name starts with this (logGroupNamePrefix)."
    )
    page_size: int = Field(50, ge=1, le=50, description="Log groups per DescribeLogGroups page (at most 50).")
    listed_at: datetime | None = Field(
        None,
        description="UTC time of a saved listing whose file name holds no date (default: the file's modification "
        "time).",
    )


class HostsCsvOptions(S3ReadOptions):
    columns: dict[HostsColumn, FileColumn] = Field(  # type: ignore[valid-type]
        default_factory=dict, description="Canonical name -> the file's column."
    )
    provider: str | None = None
    timezone: Timezone = "UTC"


# -- storage -----------------------------------------------------------------------------------------


class S3InventoryOptions(S3ReadOptions):
    keep_inventories: StrictInt = Field(2, ge=1, description="Daily inventories kept per bucket.")
    verify_md5: StrictBool = Field(True, description="Check each inventory file against its manifest's MD5.")
    retries: StrictInt = Field(5, ge=1, description="S3 attempts per request.")


class S3ListingOptions(AnswerOptions):
    checksums: StrictBool = Field(
        False, description="HeadObject each object for its checksum (one call each)."
    )
    multipart_uploads: StrictBool = Field(True, description="List incomplete multipart uploads.")
    upload_parts: StrictBool = Field(True, description="List each incomplete upload's parts (its size).")
    page_size: StrictInt = Field(1000, ge=1)
    workers: StrictInt = Field(16, ge=1)
    retries: StrictInt = Field(5, ge=1, description="S3 attempts per request.")


class FsScanOptions(Options):
    workers: StrictInt = Field(8, ge=1)
    fingerprint: StrictBool = Field(False, description="Hash each file's content (to find duplicates).")
    full_hash_max_bytes: StrictInt = Field(64 * 1024 * 1024, ge=0)
    sample_blocks: StrictInt = Field(16, ge=2)
    sample_block_bytes: StrictInt = Field(1024 * 1024, ge=1)
    exclude: list[str] = Field(default_factory=list, description="Globs of paths not scanned.")
    storage_class: str | None = None
    resource_id: str | None = None
