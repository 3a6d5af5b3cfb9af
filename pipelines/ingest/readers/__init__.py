"""One reader per source kind, imported when first used.

The table below is the registry: a kind whose module does not exist yet has no reader, and its
sources are skipped with a note (so a config can name kinds before their reader lands).
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

READER_PATHS: dict[str, str] = {
    # billing
    "focus": "pipelines.ingest.readers.focus:FocusReader",
    "aws_cur": "pipelines.ingest.readers.aws_cur:AwsCurReader",
    "aws_cur2": "pipelines.ingest.readers.aws_cur2:AwsCur2Reader",
    "azure": "pipelines.ingest.readers.azure:AzureReader",
    "gcp": "pipelines.ingest.readers.gcp:GcpReader",
    # telemetry
    "nvidia_smi": "pipelines.ingest.readers.nvidia_smi:NvidiaSmiReader",
    "nvidia_smi_dmon": "pipelines.ingest.readers.nvidia_smi_dmon:NvidiaSmiDmonReader",
    "dcgm": "pipelines.ingest.readers.dcgm:DcgmReader",
    "prometheus_json": "pipelines.ingest.readers.prometheus_json:PrometheusJsonReader",
    "metrics_csv": "pipelines.ingest.readers.metrics_csv:MetricsCsvReader",
    # jobs
    "slurm_sacct": "pipelines.ingest.readers.slurm_sacct:SlurmSacctReader",
    "k8s_pods": "pipelines.ingest.readers.k8s_pods:K8sPodsReader",
    "jobs_csv": "pipelines.ingest.readers.jobs_csv:JobsCsvReader",
    # resources
    "ec2_instances": "pipelines.ingest.readers.ec2_instances:Ec2InstancesReader",
    "hosts_csv": "pipelines.ingest.readers.hosts_csv:HostsCsvReader",
    # storage
    "s3_inventory": "pipelines.ingest.readers.s3_inventory:S3InventoryReader",
    "s3_listing": "pipelines.ingest.readers.s3_listing:S3ListingReader",
    "fs_scan": "pipelines.ingest.readers.fs_scan:FsScanReader",
}


# the landed table each kind writes (known without importing the reader)
READER_TARGETS: dict[str, str] = {
    **dict.fromkeys(("focus", "aws_cur", "aws_cur2", "azure", "gcp"), "billing_line_items"),
    **dict.fromkeys(
        ("nvidia_smi", "nvidia_smi_dmon", "dcgm", "prometheus_json", "metrics_csv"), "gpu_samples"
    ),
    **dict.fromkeys(("slurm_sacct", "k8s_pods", "jobs_csv"), "jobs"),
    **dict.fromkeys(("ec2_instances", "hosts_csv"), "inventory_hosts"),
    **dict.fromkeys(("s3_inventory", "s3_listing", "fs_scan"), "storage_objects"),
}


@cache
def get_reader(kind: str) -> Any | None:
    """The reader instance for `kind`, or None when its module is not written yet."""
    path = READER_PATHS.get(kind)
    if path is None:
        return None
    module_name, _, cls = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise
    return getattr(module, cls)()


def available_kinds() -> list[str]:
    return [kind for kind in READER_PATHS if get_reader(kind) is not None]
