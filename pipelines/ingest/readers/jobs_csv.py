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
the file naming its line and column.
"""

from __future__ import annotations

import json
import re
from typing import Any

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, LoadResult, PerFileBatch, duckdb_problem
from pipelines.ingest.readers.hostlist import HostlistError, expand_hostlist
from pipelines.ingest.readers.jobs_common import (
    ISO_HINT,
    JOB_STATES,
    generic_state,
    insert_jobs,
    parse_time,
    zone,
)
from pipelines.sources.options import JobsCsvOptions

CANONICAL = (
    "job_id", "job_name", "run_id", "user", "account", "team", "project", "partition", "cluster", "state",
    "exit_code", "submitted_at", "started_at", "ended_at", "gpus_requested", "gpu_type", "nodes", "hosts",
    "instance_ids", "gpu_indices", "tags",
)  # fmt: skip

ALIASES = {
    "gpus_requested": ("gpus",),
    "hosts": ("host", "nodelist", "node", "hostname"),
    "instance_ids": ("instance_id",),
    "job_name": ("name",),
    "state": ("status",),
}


def _int(text: str | None) -> int | None:
    if text is None or not text.strip():
        return None
    t = text.strip()
    if not re.fullmatch(r"\d+(\.0+)?", t):
        raise ValueError(f"expected a whole number, found {text!r}")
    return int(float(t))


def _list(text: str | None) -> list[str]:
    if text is None:
        return []
    return [p for p in re.split(r"[\s;,]+", text.strip()) if p]


class JobsCsvReader(PerFileBatch):
    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        opts = ctx.source.options_as(JobsCsvOptions)
        tz = zone(ctx.source.name, file.uri, opts.timezone)
        mapping = opts.columns or {}
        states = opts.states or {}
        if not isinstance(mapping, dict) or not isinstance(states, dict):
            raise RejectedFile(
                file.uri, f"source {ctx.source.name!r}: `columns` and `states` must be mappings"
            )
        bad = sorted(set(mapping) - set(CANONICAL) - {"gpus"})
        if bad:
            raise RejectedFile(
                file.uri,
                f"source {ctx.source.name!r}: `columns` names unknown field(s) {bad}; known: {list(CANONICAL)}",
            )
        bad_states = sorted(str(v) for v in states.values() if str(v) not in JOB_STATES)
        if bad_states:
            raise RejectedFile(
                file.uri,
                f"source {ctx.source.name!r}: `states` maps to {bad_states}; use one of {list(JOB_STATES)}",
            )
        if file.size == 0:
            raise RejectedFile(file.uri, "file is empty (0 bytes)")
        try:
            cur = con.execute(
                "select * from read_csv($p, header = true, all_varchar = true, null_padding = true)",
                {"p": str(file.local_path)},
            )
            header = [d[0] for d in cur.description]
            data = cur.fetchall()
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot read: {duckdb_problem(exc)}") from None
        by_lower = {h.lower().strip(): i for i, h in enumerate(header)}
        where: dict[str, int] = {}
        for canon in CANONICAL:
            wanted = mapping.get(canon) or (mapping.get("gpus") if canon == "gpus_requested" else None)
            if wanted:
                if str(wanted).lower().strip() not in by_lower:
                    raise RejectedFile(
                        file.uri,
                        f"column {wanted!r} (options.columns.{canon}) is not in the header {header}",
                        line=1,
                    )
                where[canon] = by_lower[str(wanted).lower().strip()]
                continue
            for name in (canon, *ALIASES.get(canon, ())):
                if name in by_lower:
                    where[canon] = by_lower[name]
                    break
        if "job_id" not in where:
            raise RejectedFile(
                file.uri, f"no job_id column in the header {header} (see options.columns)", line=1
            )
        used = set(where.values())
        extra = [(i, h) for i, h in enumerate(header) if i not in used]
        name_of = {canon: header[i] for canon, i in where.items()}

        jobs: list[dict[str, Any]] = []
        for n, values in enumerate(data):
            line = n + 2

            def get(canon: str, values: tuple[Any, ...] = values) -> str | None:
                i = where.get(canon)
                v = values[i] if i is not None else None
                return v.strip() if isinstance(v, str) and v.strip() else None

            def fail(canon: str, problem: str, line: int = line) -> RejectedFile:
                return RejectedFile(file.uri, problem, line=line, column=name_of.get(canon, canon))

            job_id = get("job_id")
            if job_id is None:
                raise fail("job_id", "empty job id")
            times = {}
            for canon in ("submitted_at", "started_at", "ended_at"):
                try:
                    times[canon] = parse_time(get(canon), tz)
                except ValueError:
                    raise fail(canon, f"expected {ISO_HINT}, found {get(canon)!r}") from None
            state_raw = get("state")
            state = None
            if state_raw is not None:
                state = generic_state(state_raw, {str(k): str(v) for k, v in states.items()})
                if state is None:
                    raise fail(
                        "state",
                        f"unknown job state {state_raw!r}; map it with options.states "
                        f"(to one of {', '.join(JOB_STATES)})",
                    )
            try:
                hosts = expand_hostlist(get("hosts")) if get("hosts") else []
            except HostlistError as exc:
                raise fail("hosts", f"bad host list: {exc}") from None
            if not hosts and opts.host:
                hosts = [str(opts.host)]
            numbers: dict[str, Any] = {}
            for canon in ("gpus_requested", "nodes", "gpu_indices"):
                try:
                    if canon == "gpu_indices":
                        numbers[canon] = [_int(x) for x in _list(get(canon))]
                    else:
                        numbers[canon] = _int(get(canon))
                except ValueError as exc:
                    raise fail(canon, str(exc)) from None
            gpus, nodes, indices = numbers["gpus_requested"], numbers["nodes"], numbers["gpu_indices"]
            tags: dict[str, str] = {}
            if get("tags"):
                try:
                    parsed = json.loads(get("tags") or "")
                except json.JSONDecodeError as exc:
                    raise fail("tags", f"tags is not a JSON object: {exc.msg}") from None
                if not isinstance(parsed, dict):
                    raise fail("tags", "tags is not a JSON object")
                tags.update({str(k): str(v) for k, v in parsed.items() if v is not None})
            for i, h in extra:
                v = values[i]
                if isinstance(v, str) and v.strip():
                    tags.setdefault(h, v.strip())
            instance_ids = _list(get("instance_ids")) or ([str(opts.instance_id)] if opts.instance_id else [])
            jobs.append(
                {
                    "_row": line,
                    "job_id": job_id,
                    "cluster": get("cluster") or opts.cluster,
                    "job_name": get("job_name"),
                    "run_id": get("run_id"),
                    "user": get("user"),
                    "account": get("account"),
                    "team": get("team"),
                    "project": get("project"),
                    "partition": get("partition"),
                    "state": state,
                    "state_raw": state_raw,
                    "exit_code": get("exit_code"),
                    **times,
                    "gpus_requested": gpus
                    if gpus is not None
                    else _int(str(opts.gpus))
                    if opts.gpus
                    else None,
                    "gpu_type": get("gpu_type") or opts.gpu_type,
                    "nodes": nodes if nodes is not None else (len(hosts) or None),
                    "hosts": hosts or None,
                    "instance_ids": instance_ids or None,
                    "gpu_indices": indices or None,
                    "tags_json": json.dumps(tags) if tags else None,
                }
            )
        n = insert_jobs(con, jobs, "stg_jobs_csv__jobs", file, ctx, {"scheduler": opts.scheduler})
        return LoadResult(rows=n)
