"""What the job readers (slurm_sacct, k8s_pods, jobs_csv) share: states, local times, option checks, and
handing parsed rows to DuckDB (an Arrow table registered as `_src`, then a static staging SQL file)."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import duckdb
import pyarrow as pa

from pipelines.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, duckdb_problem
from pipelines.sources.mapped_csv import JOB_STATES  # the normalised states of jobs.state (sql/raw/jobs.sql)
from pipelines.warehouse import one, sql_text

# every Slurm job state (long and short forms, `squeue`/`sacct` man pages) -> its normalised state
SLURM_STATES = {
    **{s: s for s in JOB_STATES},
    "BF": "BOOT_FAIL", "CA": "CANCELLED", "CD": "COMPLETED", "DL": "DEADLINE", "F": "FAILED",
    "NF": "NODE_FAIL", "OOM": "OUT_OF_MEMORY", "PD": "PENDING", "PR": "PREEMPTED", "R": "RUNNING",
    "RQ": "REQUEUED", "TO": "TIMEOUT",
    # transitional states of a job that holds its nodes count as running
    "CONFIGURING": "RUNNING", "CF": "RUNNING", "COMPLETING": "RUNNING", "CG": "RUNNING",
    "STAGE_OUT": "RUNNING", "SO": "RUNNING", "SIGNALING": "RUNNING", "SI": "RUNNING",
    "RESIZING": "RUNNING", "RS": "RUNNING", "SUSPENDED": "RUNNING", "S": "RUNNING",
    "STOPPED": "RUNNING", "ST": "RUNNING",
    "REQUEUE_FED": "REQUEUED", "RF": "REQUEUED", "REQUEUE_HOLD": "REQUEUED", "RH": "REQUEUED",
    "RESV_DEL_HOLD": "PENDING", "RD": "PENDING",
    "REVOKED": "CANCELLED", "RV": "CANCELLED",
    "SPECIAL_EXIT": "FAILED", "SE": "FAILED",
}  # fmt: skip

# words generic job logs use (jobs_csv) -> normalised state; matched on the first word, ignoring case
GENERIC_STATES = {
    **{s.lower(): s for s in JOB_STATES},
    "ok": "COMPLETED", "success": "COMPLETED", "succeeded": "COMPLETED", "successful": "COMPLETED",
    "complete": "COMPLETED", "done": "COMPLETED", "finished": "COMPLETED", "passed": "COMPLETED",
    "fail": "FAILED", "failure": "FAILED", "error": "FAILED", "errored": "FAILED", "crashed": "FAILED",
    "canceled": "CANCELLED", "cancel": "CANCELLED", "aborted": "CANCELLED", "killed": "CANCELLED",
    "stopped": "CANCELLED", "terminated": "CANCELLED",
    "timed_out": "TIMEOUT", "timedout": "TIMEOUT", "oom": "OUT_OF_MEMORY", "oomkilled": "OUT_OF_MEMORY",
    "preempted": "PREEMPTED", "evicted": "PREEMPTED", "queued": "PENDING", "waiting": "PENDING",
    "submitted": "PENDING", "started": "RUNNING", "active": "RUNNING",
}  # fmt: skip

NULL_TIMES = {"", "unknown", "none", "null", "n/a", "(null)", "-"}

ISO_HINT = "an ISO 8601 time like 2026-11-30T01:42:36 (optionally with Z or +00:00)"


def slurm_state(raw: str) -> str | None:
    """`CANCELLED by 132794` -> CANCELLED; `CANCELLED+` -> CANCELLED; unknown -> None."""
    word = raw.strip().split(" ", 1)[0].rstrip("+").upper()
    return SLURM_STATES.get(word)


def generic_state(raw: str, extra: dict[str, str] | None = None) -> str | None:
    """`ok` -> COMPLETED, `failed: NaN loss` -> FAILED, `exit 0`-style mappings via `extra`."""
    text = raw.strip()
    if extra:
        for key, state in extra.items():
            if text.lower() == key.lower():
                return state
    word = re.split(r"[\s:;,(]", text, maxsplit=1)[0].lower().replace("-", "_")
    if extra:
        for key, state in extra.items():
            if word == key.lower():
                return state
    return GENERIC_STATES.get(word)


def zone(source_name: str, file_uri: str, name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise RejectedFile(file_uri, f"source {source_name!r}: unknown timezone {name!r}") from None


def parse_time(text: str | None, tz: ZoneInfo) -> datetime | None:
    """A local or zoned ISO time -> naive UTC; None for Unknown/None/empty; ValueError if unreadable."""
    if text is None:
        return None
    s = text.strip()
    if s.lower() in NULL_TIMES:
        return None
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    s = s.replace("/", "-")
    dt = datetime.fromisoformat(s)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=tz)
    return dt.astimezone(UTC).replace(tzinfo=None)


def read_text(file: SourceFile) -> str:
    """The whole file as text (gzip-aware, BOM dropped); RejectedFile when it cannot be read."""
    try:
        if file.compressed:
            with gzip.open(file.local_path, "rt", encoding="utf-8-sig", errors="replace") as f:
                return f.read()
        return file.local_path.read_text(encoding="utf-8-sig", errors="replace")
    except (OSError, EOFError) as exc:
        raise RejectedFile(file.uri, f"cannot read: {exc}") from None


# what a job reader hands to its staging SQL, one dict per job
JOB_SCHEMA = pa.schema(
    [
        ("_row", pa.int64()),
        ("job_id", pa.string()),
        ("cluster", pa.string()),
        ("job_name", pa.string()),
        ("run_id", pa.string()),
        ("user", pa.string()),
        ("account", pa.string()),
        ("team", pa.string()),
        ("project", pa.string()),
        ("partition", pa.string()),
        ("state", pa.string()),
        ("state_raw", pa.string()),
        ("exit_code", pa.string()),
        ("submitted_at", pa.timestamp("us")),
        ("started_at", pa.timestamp("us")),
        ("ended_at", pa.timestamp("us")),
        ("gpus_requested", pa.int32()),
        ("gpu_type", pa.string()),
        ("nodes", pa.int32()),
        ("hosts", pa.list_(pa.string())),
        ("instance_ids", pa.list_(pa.string())),
        ("gpu_indices", pa.list_(pa.int32())),
        ("tags_json", pa.string()),
    ]
)


def norm_keys(con: duckdb.DuckDBPyConnection, keys: Iterable[str]) -> list[str]:
    """Config tag aliases in the normalised form of stored tag keys, config order kept."""
    got = one(con, "select list_transform($k, lambda k: normalize_tag_key(k))", {"k": list(keys)})
    return list(dict.fromkeys(got[0] if got else []))


def insert_jobs(
    con: duckdb.DuckDBPyConnection,
    jobs: list[dict[str, Any]],
    staging: str,
    file: SourceFile,
    ctx: LoadContext,
    params: dict[str, Any] | None = None,
) -> int:
    """Insert parsed jobs into `jobs` through `sql/staging/<staging>.sql` (which reads `_src`)."""
    if not jobs:
        return 0
    table = pa.Table.from_pylist(jobs, schema=JOB_SCHEMA)
    view = f"_jobs_src_{ctx.file_id}"
    con.register(view, table)
    tags = ctx.config.tags
    bind = {
        "team_keys": norm_keys(con, tags["team"]),
        "project_keys": norm_keys(con, tags["project"]),
        "source_name": ctx.source.name,
        "source_file": file.uri,
        "file_id": ctx.file_id,
        **(params or {}),
    }
    stg = sql_text("staging", staging)
    try:
        con.execute(
            f"insert into jobs by name\nwith _src as (select * from {view})\nselect * from (\n{stg}\n)",  # noqa: S608 - identifiers only, values are bound
            bind,
        )
    except duckdb.Error as exc:
        raise RejectedFile(file.uri, f"cannot load: {duckdb_problem(exc)}") from None
    finally:
        con.unregister(view)
    return len(jobs)
