"""`nvidia-smi --query-gpu=... --format=csv` captures as wastewatch reads them: the field names (and their
renames across driver versions), how a file's first line tells its layout (header or not, `, ` or `,`),
and where a file's host comes from. Shared by the DuckDB reader (pipelines/ingest/readers/nvidia_smi.py)
and Spark's roll-up (pipelines/transform/spark/gpu_samples.py), so the two read a capture alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipelines.errors import RejectedFile
from pipelines.sources.options import NvidiaSmiOptions

# the --query-gpu list assumed for files without a header (the one the README recommends)
DEFAULT_FIELDS = (
    "timestamp", "name", "pci.bus_id", "uuid", "index", "utilization.gpu", "utilization.memory",
    "memory.total", "memory.used", "memory.free", "power.draw", "power.limit", "temperature.gpu",
    "clocks.current.sm", "clocks.current.memory", "pstate",
)  # fmt: skip

# nvidia-smi field name (and renames across driver versions) -> canonical column of _src
FIELD_MAP = {
    "timestamp": "ts",
    "name": "gpu_model",
    "gpu_name": "gpu_model",
    "pci.bus_id": "pci_bus_id",
    "uuid": "gpu_uuid",
    "gpu_uuid": "gpu_uuid",
    "index": "gpu_index",
    "utilization.gpu": "util_pct",
    "utilization.memory": "mem_util_pct",
    "memory.total": "mem_total_mib",
    "memory.used": "mem_used_mib",
    "memory.free": "mem_free_mib",
    "memory.reserved": "mem_reserved_mib",
    "power.draw": "power_w",
    "power.draw.average": "power_w",
    "power.draw.instant": "power_w",
    "power.limit": "power_limit_w",
    "enforced.power.limit": "power_limit_w",
    "temperature.gpu": "temperature_c",
    "clocks.sm": "sm_clock_mhz",
    "clocks.current.sm": "sm_clock_mhz",
    "clocks.mem": "mem_clock_mhz",
    "clocks.current.memory": "mem_clock_mhz",
    "pstate": "pstate",
    "host": "host",
    "hostname": "host",
}
CANONICAL = (
    "ts", "host", "gpu_model", "pci_bus_id", "gpu_uuid", "gpu_index", "util_pct", "mem_util_pct",
    "mem_total_mib", "mem_used_mib", "mem_free_mib", "mem_reserved_mib", "power_w", "power_limit_w",
    "temperature_c", "sm_clock_mhz", "mem_clock_mhz", "pstate",
)  # fmt: skip


def field_key(header: str) -> str:
    """`utilization.gpu [%]` -> `utilization.gpu`."""
    return re.sub(r"\s*\[[^\]]*\]\s*$", "", header.strip()).strip().lower()


def host_from_path(relative: str, pattern: str | None) -> str | None:
    """The host a file's path names: the `host` group of `pattern`, else the file name up to its first `_`."""
    if pattern:
        m = re.search(pattern, relative)
        return m.group("host") if m and m.groupdict().get("host") else None
    name = relative.replace("\\", "/").rsplit("/", 1)[-1]
    name = re.sub(r"(\.(csv|txt|log))?(\.gz)?$", "", name, flags=re.IGNORECASE)
    return name.split("_", 1)[0] or None


@dataclass(frozen=True)
class Layout:
    """How a capture's lines are laid out: its field names, separator, whether the first line is a header,
    which field (`c<i>`) holds each canonical column, and the host when no column holds it."""

    names: tuple[str, ...]
    delim: str
    has_header: bool
    mapping: tuple[tuple[str, str], ...]  # canonical column -> c<i>
    fixed_host: str | None


def layout(uri: str, first: str, opts: NvidiaSmiOptions, relative: str) -> Layout:
    """The layout of the file at `uri` from its first line (BOM dropped), or RejectedFile saying why not."""
    delim = ", " if ", " in first else ","
    first_fields = [field_key(f) for f in first.split(",")]
    has_header = "timestamp" in first_fields or any(f in FIELD_MAP and f != "name" for f in first_fields[:3])
    if has_header:
        names = first_fields
    else:
        fields = opts.fields if opts.fields is not None else list(DEFAULT_FIELDS)
        if isinstance(fields, str):
            fields = fields.split(",")
        names = [field_key(str(f)) for f in fields]
        if len(first.split(",")) != len(names):
            raise RejectedFile(
                uri,
                f"no header line and {len(first.split(','))} values per line, but the source's `fields` "
                f"option lists {len(names)} fields; set `fields` to the --query-gpu list used",
                line=1,
            )
    mapping: dict[str, str] = {}
    for i, name in enumerate(names):
        canonical = FIELD_MAP.get(name)
        if canonical and canonical not in mapping:
            mapping[canonical] = f"c{i}"
    if "ts" not in mapping or "util_pct" not in mapping or not ({"gpu_uuid", "gpu_index"} & set(mapping)):
        need = [f for f, c in (("timestamp", "ts"), ("utilization.gpu", "util_pct")) if c not in mapping]
        if not ({"gpu_uuid", "gpu_index"} & set(mapping)):
            need.append("uuid or index")
        raise RejectedFile(uri, f"missing required field(s) {', '.join(need)}", line=1)
    fixed_host = opts.host or (None if "host" in mapping else host_from_path(relative, opts.host_pattern))
    if "host" not in mapping and not fixed_host:
        raise RejectedFile(
            uri, "cannot tell the host: no host column, and neither `host` nor `host_pattern` matched"
        )
    return Layout(
        tuple(names), delim, has_header, tuple(mapping.items()), str(fixed_host) if fixed_host else None
    )
