"""A training throughput log (JSON lines or CSV) -> train_steps, one row per line, so the MFU a job achieved is
measured from what the training loop itself wrote instead of assumed.

Fields (matched by name, ignoring case; the `columns` option maps a canonical name to the file's column, or
for JSON lines a key or a dotted path into nested objects such as DLLogger's `data.global_step`):
  ts (required: ISO 8601, local time in `timezone` unless it carries an offset, or epoch seconds / ms),
  step, tokens, tokens_total, samples, samples_total, seq_len, tokens_per_s, step_s, data_s, params, gpus,
  job_id, host, loss.
The tokens a line stands for come from the first of: the rise of a cumulative `tokens_total` (Hugging Face
`num_input_tokens_seen`), the rise of `samples_total` (Megatron/NeMo `consumed samples`) x seq_len, `tokens`
or `samples` x seq_len per step times the steps since the previous line (`tokens_per: line`: per line), or
`tokens_per_s` x the wall-clock time since the previous line (x gpus for a per-GPU rate). `params`, `gpus`,
`seq_len`, `host` and `job_id` may be given as options when the log does not carry them. Other columns are
kept in `labels`. docs/telemetry.md maps Megatron-LM, NeMo, torchtitan, DeepSpeed and Hugging Face logs.

Lines that carry no throughput field (nor a step, when `batch_size` gives the samples per step) are skipped
(evaluation, configuration and other log records); a line
with an unreadable time or number rejects the file naming its line and field, and a log from which no
parameter count or no token count can be had is rejected naming what is missing.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import duckdb
import pyarrow as pa

from pipelines.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import LoadContext, LoadResult, PerFileBatch, duckdb_problem
from pipelines.ingest.readers.jobs_common import parse_time, read_text, zone
from pipelines.sources.options import TrainLogOptions
from pipelines.warehouse import one, sql_text

NUMBERS = (
    "step", "tokens", "tokens_total", "samples", "samples_total", "seq_len", "tokens_per_s", "step_s", "data_s",
    "params", "gpus", "loss",
)  # fmt: skip
TEXTS = ("job_id", "host")
CANONICAL = ("ts", *NUMBERS, *TEXTS)
# the names the frameworks write (docs/telemetry.md), tried in order when `columns` does not map a field
ALIASES: dict[str, tuple[str, ...]] = {
    "ts": ("ts", "timestamp", "time", "_timestamp", "datetime"),
    "step": ("step", "global_step", "iteration", "trainer/global_step", "train/global_step"),
    "tokens": ("tokens", "ntokens", "num_tokens"),
    "tokens_total": (
        "tokens_total",
        "num_input_tokens_seen",
        "train/num_input_tokens_seen",
        "consumed_tokens",
    ),
    "samples": ("samples", "global_batch_size", "global batch size"),
    "samples_total": ("samples_total", "consumed_samples", "consumed samples"),
    "seq_len": ("seq_len", "seq_length", "sequence_length", "max_seq_length"),
    "tokens_per_s": ("tokens_per_s", "tokens_per_second"),
    "step_s": ("step_s", "step_time", "step_time_s", "train_step_timing in s"),
    "data_s": ("data_s", "stall_s", "data_loading_s", "data_time"),
    "params": ("params", "num_params", "n_params", "parameters"),
    "gpus": ("gpus", "num_gpus", "world_size"),
    "loss": ("loss", "lm loss", "reduced_train_loss", "train_loss", "train/loss"),
    "job_id": ("job_id", "slurm_job_id"),
    "host": ("host", "hostname", "node"),
}
THROUGHPUT = ("tokens", "tokens_total", "samples", "samples_total", "tokens_per_s", "step_s")

SCHEMA = pa.schema(
    [
        ("_line", pa.int64()),
        ("ts", pa.timestamp("us")),
        *[(n, pa.float64()) for n in NUMBERS],
        *[(n, pa.string()) for n in TEXTS],
        ("labels", pa.map_(pa.string(), pa.string())),
    ]
)


def _flatten(obj: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _records(text: str, fmt: str, uri: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number, {field: value}) per record: a CSV row (line 1 is the header) or a JSON object."""
    if fmt == "csv":
        reader = csv.DictReader(io.StringIO(text))
        if not reader.fieldnames:
            raise RejectedFile(uri, "no header line")
        return [(reader.line_num, {k: v for k, v in row.items() if k is not None}) for row in reader]
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if fmt == "kv":
            record = _key_values(line)
            if record:
                out.append((number, record))
            continue
        if line.startswith("DLLL "):  # NVIDIA DLLogger prefixes each JSON line
            line = line[5:]
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RejectedFile(uri, f"not a JSON object: {exc.msg}", line=number) from None
        if not isinstance(obj, dict):
            raise RejectedFile(uri, f"expected a JSON object, found {type(obj).__name__}", line=number)
        out.append((number, _flatten(obj)))
    return out


