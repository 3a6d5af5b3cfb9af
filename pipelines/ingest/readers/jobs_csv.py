"""A generic job log as CSV -> jobs, one row per line, so any scheduler's or script's export can be read.

The layout (columns matched by name, ignoring case; all optional except job_id):
  job_id, job_name, run_id, user, account, team, project, partition, cluster, state, exit_code,
  submitted_at, started_at, ended_at, gpus_requested (or gpus), gpu_type, nodes, hosts (a host or a
  Slurm host list `gpu[01-02]`, or names separated by spaces/`;`), instance_ids, gpu_indices (`0,1` or
  `0;1`), tags (a JSON object).
Other columns become tags (normalised keys), so a `phase` column is queryable as tags['phase'].

Options:
- `columns`: {canonical name: column in the file}, for files that name things differently, e.g.
  `{started_at: start_ts, ended_at: end_ts, state: exit_status}`;
- `host`, `instance_id`, `gpus`, `gpu_type`, `cluster`: values for every row when the file has none;
- `timezone`: for times without an offset (default UTC); times with `Z`/`+hh:mm` are converted;
- `scheduler`: written to jobs.scheduler (default `csv`);
- `states`: {word in the file: normalised state}, added to the built-in words (`ok`/`success`/`done` ->
  COMPLETED, `failed: <why>`/`error` -> FAILED, `cancelled`/`killed` -> CANCELLED, `oom` ->
  OUT_OF_MEMORY, the normalised states themselves, ...; the first word of the value decides).
A value that cannot be read (no job id, an unreadable time, an unknown state, a bad host list) rejects
the file naming its line and column. The layout is JOBS_CSV (pipelines/sources/mapped_csv.py); the reading is
the shared mapped-CSV reader's (mapped_csv.py); `columns:` and `states:` are checked when the config loads.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext
from pipelines.ingest.readers.jobs_common import insert_jobs
from pipelines.ingest.readers.mapped_csv import MappedRows, Typed
from pipelines.sources.options import JobsCsvOptions, Options

TEXT = (
    "job_id", "cluster", "job_name", "run_id", "user", "account", "team", "project", "partition", "exit_code",
    "submitted_at", "started_at", "ended_at", "gpus_requested", "gpu_type",
)  # fmt: skip


class JobsCsvReader(MappedRows):
    def row(self, typed: Typed, opts: Options) -> dict[str, Any]:
        v = typed.values
        hosts = v["hosts"] or []
        return {
            "_row": typed.index + 2,
            **{c: v[c] for c in TEXT},
            "state": v["state"],
            "state_raw": typed.raw.get("state"),
            "nodes": v["nodes"] if v["nodes"] is not None else (len(hosts) or None),
            "hosts": hosts or None,
            "instance_ids": v["instance_ids"] or None,
            "gpu_indices": v["gpu_indices"] or None,
            "tags_json": json.dumps(typed.tags) if typed.tags else None,
        }

    def insert(
        self,
        con: duckdb.DuckDBPyConnection,
        rows: list[dict[str, Any]],
        file: SourceFile,
        ctx: LoadContext,
        opts: Options,
    ) -> int:
        assert isinstance(opts, JobsCsvOptions)
        return insert_jobs(con, rows, "stg_jobs_csv__jobs", file, ctx, {"scheduler": opts.scheduler})
