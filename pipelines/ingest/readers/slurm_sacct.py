"""Slurm `sacct -P` (`--parsable2`, or `-p` with its trailing `|`) output -> jobs, one row per allocation.

Columns are matched by name, ignoring case, in any order; a file without a header line (`sacct -n`)
needs the source's `fields` option (the `-o` list) unless it uses the list docs/telemetry.md recommends.
Header lines repeated by appended dumps are skipped.

- `JobID` forms: `1234`, steps `1234.batch` / `1234.extern` / `1234.0` (folded into their allocation),
  array tasks `1234_5` (each its own job), heterogeneous components `1234+0`, `1234+1` (folded into one
  job `1234`). `job_id` is the allocation's `JobIDRaw` when the file has that column, else the JobID
  without step; the displayed form is kept in tags (`slurm_job_id`, `array_job_id`, `array_task_id`).
- `State` normalised (`CANCELLED by 123` -> CANCELLED, short forms `CD`/`F`/..., transitional states
  such as COMPLETING/SUSPENDED -> RUNNING); `state_raw` keeps the text. An unknown state rejects the file.
- `Submit`/`Start`/`End` are cluster local time: the `timezone` option (default UTC); `Unknown`/`None`
  -> NULL.
- `NodeList` host lists (`gpu[01-04,07]`, several bracket groups) expanded into `hosts`; a malformed one
  rejects the file naming the line.
- GPUs from `AllocTRES` (`gres/gpu=8`; typed `gres/gpu:a100=8` counted only when no untyped count is
  present, so never twice), else `ReqTRES`, else `AllocGRES`/`ReqGRES` (`gpu:a100:8`).
- team: the Comment's `team=...` (or another alias of config `tags.team`), else `Account`
  (option `team_from: account|wckey|none`); project: the Comment's `project=...`, else `WCKey`
  (option `project_from: wckey|account|none`).
- A last line cut short (no newline at the end and too few fields: a dump interrupted while writing)
  is skipped and counted in the load's warnings; a short line anywhere else rejects the file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, LoadResult, PerFileBatch
from pipelines.ingest.readers.hostlist import HostlistError, expand_hostlist
from pipelines.ingest.readers.jobs_common import (
    ISO_HINT,
    JOB_STATES,
    insert_jobs,
    parse_time,
    read_text,
    slurm_state,
    zone,
)
from pipelines.sources.options import SlurmSacctOptions

# the `-o` list assumed for files without a header (formats reference §9.1's recommended call)
DEFAULT_FIELDS = (
    "JobID", "JobIDRaw", "JobName", "User", "UID", "Account", "Partition", "QOS", "State", "ExitCode",
    "Submit", "Eligible", "Start", "End", "Elapsed", "ElapsedRaw", "AllocNodes", "AllocCPUS", "ReqTRES",
    "AllocTRES", "NodeList", "Cluster", "WCKey", "Comment",
)  # fmt: skip

# free-text columns that may contain `|`: surplus fields on a line are merged back into the only one
FREE_TEXT = ("jobname", "comment", "admincomment", "systemcomment", "constraints")
JOBID = re.compile(r"^(?P<base>\d+)(?:_(?P<task>\d+|\[[^\]]*\]))?(?:\+(?P<het>\d+))?(?:\.(?P<step>.+))?$")
TRES_GPU = re.compile(r"^gres/gpu(?::(?P<type>[^=]+))?$")
GRES_GPU = re.compile(r"^gpu(?::(?P<type>[^:(]+))?:(?P<n>\d+)")


@dataclass
class _Alloc:
    key: str
    primary: dict[str, Any] | None = None  # the allocation row (het component +0 first)
    components: list[dict[str, Any]] = field(default_factory=list)  # non-step rows
    steps: list[dict[str, Any]] = field(default_factory=list)


def parse_gpus(tres: str | None, gres: bool = False) -> tuple[int | None, str | None]:
    """(GPU count, GPU type) of an AllocTRES/ReqTRES string (or AllocGRES with gres=True).

    Raises ValueError for a GPU count that is not a number.
    """
    if not tres or not tres.strip():
        return None, None
    untyped: int | None = None
    typed: dict[str, int] = {}
    for item in tres.split(","):
        item = item.strip()
        if gres:
            m = GRES_GPU.match(item)
            if m:
                if m.group("type"):
                    typed[m.group("type")] = typed.get(m.group("type"), 0) + int(m.group("n"))
                else:
                    untyped = (untyped or 0) + int(m.group("n"))
            continue
        key, _, value = item.partition("=")
        m = TRES_GPU.match(key.strip())
        if not m:
            continue
        if not re.fullmatch(r"\d+", value.strip()):
            raise ValueError(f"GPU count {value!r} in {item!r} is not a whole number")
        if m.group("type"):
            typed[m.group("type")] = typed.get(m.group("type"), 0) + int(value)
        else:
            untyped = (untyped or 0) + int(value)
    gpu_type = ",".join(sorted(typed)) if typed else None
    if untyped is not None:
        return untyped, gpu_type
    if typed:
        return sum(typed.values()), gpu_type
    return None, None


def _comment_tags(text: str | None) -> dict[str, str]:
    """`team=nlp,project=llm` / `team:nlp; project=llm` -> {team: nlp, project: llm}."""
    out: dict[str, str] = {}
    for m in re.finditer(r"([A-Za-z_][\w.\-/]*)\s*[=:]\s*([^,;\s]+)", text or ""):
        out.setdefault(m.group(1), m.group(2))
    return out


class SlurmSacctReader(PerFileBatch):
    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        opts = ctx.source.options_as(SlurmSacctOptions)
        tz = zone(ctx.source.name, file.uri, opts.timezone)
        text = read_text(file)
        if not text.strip():
            raise RejectedFile(file.uri, "file is empty")
        lines = text.split("\n")
        ends_cut = not text.endswith("\n")
        if not ends_cut:
            lines = lines[:-1]
        header_at = next(i for i, line in enumerate(lines) if line.strip())
        first = [f.strip() for f in lines[header_at].rstrip("\r").split("|")]
        if "jobid" in (f.lower() for f in first):
            names = [f.lower() for f in first]
            body_start = header_at + 1
        else:
            fields = opts.fields if opts.fields is not None else list(DEFAULT_FIELDS)
            if isinstance(fields, str):
                fields = re.split(r"[,|]", fields)
            names = [str(f).strip().lower() for f in fields]
            body_start = header_at
            if "jobid" not in names:
                raise RejectedFile(file.uri, "the `fields` option must name JobID", line=header_at + 1)
        if names and names[-1] == "":  # `-p` writes a trailing `|`
            names = names[:-1]
        trailing_bar = all(line.rstrip("\r").endswith("|") for line in lines[body_start:] if line.strip())
        col = {n: i for i, n in enumerate(names)}
        for need in ("jobid", "state"):
            if need not in col:
                raise RejectedFile(file.uri, f"no {need!r} column in the header", line=header_at + 1)
        free = [col[n] for n in FREE_TEXT if n in col]
        header_line = lines[header_at].rstrip("\r") if body_start > header_at else None
        rows: list[dict[str, Any]] = []
        warnings: list[str] = []
        for i in range(body_start, len(lines)):
            raw = lines[i].rstrip("\r")
            if not raw.strip() or raw == header_line:
                continue
            values = raw.split("|")
            if trailing_bar and values and values[-1] == "":
                values = values[:-1]
            lineno = i + 1
            if len(values) > len(names):
                if len(free) != 1:
                    raise RejectedFile(
                        file.uri,
                        f"{len(values)} fields but the header has {len(names)}; a value contains '|' "
                        "(put JobName/Comment last in the -o list, or use only one free-text column)",
                        line=lineno,
                    )
                k, extra = free[0], len(values) - len(names)
                values = [*values[:k], "|".join(values[k : k + extra + 1]), *values[k + extra + 1 :]]
            if len(values) < len(names):
                if i == len(lines) - 1 and ends_cut:
                    warnings.append(
                        f"line {lineno}: last line cut short ({len(values)} of {len(names)} fields); skipped"
                    )
                    continue
                raise RejectedFile(
                    file.uri, f"{len(values)} fields but the header has {len(names)}", line=lineno
                )
            rows.append(self._row(dict(zip(names, values, strict=True)), lineno, file, tz))
        jobs = self._fold(rows)
        team_from = opts.team_from
        project_from = opts.project_from
        cluster = opts.cluster
        for job in jobs:
            wckey = job.pop("_wckey")
            job["cluster"] = job["cluster"] or cluster
            job["team"] = {"account": job["account"], "wckey": wckey}.get(team_from)
            job["project"] = {"account": job["account"], "wckey": wckey}.get(project_from)
        n = insert_jobs(con, jobs, "stg_slurm__jobs", file, ctx)
        return LoadResult(rows=n, warnings=warnings)

    # -- one line -----------------------------------------------------------------------------------

    def _row(self, r: dict[str, str], lineno: int, file: SourceFile, tz: Any) -> dict[str, Any]:
        def get(*names: str) -> str | None:
            for n in names:
                v = r.get(n)
                if v is not None and v.strip() != "":
                    return v.strip()
            return None

        jobid = get("jobid") or ""
        m = JOBID.match(jobid)
        if not m:
            raise RejectedFile(file.uri, f"cannot read job id {jobid!r}", line=lineno, column="JobID")
        state_raw = get("state") or ""
        state = slurm_state(state_raw)
        if state is None:
            raise RejectedFile(
                file.uri,
                f"unknown job state {state_raw!r}; known: {', '.join(JOB_STATES)} (and Slurm's other states)",
                line=lineno,
                column="State",
            )
        times = {}
        for name, column in (("submit", "Submit"), ("start", "Start"), ("end", "End")):
            try:
                times[name] = parse_time(r.get(name), tz)
            except ValueError:
                raise RejectedFile(
                    file.uri,
                    f"expected {ISO_HINT} or Unknown, found {r.get(name)!r}",
                    line=lineno,
                    column=column,
                ) from None
        try:
            hosts = expand_hostlist(r.get("nodelist"))
        except HostlistError as exc:
            raise RejectedFile(file.uri, f"bad host list: {exc}", line=lineno, column="NodeList") from None
        gpus, gpu_type = None, None
        for name, column, gres in (("alloctres", "AllocTRES", False), ("reqtres", "ReqTRES", False),
                                   ("allocgres", "AllocGRES", True), ("reqgres", "ReqGRES", True)):  # fmt: skip
            try:
                gpus, gpu_type = parse_gpus(r.get(name), gres=gres)
            except ValueError as exc:
                raise RejectedFile(file.uri, str(exc), line=lineno, column=column) from None
            if gpus is not None:
                break
        nodes_text = get("allocnodes", "nnodes")
        nodes = int(nodes_text) if nodes_text and nodes_text.isdigit() else None
        raw_id = get("jobidraw")
        return {
            "_row": lineno,
            "jobid": jobid,
            "base": m.group("base"),
            "task": m.group("task"),
            "het": int(m.group("het")) if m.group("het") else None,
            "step": m.group("step"),
            "raw_id": raw_id.split(".", 1)[0] if raw_id else None,
            "job_name": get("jobname"),
            "user": get("user"),
            "account": get("account"),
            "partition": get("partition"),
            "cluster": get("cluster"),
            "state": state,
            "state_raw": state_raw,
            "exit_code": get("exitcode"),
            "submitted_at": times["submit"],
            "started_at": times["start"],
            "ended_at": times["end"],
            "gpus": gpus,
            "gpu_type": gpu_type,
            "nodes": nodes,
            "hosts": hosts,
            "wckey": get("wckey"),
            "comment": get("comment"),
        }

    # -- steps and components folded into allocations ----------------------------------------------

    def _fold(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        allocs: dict[str, _Alloc] = {}
        for r in rows:
            key = r["base"] + (f"_{r['task']}" if r["task"] else "")
            a = allocs.setdefault(key, _Alloc(key))
            if r["step"] is not None:
                a.steps.append(r)
            else:
                a.components.append(r)
        out = []
        for a in allocs.values():
            comps = sorted(a.components, key=lambda r: (r["het"] or 0, r["_row"]))
            # the same allocation in two lines (a dump appended twice): the later line wins
            if comps and all(c["het"] is None for c in comps):
                comps = [comps[-1]]
            rows_for_values = comps or a.steps
            p = comps[0] if comps else a.steps[0]
            hosts = list(dict.fromkeys(h for c in rows_for_values for h in c["hosts"]))
            gpu_rows = [c["gpus"] for c in comps if c["gpus"] is not None]
            if gpu_rows:
                gpus = sum(gpu_rows)
            else:
                step_gpus = [s["gpus"] for s in a.steps if s["gpus"] is not None]
                gpus = max(step_gpus) if step_gpus else None
            gpu_type = next((c["gpu_type"] for c in comps + a.steps if c["gpu_type"]), None)
            node_rows = [c["nodes"] for c in comps if c["nodes"] is not None]
            nodes = sum(node_rows) if node_rows else (len(hosts) or None)
            starts = [c["started_at"] for c in rows_for_values if c["started_at"]]
            ends = [c["ended_at"] for c in rows_for_values if c["ended_at"]]
            running = any(c["ended_at"] is None and c["started_at"] for c in comps)
            tags: dict[str, str] = {}
            for c in [p, *a.steps]:
                for k, v in _comment_tags(c["comment"]).items():
                    tags.setdefault(k, v)
            tags["slurm_job_id"] = a.key
            if p["task"]:
                tags["array_job_id"], tags["array_task_id"] = p["base"], p["task"]
            if len(comps) > 1 and any(c["het"] is not None for c in comps):
                tags["het_components"] = str(len(comps))
            if p["wckey"]:
                tags["wckey"] = p["wckey"]
            out.append(
                {
                    "_row": p["_row"],
                    # a pending array (`1234_[1-10]`) shares its JobIDRaw with one of its tasks: keep its JobID
                    "job_id": a.key if (p["task"] or "").startswith("[") else (p["raw_id"] or a.key),
                    "cluster": p["cluster"],
                    "job_name": p["job_name"],
                    "run_id": None,
                    "user": p["user"] or next((s["user"] for s in a.steps if s["user"]), None),
                    "account": p["account"],
                    "partition": p["partition"],
                    "state": p["state"],
                    "state_raw": p["state_raw"],
                    "exit_code": p["exit_code"],
                    "submitted_at": p["submitted_at"],
                    "started_at": min(starts) if starts else None,
                    "ended_at": None if running or not ends else max(ends),
                    "gpus_requested": gpus,
                    "gpu_type": gpu_type,
                    "nodes": nodes,
                    "hosts": hosts,
                    "instance_ids": None,
                    "gpu_indices": None,
                    "tags_json": _json(tags),
                    "_wckey": p["wckey"],
                }
            )
        return out


def _json(d: dict[str, str]) -> str | None:
    return json.dumps(d) if d else None
