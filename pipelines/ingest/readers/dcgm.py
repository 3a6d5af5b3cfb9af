"""dcgm-exporter scrapes (Prometheus text exposition, `curl node:9400/metrics`) -> gpu_samples.

A file holds one scrape or many: `name{label="value",...} value [timestamp]` lines, `# HELP`/`# TYPE`
comments skipped. One row per GPU series and time, pivoting the metrics wastewatch reads:
DCGM_FI_DEV_GPU_UTIL (util_pct, percent), _MEM_COPY_UTIL, _FB_USED / _FB_FREE / _FB_RESERVED (MiB; total =
used + free + reserved), _POWER_USAGE, _POWER_MGMT_LIMIT, _GPU_TEMP, _SM_CLOCK, _MEM_CLOCK, and the
profiling ratios DCGM_FI_PROF_SM_ACTIVE, _SM_OCCUPANCY, _PIPE_TENSOR_ACTIVE, _DRAM_ACTIVE, _GR_ENGINE_ACTIVE
(0-1); the dcgm-exporter 1.x names (dcgm_gpu_utilization, dcgm_fi_prof_* in percent) too. Other metrics
are ignored. DCGM's blank/sentinel values (e.g. 9223372036854775794), NaN and Inf become NULL.

Time: the line's own timestamp (milliseconds since the epoch, as Prometheus writes it; seconds, as
OpenMetrics writes them, when the number is below 1e11). Lines without one take the file's
time: a UTC timestamp in the file name (`node-a_20261130T014200Z.prom`, `2026-11-30T01-42-00Z`, or ten
epoch digits), else the file's modification time (option `file_time: name|mtime` forces one). A file
holding several scrapes of the same series without timestamps is rejected (write one scrape per file,
or keep the timestamps: `promtool`/federation output has them).

Labels: `gpu` -> gpu_index, `UUID`/`uuid` -> gpu_uuid, `modelName` -> gpu_model, `pci_bus_id`,
`exported_pod`/`pod`/`pod_name` -> pod (likewise namespace, container; the `exported_*` form first, since
Prometheus renames the workload's labels when they collide with the exporter's own), `GPU_I_PROFILE` /
`GPU_I_ID` -> mig_profile / mig_instance_id, `hpc_job` -> job_id; every other label is kept in `labels`.
The host is the `host` option, else the label named by `host_label`, else `node`, `kubernetes_node`,
`Hostname`/`hostname` (unless it is the exporter pod's own name, `dcgm-exporter-...`), else the file
name up to its first `_` (or `host_pattern`), else `instance` without its port. With dcgm-exporter's
`hpc_job` mapping a GPU shared by two jobs has one row per job (gpu_hours counts the sample once).

A line that is not a sample (cut short, no value, a stray word) rejects the file naming its line; so does
a last line without its newline (the format ends every line with one; Prometheus refuses such a scrape),
since a value or timestamp cut short still reads as a sample.
"""

from __future__ import annotations

import csv
import gzip
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import duckdb

from pipelines.errors import FileFailed, RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import (
    EPOCH,
    AheadOfClock,
    LoadContext,
    LoadResult,
    PlannedBatch,
    ahead_of_clock,
    duckdb_problem,
    epoch_seconds,
)
from pipelines.sources.nvidia_smi import host_from_path
from pipelines.sources.options import DcgmOptions
from pipelines.warehouse import sql_text

# the lines split by DuckDB's CSV reader at `{` (the name, then the labels and value): much faster than
# string functions over whole lines; c2/c3 catch `{` inside label values
LINES = (
    "read_csv($paths, columns = {'c0': 'VARCHAR', 'c1': 'VARCHAR', 'c2': 'VARCHAR', 'c3': 'VARCHAR'}, "
    "header = false, delim = '{', quote = '', escape = '', auto_detect = false, null_padding = true, "
    "filename = '_path')"
)
NAME_TIMES = (
    (re.compile(r"(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})"), "parts"),
    (re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2})[:\-]?(\d{2})[:\-]?(\d{2})"), "parts"),
    (re.compile(r"(?<!\d)(1\d{9})(?!\d)"), "epoch"),
)
SAMPLE = re.compile(
    r'^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>(?:[^"}]|"(?:[^"\\]|\\.)*")*)\})?'
    r" (?P<value>\S+)(?: (?P<ts>\S+))?$"
)

LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"(?:[^"\\]|\\.)*"\s*(?:,|$)')


CATALOG = Path(__file__).resolve().parents[2] / "catalog" / "dcgm_metrics.csv"


@cache
def metric_catalog() -> tuple[dict[str, object], ...]:
    """pipelines/catalog/dcgm_metrics.csv: exporter metric name -> gpu_samples column and scale."""
    with CATALOG.open(encoding="utf-8") as f:
        return tuple(
            {"metric": r["metric"], "column_name": r["column"], "scale": float(r["scale"])}
            for r in csv.DictReader(f)
        )


def time_from_name(name: str) -> datetime | None:
    for pattern, kind in NAME_TIMES:
        m = pattern.search(name)
        if not m:
            continue
        try:
            if kind == "epoch":
                return datetime.fromtimestamp(int(m.group(1)), UTC).replace(tzinfo=None)
            return datetime(*(int(g) for g in m.groups()))  # type: ignore[arg-type]
        except ValueError:
            continue
    return None


def line_problem(line: str) -> str | None:
    """Why a (non-comment) line is not a Prometheus sample, or None."""
    m = SAMPLE.match(line.rstrip("\r"))
    if not m:
        if "{" in line and "}" not in line:
            return "not a sample: the label set is not closed (line cut short?)"
        return "not a sample: expected `name{labels} value [timestamp]`"
    try:
        float(m.group("value"))
    except ValueError:
        return f"value {m.group('value')!r} is not a number"
    if m.group("ts"):
        try:
            float(m.group("ts"))
        except ValueError:
            return f"timestamp {m.group('ts')!r} is not a number"
    labels = m.group("labels")
    if labels and labels.strip() and not _labels_ok(labels):
        return "malformed labels"
    return None


def _name_and_time(line: str) -> tuple[str, float | None]:
    """A sample line's metric name and its own timestamp (None without one, or when unreadable: such a line
    was refused before); `promtool tsdb dump` lines carry the name as the `__name__` label."""
    m = SAMPLE.match(line)
    if m:
        name, ts = m.group("name"), m.group("ts")
    else:
        labels, _, tail = line.partition("} ")
        found = re.search(r'__name__="([^"]*)"', labels)
        name, parts = (found.group(1) if found else ""), tail.split()
        ts = parts[1] if len(parts) > 1 else None
    try:
        return name, float(ts) if ts else None
    except ValueError:
        return name, None


def _labels_ok(text: str) -> bool:
    pos = 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m or m.end() == pos:
            return text[pos:].strip() == ""
        pos = m.end()
    return True


def _cut_last_line(file: SourceFile) -> int | None:
    """The number of the last line when an uncompressed file does not end with a newline, else None (a
    cut .gz fails its own end-of-stream check)."""
    if file.compressed:
        return None
    with file.local_path.open("rb") as f:
        f.seek(-1, 2)
        if f.read(1) == b"\n":
            return None
        f.seek(0)
        lines = 1
        while chunk := f.read(1 << 20):
            lines += chunk.count(b"\n")
    return lines


@dataclass(frozen=True)
class _Plan:
    file: SourceFile
    ctx: LoadContext
    file_ts: datetime
    path_host: str | None
    file_time_from: str = "name"  # where file_ts came from: the file's name or its modification time