KV_TIME = re.compile(r"^\s*\[(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)\]")
KV_PAIR = re.compile(r"^\s*([A-Za-z_][^:=]*?)\s*(?::|=)\s*(.+?)\s*$")
KV_ITERATION = re.compile(r"^\s*iteration\s+(\d+)\s*/\s*\d+\s*$")


def _key_values(line: str) -> dict[str, Any]:
    """A `key: value | key: value` line (Megatron-LM) or `key=value, key=value` line (DeepSpeed), with an
    optional leading `[YYYY-MM-DD HH:MM:SS]` time (the logging prefixes' `[INFO] [file:line]` are skipped);
    {} for a line without pairs."""
    record: dict[str, Any] = {}
    found = KV_TIME.match(line)
    if found:
        record["ts"] = found.group(1).replace(",", ".")
        line = line[found.end() :]
    line = re.sub(r"^(\s*\[[^\]]*\])+", "", line)  # [INFO] [timer.py:215:stop]
    for piece in re.split(r"\||,\s+|/(?=[A-Za-z_]+=)", line):
        iteration = KV_ITERATION.match(piece)
        if iteration:
            record["iteration"] = iteration.group(1)
            continue
        pair = KV_PAIR.match(piece)
        if pair:
            record[pair.group(1).strip()] = pair.group(2).strip()
    return record if len(record) > ("ts" in record) else {}


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    text = str(value).strip().replace(",", "")
    if text == "" or text.lower() in {"nan", "inf", "-inf", "none", "null"}:
        return None
    return float(text)  # ValueError: the caller names the line and field


def _time(value: Any, tz: ZoneInfo) -> datetime | None:
    number = None if isinstance(value, str) and not value.strip().replace(".", "", 1).isdigit() else value
    if number is not None and not isinstance(number, bool):
        seconds = float(number)
        if seconds >= 1e11:  # epoch milliseconds
            seconds /= 1000
        return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)
    return parse_time(str(value), tz)


