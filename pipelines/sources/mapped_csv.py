"""The column-mapped CSV kinds (jobs_csv, hosts_csv, metrics_csv): what each one's file may hold.

One `Layout` per kind: the columns its rows have (each found in the header by its name or an alias, ignoring
case, unless the source's `columns:` option names the file's own column), which are required, how each value
is typed, and which option fills a row that has none. The shared reader (pipelines/ingest/readers/mapped_csv.py)
does the rest; the kinds' options models (options.py) check `columns:` and `states:` against these layouts when
the config loads, so a misspelt name stops the run (exit 2) before any file is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import AfterValidator

# the normalised states of jobs.state (sql/raw/jobs.sql)
JOB_STATES = (
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "RUNNING",
    "PENDING", "REQUEUED", "BOOT_FAIL", "DEADLINE",
)  # fmt: skip

# gpu_samples' metric columns (sql/raw/gpu_samples.sql) a metrics_csv metric may land in (`metrics:` option)
SAMPLE_COLUMNS = (
    "util_pct", "mem_util_pct", "mem_used_mib", "mem_free_mib", "mem_reserved_mib", "mem_total_mib", "power_w",
    "power_limit_w", "temperature_c", "sm_clock_mhz", "mem_clock_mhz", "sm_active", "sm_occupancy",
    "tensor_active", "dram_active", "gr_engine_active",
)  # fmt: skip

# How a column's text becomes a value: text (trimmed), time (ISO, in the source's timezone, to naive UTC),
# whole (a whole number), wholes (whole numbers separated by `,`/`;`/spaces), words (names separated so),
# hosts (a Slurm host list), json_object (a JSON object), job_state (a job state word, with `states:`), sql
# (typed by the kind's staging SQL, not in Python).
Parse = Literal["text", "time", "whole", "wholes", "words", "hosts", "json_object", "job_state", "sql"]


@dataclass(frozen=True)
class Column:
    name: str  # the name rows use (and `columns:` maps)
    parse: Parse = "text"
    aliases: tuple[str, ...] = ()  # other header names it is found under, ignoring case
    default: str | None = None  # the option whose value a row without one takes


@dataclass(frozen=True)
class Layout:
    kind: str
    columns: tuple[Column, ...]
    required: tuple[str, ...]  # a file without one of these columns, or a row with it empty, is rejected
    synonyms: tuple[tuple[str, str], ...] = ()  # other names `columns:` accepts: (synonym, column)
    states: tuple[str, ...] = ()  # what `states:` may map a word to (empty: the kind has no `states:`)

    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def option_names(self, column: str) -> tuple[str, ...]:
        """The names `columns:` may give `column` under: its own, then its synonyms."""
        return (column, *(s for s, c in self.synonyms if c == column))

    def known_column(self, name: str) -> str:
        """A `columns:` key, checked (ValueError naming what is allowed)."""
        allowed = (*self.names(), *(s for s, _ in self.synonyms))
        if name not in allowed:
            raise ValueError(f"{name!r} is not a column of {self.kind}; map one of {', '.join(allowed)}")
        return name

    def known_state(self, state: str) -> str:
        """A `states:` value, checked (ValueError naming what is allowed)."""
        if state not in self.states:
            raise ValueError(f"{state!r} is not a job state; map the word to one of {', '.join(self.states)}")
        return state


def column_key(layout: Layout) -> object:
    """The type of a `columns:` key of `layout`'s kind: a column it has (checked when the config loads)."""
    return Annotated[str, AfterValidator(layout.known_column)]


def _file_column(name: str) -> str:
    if not name.strip():
        raise ValueError("an empty column name: give the file's own header name, or leave the column out")
    return name


# a `columns:` value: the file's column (a header name, matched ignoring case)
FileColumn = Annotated[str, AfterValidator(_file_column)]


def state_value(layout: Layout) -> object:
    """The type of a `states:` value of `layout`'s kind: a normalised state (checked when the config loads)."""
    return Annotated[str, AfterValidator(layout.known_state)]


JOBS_CSV = Layout(
    kind="jobs_csv",
    columns=(
        Column("job_id"),
        Column("job_name", aliases=("name",)),
        Column("run_id"),
        Column("user"),
        Column("account"),
        Column("team"),
        Column("project"),
        Column("partition"),
        Column("cluster", default="cluster"),
        Column("state", "job_state", aliases=("status",)),
        Column("exit_code"),
        Column("submitted_at", "time"),
        Column("started_at", "time"),
        Column("ended_at", "time"),
        Column("gpus_requested", "whole", aliases=("gpus",), default="gpus"),
        Column("gpu_type", default="gpu_type"),
        Column("nodes", "whole"),
        Column("hosts", "hosts", aliases=("host", "nodelist", "node", "hostname"), default="host"),
        Column("instance_ids", "words", aliases=("instance_id",), default="instance_id"),
        Column("gpu_indices", "wholes"),
        Column("tags", "json_object"),
    ),
    required=("job_id",),
    synonyms=(("gpus", "gpus_requested"),),
    states=JOB_STATES,
)

HOSTS_CSV = Layout(
    kind="hosts_csv",
    columns=(
        Column("host", aliases=("hostname", "node", "nodename", "name")),
        Column("instance_id", aliases=("instanceid", "instance")),
        Column("resource_id"),
        Column("private_dns"),
        Column("private_ip", aliases=("ip", "ip_address")),
        Column("instance_type", aliases=("instancetype", "type", "machine_type", "vm_size")),
        Column("provider", default="provider"),
        Column("region_id", aliases=("region",)),
        Column("launched_at", "time"),
        Column("terminated_at", "time"),
        Column("tags", "json_object"),
    ),
    required=("host",),
)

# metrics_csv files can be large: the staging SQL (sql/staging/stg_metrics_csv__gpu_samples.sql) types them
METRICS_CSV = Layout(
    kind="metrics_csv",
    columns=(
        Column("ts", "sql", aliases=("timestamp", "time")),
        Column("metric", "sql", aliases=("name", "__name__")),
        Column("value", "sql"),
        *(
            Column(name, "sql")
            for name in (
                "host",
                "instance_id",
                "gpu_uuid",
                "gpu_index",
                "gpu_model",
                "pod",
                "namespace",
                "container",
                "mig_profile",
                "mig_instance_id",
                "job_id",
            )
        ),  # fmt: skip
    ),
    required=("ts", "metric", "value"),
)