class DcgmReader(PlannedBatch):
    batch_files = 100  # one batch's scrapes are pivoted in memory: keep batches moderate

    def _plan(self, file: SourceFile, ctx: LoadContext) -> _Plan:
        opts = ctx.source.options_as(DcgmOptions)
        mode = opts.file_time
        if mode not in ("name_or_mtime", "name", "mtime"):
            raise RejectedFile(file.uri, f"source {ctx.source.name!r}: file_time must be `name` or `mtime`")
        if file.size == 0:
            raise RejectedFile(file.uri, "file is empty (0 bytes)")
        cut = _cut_last_line(file)
        if cut is not None:
            raise RejectedFile(
                file.uri,
                "the last line does not end with a newline: the file was cut short (the text format ends "
                "every line with one, and a cut value or timestamp can still read as a sample)",
                line=cut,
            )
        named = time_from_name(file.name) if mode != "mtime" else None
        if mode == "name" and named is None:
            raise RejectedFile(
                file.uri, "file_time: name, but the file name holds no timestamp like 20261130T014200Z"
            )
        path_host = host_from_path(file.relative, opts.host_pattern)
        return _Plan(
            file, ctx, named or file.modified_at, path_host, "name" if named else "modification time"
        )

    def _insert(self, con: duckdb.DuckDBPyConnection, plans: list[_Plan]) -> list[LoadResult]:
        opts = plans[0].ctx.source.options_as(DcgmOptions)
        files = [
            {"path": str(p.file.local_path), "uri": p.file.uri, "file_id": p.ctx.file_id,
             "file_ts": p.file_ts, "path_host": p.path_host}
            for p in plans
        ]  # fmt: skip
        index = {p.ctx.file_id: i for i, p in enumerate(plans)}
        by_path = {str(p.file.local_path): i for i, p in enumerate(plans)}
        cte = (
            "with _files as (select unnest($files, recursive := true)),\n"  # noqa: S608 - identifiers only
            "_metrics as (select unnest($metrics, recursive := true)),\n"
            f"_src as (select c0, c1, c2, c3, _path from {LINES})\n"
        )
        bind = {
            "paths": [f["path"] for f in files],
            "files": files,
            "metrics": list(metric_catalog()),
            "host": opts.host,
            "host_label": opts.host_label,
            "source_name": plans[0].ctx.source.name,
        }
        stg = sql_text("staging", "stg_dcgm__gpu_samples")
        try:
            con.execute(f"insert into gpu_samples by name\n{cte}select * from (\n{stg}\n)", bind).fetchall()  # noqa: S608 - identifiers only, values are bound
        except duckdb.Error as exc:
            text = str(exc)
            m = re.search(r"wastewatch: ([a-z ]+) \[path=([^\]]*)\]", text)
            if m and m.group(2) in by_path:
                i = by_path[m.group(2)]
                raise FileFailed(i, self._explain(plans[i], m.group(1))) from None
            if len(plans) == 1:
                raise RejectedFile(plans[0].file.uri, f"cannot load: {duckdb_problem(exc)}") from None
            raise
        ahead = ahead_of_clock(con, [p.ctx for p in plans])
        if ahead is not None:
            raise FileFailed(ahead.index, self._ahead_line(plans[ahead.index], ahead))
        counts = dict(
            con.execute(
                "select x_file_id, count(*) from gpu_samples where x_file_id in (select unnest($ids)) group by 1",
                {"ids": list(index)},
            ).fetchall()
        )
        return [LoadResult(rows=int(counts.get(p.ctx.file_id, 0))) for p in plans]

    @staticmethod
    def _ahead_line(plan: _Plan, ahead: AheadOfClock) -> RejectedFile:
        """The first line of a catalogue metric whose time (its own timestamp, else the file's) is after the
        limit of the clock check."""
        names = {str(m["metric"]) for m in metric_catalog()}
        opener = gzip.open if plan.file.compressed else open
        with opener(plan.file.local_path, "rt", encoding="utf-8", errors="replace") as f:  # type: ignore[operator]
            for n, line in enumerate(f, 1):
                text = line.rstrip("\r\n")
                if not text or text.startswith("#"):
                    continue
                name, ts = _name_and_time(text)
                if name not in names:
                    continue
                at = epoch_seconds(ts) if ts is not None else (plan.file_ts - EPOCH).total_seconds()
                if at > ahead.limit_s:
                    seen = repr(text[:120])
                    if ts is None:
                        seen += f" (no sample timestamp: the file's time, from its {plan.file_time_from})"
                    return ahead.refusal(plan.file.uri, n, at, seen)
        return ahead.refusal(plan.file.uri)

    def _explain(self, plan: _Plan, what: str) -> RejectedFile:
        """The slow path: name the first bad line of the file the statement stopped at."""
        uri = plan.file.uri
        if what.startswith("several scrapes"):
            return RejectedFile(
                uri,
                "several scrapes of the same series without sample timestamps; keep the timestamps "
                "(promtool / federation output) or write one scrape per file (its time from the file name)",
            )
        opener = gzip.open if plan.file.compressed else open
        with opener(plan.file.local_path, "rt", encoding="utf-8", errors="replace") as f:  # type: ignore[operator]
            for n, line in enumerate(f, 1):
                text = line.rstrip("\r\n")
                if not text or text.startswith("#"):
                    continue
                problem = line_problem(text)
                if problem:
                    return RejectedFile(uri, f"{problem}: {text[:120]!r}", line=n)
        return RejectedFile(uri, f"cannot load: {what}")
