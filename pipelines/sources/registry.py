"""The registry of source kinds: one line per kind, as ruff's table of rule codes is.

Each line says what the kind is (its family), which landed table its reader writes, which files it claims
inside a folder, the model its `options:` must satisfy, where its reader class lives (imported only
when a source of that kind is read) and, for a column-mapped CSV kind, its layout (pipelines/sources/mapped_csv.py). Config validation, the Dagster ingest assets, file listing and the
docs all derive from this table; adding a format is its reader, its staging SQL, one line here, a fixture
and its test.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal, TypeVar

from pydantic import BaseModel

from pipelines.sources.mapped_csv import HOSTS_CSV, JOBS_CSV, METRICS_CSV, Layout
from pipelines.sources.options import (
    AzureOptions,
    BillingOptions,
    CloudWatchLogsOptions,
    DcgmOptions,
    Ec2InstancesOptions,
    FsScanOptions,
    GcpOptions,
    HostsCsvOptions,
    JobsCsvOptions,
    K8sPodsOptions,
    MetricsCsvOptions,
    NvidiaSmiDmonOptions,
    NvidiaSmiOptions,
    Options,
    PrometheusJsonOptions,
    PrometheusOptions,
    S3InventoryOptions,
    S3ListingOptions,
    SlurmSacctOptions,
    TrainLogOptions,
)

Family = Literal["billing", "telemetry", "jobs", "resources", "storage"]

# How often a source of each family is expected to deliver something new (a source's `expected_every`
# overrides it): providers refresh the month's billing files at least daily but can skip a day; telemetry,
# job and host exports arrive with every nightly run; S3 Inventory can be configured weekly.
EXPECTED_EVERY: dict[Family, str] = {
    "billing": "3d",
    "telemetry": "2d",
    "jobs": "2d",
    "resources": "2d",
    "storage": "8d",
}
# A telemetry host whose newest sample is this far behind its source's newest has stopped reporting.
HOST_SILENCE = "6h"

# the files a kind claims inside a folder (billing kinds also pick up their export manifests)
BILLING_FILES = (".csv", ".csv.gz", ".parquet", "manifest.json")
GCP_FILES = (".csv", ".csv.gz", ".json", ".json.gz", ".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")
# a whole-source reader lists what it reads itself; these are the files the new-file sensor watches there
WATCHED = (".csv", ".csv.gz", ".parquet", ".json", ".txt")


@dataclass(frozen=True)
class SourceKind:
    name: str
    family: Family
    target: str  # the landed table its reader writes
    patterns: tuple[str, ...]  # file-name endings it reads (or, whole-source kinds, watches) in a folder
    options: type[Options]
    reader: str  # "module:Class", imported when a source of this kind is first read
    summary: str
    layout: Layout | None = (
        None  # a column-mapped CSV kind's layout (read by pipelines/ingest/readers/mapped_csv.py)
    )


_R = "pipelines.ingest.readers."
_B = "pipelines.ingest.billing."

KINDS: tuple[SourceKind, ...] = (
    # billing
    SourceKind("focus", "billing", "billing_line_items", BILLING_FILES, BillingOptions, _B + "focus:FocusReader", "FOCUS 1.0-1.2 exports, CSV, CSV.gz or Parquet"),
    SourceKind("aws_cur", "billing", "billing_line_items", BILLING_FILES, BillingOptions, _B + "aws_cur:AwsCurReader", "AWS legacy Cost and Usage Report"),
    SourceKind("aws_cur2", "billing", "billing_line_items", BILLING_FILES, BillingOptions, _B + "aws_cur2:AwsCur2Reader", "AWS CUR 2.0 (Data Exports)"),
    SourceKind("azure", "billing", "billing_line_items", BILLING_FILES, AzureOptions, _B + "azure:AzureReader", "Azure Cost Management exports"),
    SourceKind("gcp", "billing", "billing_line_items", GCP_FILES, GcpOptions, _B + "gcp:GcpReader", "Google Cloud billing export (BigQuery), CSV or NDJSON"),
    # telemetry
    SourceKind("nvidia_smi", "telemetry", "gpu_samples", (".csv", ".csv.gz", ".txt", ".txt.gz", ".log"), NvidiaSmiOptions, _R + "nvidia_smi:NvidiaSmiReader", "nvidia-smi --query-gpu CSV captures"),
    SourceKind("nvidia_smi_dmon", "telemetry", "gpu_samples", (".txt", ".txt.gz", ".log", ".log.gz"), NvidiaSmiDmonOptions, _R + "nvidia_smi_dmon:NvidiaSmiDmonReader", "nvidia-smi dmon logs"),
    SourceKind("dcgm", "telemetry", "gpu_samples", (".prom", ".prom.gz", ".txt", ".txt.gz", ".metrics"), DcgmOptions, _R + "dcgm:DcgmReader", "DCGM exporter scrapes (Prometheus text)"),
    SourceKind("prometheus_json", "telemetry", "gpu_samples", (".json", ".json.gz"), PrometheusJsonOptions, _R + "prometheus_json:PrometheusJsonReader", "Prometheus query_range JSON"),
    SourceKind("prometheus", "telemetry", "gpu_hourly_stats", (), PrometheusOptions, _R + "prometheus:PrometheusReader", "a Prometheus-compatible HTTP API (Thanos, Mimir, VictoriaMetrics): hourly statistics by PromQL"),
    SourceKind("metrics_csv", "telemetry", "gpu_samples", (".csv", ".csv.gz"), MetricsCsvOptions, _R + "metrics_csv:MetricsCsvReader", "long-format metrics CSV with a column mapping", METRICS_CSV),
    SourceKind("train_log", "telemetry", "train_steps", (".csv", ".csv.gz", ".jsonl", ".jsonl.gz", ".ndjson", ".json", ".log"), TrainLogOptions, _R + "train_log:TrainLogReader", "training throughput logs (tokens, step time, parameters), JSON lines or CSV"),
    # jobs
    SourceKind("slurm_sacct", "jobs", "jobs", (".txt", ".txt.gz", ".log", ".psv", ".csv"), SlurmSacctOptions, _R + "slurm_sacct:SlurmSacctReader", "Slurm sacct --parsable2 output"),
    SourceKind("k8s_pods", "jobs", "jobs", (".json", ".json.gz"), K8sPodsOptions, _R + "k8s_pods:K8sPodsReader", "kubectl get pods -o json"),
    SourceKind("jobs_csv", "jobs", "jobs", (".csv", ".csv.gz"), JobsCsvOptions, _R + "jobs_csv:JobsCsvReader", "any scheduler's jobs as CSV with a column mapping", JOBS_CSV),
    # resources
    SourceKind("ec2_instances", "resources", "inventory_hosts", WATCHED, Ec2InstancesOptions, _R + "ec2_instances:Ec2InstancesReader", "EC2 DescribeInstances"),
    SourceKind("hosts_csv", "resources", "inventory_hosts", (".csv",), HostsCsvOptions, _R + "hosts_csv:HostsCsvReader", "a host inventory CSV (CMDB export)", HOSTS_CSV),
    # storage
    SourceKind("s3_inventory", "storage", "storage_objects", WATCHED, S3InventoryOptions, _R + "s3_inventory:S3InventoryReader", "S3 Inventory reports"),
    SourceKind("s3_listing", "storage", "storage_objects", WATCHED, S3ListingOptions, _R + "s3_listing:S3ListingReader", "S3 ListObjectsV2 (any S3-compatible store)"),
    SourceKind("cloudwatch_logs", "storage", "log_groups", (".json", ".json.gz"), CloudWatchLogsOptions, _R + "cloudwatch_logs:CloudWatchLogsReader", "CloudWatch Logs DescribeLogGroups (boto3), or its saved JSON output"),
    SourceKind("fs_scan", "storage", "storage_objects", WATCHED, FsScanOptions, _R + "fs_scan:FsScanReader", "a mounted file system"),
)  # fmt: skip

M = TypeVar("M", bound=BaseModel)


@cache
def _by_name() -> dict[str, SourceKind]:
    return {k.name: k for k in KINDS}


def kind_names() -> tuple[str, ...]:
    return tuple(k.name for k in KINDS)


def source_kind(name: str) -> SourceKind:
    """The registry line of `name` (KeyError for a kind that is not registered)."""
    return _by_name()[name]


def kinds_of(family: Family) -> tuple[str, ...]:
    """The kinds of one family, in registry order."""
    return tuple(k.name for k in KINDS if k.family == family)


def kinds_writing(table: str) -> tuple[str, ...]:
    """The kinds whose reader writes `table`."""
    return tuple(k.name for k in KINDS if k.target == table)


def options_of(kind: str, options: dict[str, object], model: type[M]) -> M:
    """A source's `options:` validated against its kind's model, typed as `model` (which it must be)."""
    validated = source_kind(kind).options.model_validate(options)
    if not isinstance(validated, model):
        raise TypeError(f"kind {kind!r} has {type(validated).__name__} options, not {model.__name__}")
    return validated