class TrainLogReader(PerFileBatch):
    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        opts = ctx.source.options_as(TrainLogOptions)
        tz = zone(ctx.source.name, file.uri, opts.timezone)
        unknown = set(opts.columns) - set(CANONICAL)
        if unknown:
            raise RejectedFile(
                file.uri,
                f"source {ctx.source.name!r}: `columns` maps these names to the file's: {list(CANONICAL)}",
            )
        name = file.local_path.name.lower().removesuffix(".gz")
        fmt = opts.format
        if fmt == "auto":
            fmt = "csv" if name.endswith(".csv") else "kv" if name.endswith((".log", ".txt")) else "jsonl"
        if file.size == 0:
            raise RejectedFile(file.uri, "file is empty (0 bytes)")
        records = _records(read_text(file), fmt, file.uri)
        parsed = [p for p in (self._parse(n, r, opts, tz, file.uri) for n, r in records) if p is not None]
        if not parsed:
            raise RejectedFile(file.uri, "no line carries tokens, samples, a throughput or a step time")
        self._require(parsed, opts, file.uri)
        table = pa.Table.from_pylist(parsed, schema=SCHEMA)
        view = f"_train_src_{ctx.file_id}"
        con.register(view, table)
        bind = {
            "host": opts.host,
            "job_id": opts.job_id,
            "params": opts.params,
            "gpus": opts.gpus,
            "seq_len": opts.seq_len,
            "batch_size": opts.batch_size,
            "tokens_per_line": opts.tokens_per == "line",
            "rate_per_gpu": opts.tokens_per_s_per == "gpu",
            "time_scale": 0.001 if opts.step_time_unit == "ms" else 1.0,
            "source_name": ctx.source.name,
            "source_file": file.uri,
            "file_id": ctx.file_id,
        }
        stg = sql_text("staging", "stg_train_log__train_steps")
        try:
            got = one(
                con,
                f"insert into train_steps by name\nwith _src as (select * from {view})\nselect * from (\n{stg}\n)",  # noqa: S608 - identifiers only, values are bound
                bind,
            )
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot load: {duckdb_problem(exc)}") from None
        finally:
            con.unregister(view)
        return LoadResult(rows=int(got[0]) if got else 0)

    @staticmethod
    def _parse(
        number: int, record: dict[str, Any], opts: TrainLogOptions, tz: ZoneInfo, uri: str
    ) -> dict[str, Any] | None:
        by_lower = {k.lower().strip(): k for k in record}
        for k in record:  # a nested field also answers to its own name (DLLogger's data.global_step)
            by_lower.setdefault(k.rsplit(".", 1)[-1].lower().strip(), k)
        where: dict[str, str] = {}
        for canon in CANONICAL:
            wanted = opts.columns.get(canon)
            names = (wanted,) if wanted is not None else ALIASES[canon]
            for alias in names:
                key = by_lower.get(alias.lower())
                if key is not None:
                    where[canon] = key
                    break
        present = {c for c, k in where.items() if record.get(k) not in (None, "")}
        if not present & set(THROUGHPUT) and not (opts.batch_size and "step" in present):
            return None  # an evaluation or configuration record, not a training step
        row: dict[str, Any] = {"_line": number}
        if "ts" not in present:
            raise RejectedFile(uri, "no time on a training line (see options.columns.ts)", line=number)
        try:
            row["ts"] = _time(record[where["ts"]], tz)
        except (ValueError, OverflowError, OSError):
            raise RejectedFile(
                uri,
                f"expected an ISO 8601 time or epoch seconds, found {record[where['ts']]!r}",
                line=number,
                column=where["ts"],
            ) from None
        if row["ts"] is None:
            raise RejectedFile(uri, "no time on a training line", line=number, column=where["ts"])
        for canon in NUMBERS:
            key = where.get(canon)
            try:
                row[canon] = _number(record.get(key)) if key is not None else None
            except ValueError:
                raise RejectedFile(
                    uri, f"{canon} {record[key]!r} is not a number", line=number, column=key
                ) from None
            if canon != "loss" and row[canon] is not None and row[canon] < 0:
                raise RejectedFile(uri, f"{canon} {record[key]!r} is negative", line=number, column=key)
        for canon in TEXTS:
            key = where.get(canon)
            value = record.get(key) if key is not None else None
            row[canon] = str(value).strip() or None if value is not None else None
        used = set(where.values())
        row["labels"] = [
            (k.lower().strip(), str(v)) for k, v in record.items() if k not in used and v not in (None, "")
        ]
        return row

    @staticmethod
    def _require(parsed: list[dict[str, Any]], opts: TrainLogOptions, uri: str) -> None:
        """The log must give a parameter count and some way to count tokens (options count)."""
        if opts.params is None and not any(r["params"] for r in parsed):
            raise RejectedFile(uri, "no parameter count: map a params column or set options.params")
        seq = opts.seq_len is not None or any(r["seq_len"] for r in parsed)
        counted = any(
            r["tokens"] is not None
            or r["tokens_total"] is not None
            or r["tokens_per_s"] is not None
            or (seq and (r["samples"] is not None or r["samples_total"] is not None or opts.batch_size))
            for r in parsed
        )
        if not counted:
            raise RejectedFile(
                uri,
                "no token count: map tokens, tokens_total or tokens_per_s, or samples / samples_total (or set "
                "options.batch_size) with a seq_len column or options.seq_len",
            )
