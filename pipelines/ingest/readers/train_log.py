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

Checkpoint saves and the model's configuration land as rows of their own (`event` checkpoint | config), in
the shapes the trainers print them (tests/fixtures/telemetry/train_logs/README.md): torchtitan's "Finished
saving the checkpoint ... in 5.53 seconds", Megatron-LM's "saving checkpoint at iteration N to PATH" with its
`save-checkpoint` timer (milliseconds, the slowest rank's) and its `--- arguments ---` block (global batch,
sequence length, tensor/pipeline/context/data parallel sizes, layers and hidden size), Hugging Face Trainer's
"Saving model checkpoint to PATH" (no duration) and "Total train batch size ... = N"; in JSON lines or CSV a
`save_s` field (with no throughput) is a checkpoint and `model` or parallel sizes (tp, pp, cp, dp) a
configuration. A text line without a time of its own takes the time of the nearest timed line before it
(else after it).

Other lines that carry no throughput field (nor a step, when `batch_size` gives the samples per step) are
skipped (evaluation and other log records); a line with an unreadable time or number rejects the file naming
its line and field, and a log from which no parameter count or no token count can be had is rejected naming
what is missing.
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
# fields of checkpoint and configuration records (JSON lines, CSV): names the frameworks write
EVENT_NUMBERS = ("save_s", "tp", "pp", "cp", "dp")
EVENT_TEXTS = ("event", "checkpoint_path", "model")
CANONICAL = ("ts", *NUMBERS, *TEXTS, *EVENT_NUMBERS, *EVENT_TEXTS)
EVENTS = ("step", "checkpoint", "config")
PARALLEL = ("tp", "pp", "cp", "dp")
# configuration fields only the text shapes give (Megatron-LM's arguments, Hugging Face's batch line)
CONFIG_FIELDS = ("global_batch", "layers", "hidden")
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
    "save_s": ("save_s", "checkpoint_s", "checkpoint_save_s", "save_time_s", "checkpoint_time_s"),
    "tp": ("tp", "tensor_model_parallel_size", "tensor_parallel_size"),
    "pp": ("pp", "pipeline_model_parallel_size", "pipeline_parallel_size"),
    "cp": ("cp", "context_parallel_size"),
    "dp": ("dp", "data_parallel_size", "data_parallel_shard_degree"),
    "event": ("event",),
    "checkpoint_path": ("checkpoint_path", "checkpoint_dir", "save_path"),
    "model": ("model", "model_name", "model_name_or_path"),
}
THROUGHPUT = ("tokens", "tokens_total", "samples", "samples_total", "tokens_per_s", "step_s")

SCHEMA = pa.schema(
    [
        ("_line", pa.int64()),
        ("ts", pa.timestamp("us")),
        *[(n, pa.float64()) for n in NUMBERS],
        *[(n, pa.string()) for n in TEXTS],
        ("labels", pa.map_(pa.string(), pa.string())),
        ("event", pa.string()),
        ("save_s", pa.float64()),
        ("checkpoint_path", pa.string()),
        ("model", pa.string()),
        ("global_batch", pa.float64()),
        ("parallel", pa.string()),
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
    if fmt == "kv":
        return _text_records(text)
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
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


# the save and configuration lines of the trainers' text logs (tests/fixtures/telemetry/train_logs/README.md)
TS_ANYWHERE = re.compile(r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)")
TITAN_SAVED = re.compile(
    r"Finished saving the checkpoint(?: \(or staging if async is enabled\))?\s*in ([\d.]+) ?s"
)
MEGATRON_SAVING = re.compile(r"(?<!successfully )saving checkpoint at iteration\s+(\d+) to (\S+)")
MEGATRON_SAVED = re.compile(r"successfully saved checkpoint (?:from|at) iteration\s+(\d+) to (\S+)")
MEGATRON_TIMER = re.compile(r"^\s*save-checkpoint \.+:\s*\(?([\d.]+)(?:,\s*([\d.]+)\))?\s*$")
MEGATRON_ARG = re.compile(r"^\s*([a-z_]+) \.{3,} (\S.*?)\s*$")
HF_SAVING = re.compile(r"Saving model checkpoint to (\S+)")
HF_BATCH = re.compile(r"Total train batch size \(w\. parallel, distributed(?: & accumulation)?\) = ([\d,]+)")
# torchtitan's step line: `step: 640/644 = 99.3789%  loss:  6.2116  memory: ...  tps: 52,142  mfu: 3.09%`
# (tps: tokens per second per GPU)
TITAN_STEP = re.compile(r"\bstep:\s*(\d+)\S*.*?\bloss:\s*([-\d.]+).*?\btps:\s*([\d,]+)")
STEP_IN_PATH = re.compile(r"(?:checkpoint|step|iter|global_step)[-_]?0*(\d+)(?:/|$)")
# Megatron-LM's argument names -> the configuration fields they give
MEGATRON_CONFIG = {
    "global_batch_size": "global_batch",
    "seq_length": "seq_len",
    "tensor_model_parallel_size": "tp",
    "pipeline_model_parallel_size": "pp",
    "context_parallel_size": "cp",
    "data_parallel_size": "dp",
    "num_layers": "layers",
    "hidden_size": "hidden",
}


def _text_records(text: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) per step, checkpoint or configuration line of a text log (see _key_values for the
    step lines). A checkpoint or configuration line without a time takes the nearest timed line's."""
    out: list[tuple[int, dict[str, Any]]] = []
    config: dict[str, Any] | None = None  # Megatron's argument block, one record
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        arg = MEGATRON_ARG.match(raw)
        if arg:
            if arg.group(1) in MEGATRON_CONFIG:
                if config is None:
                    config = {"_event": "config"}
                    out.append((number, config))
                config[MEGATRON_CONFIG[arg.group(1)]] = arg.group(2)
            continue
        config = None  # the argument block ended: a later block is another run's
        found = TS_ANYWHERE.search(line)
        stamp = {"ts": found.group(1).replace(",", ".")} if found else {}
        timer = MEGATRON_TIMER.match(raw)
        if timer:  # the slowest rank's milliseconds (max of "(min, max)"), for the save just logged
            seconds = float(timer.group(2) or timer.group(1)) / 1000
            last = next((r for _, r in reversed(out) if r.get("_event") == "checkpoint"), None)
            if last is not None and "save_s" not in last:
                last["save_s"] = seconds
            else:
                out.append((number, {"_event": "checkpoint", "save_s": seconds, **stamp}))
            continue
        if m := TITAN_SAVED.search(line):
            out.append((number, {"_event": "checkpoint", "save_s": m.group(1), **stamp}))
            continue
        if m := MEGATRON_SAVING.search(line):
            out.append(
                (number, {"_event": "checkpoint", "step": m.group(1), "checkpoint_path": m.group(2), **stamp})
            )
            continue
        if MEGATRON_SAVED.search(line):
            continue  # the end of the save just logged; its duration comes from the timer line
        if m := HF_SAVING.search(line):
            step = STEP_IN_PATH.search(m.group(1))
            record = {"_event": "checkpoint", "checkpoint_path": m.group(1), **stamp}
            out.append((number, {**record, **({"step": step.group(1)} if step else {})}))
            continue
        if m := HF_BATCH.search(line):
            out.append((number, {"_event": "config", "global_batch": m.group(1), **stamp}))
            continue
        if (m := TITAN_STEP.search(line)) and found:
            out.append(
                (number, {"step": m.group(1), "loss": m.group(2), "tokens_per_s": m.group(3), **stamp})
            )
            continue
        record = _key_values(line)
        if record:
            out.append((number, record))
    _borrow_times(out)
    return out


def _borrow_times(records: list[tuple[int, dict[str, Any]]]) -> None:
    """A checkpoint or configuration record without a time takes the previous timed record's, else the next's."""
    last = None
    for _, r in records:
        if "ts" in r:
            last = r["ts"]
        elif r.get("_event") and last is not None:
            r["ts"] = last
    following = None
    for _, r in reversed(records):
        if "ts" in r:
            following = r["ts"]
        elif r.get("_event") and following is not None:
            r["ts"] = following


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
        if not any(p["event"] == "step" for p in parsed):
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
        event = TrainLogReader._event(record, where, present, opts)
        if event is None:
            return None  # an evaluation or other record, not a training step, save or configuration
        row: dict[str, Any] = {
            "_line": number,
            **TrainLogReader._event_fields(event, record, where, uri, number),
        }
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
        used = set(where.values()) | {k for k in record if k.startswith("_")} | set(CONFIG_FIELDS)
        row["labels"] = [
            (k.lower().strip(), str(v)) for k, v in record.items() if k not in used and v not in (None, "")
        ]
        return row

    @staticmethod
    def _event(
        record: dict[str, Any], where: dict[str, str], present: set[str], opts: TrainLogOptions
    ) -> str | None:
        """step | checkpoint | config for a record the log's own shape names, else what its fields say;
        None for a record that is none of them."""
        if record.get("_event"):
            return str(record["_event"])
        named = str(record.get(where["event"]) or "").strip().lower() if "event" in where else ""
        if named in EVENTS:  # a log's own `event` field; other values are the log's, not ours
            return named
        if present & set(THROUGHPUT) or (opts.batch_size and "step" in present):
            return "step"
        if "save_s" in present:
            return "checkpoint"
        if present & {"model", *PARALLEL}:
            return "config"
        return None

    @staticmethod
    def _event_fields(
        event: str, record: dict[str, Any], where: dict[str, str], uri: str, number: int
    ) -> dict[str, Any]:
        """The save's duration and path, or the configuration (model, global batch, parallel layout)."""

        def value(canon: str) -> Any:
            key = where.get(canon, canon)
            return record.get(key) if record.get(key) not in (None, "") else None

        def number_of(canon: str) -> float | None:
            try:
                got = _number(value(canon))
            except ValueError:
                raise RejectedFile(uri, f"{canon} {value(canon)!r} is not a number", line=number) from None
            if got is not None and got < 0:
                raise RejectedFile(uri, f"{canon} {value(canon)!r} is negative", line=number)
            return got

        out: dict[str, Any] = {"event": event, "save_s": None, "checkpoint_path": None, "model": None}
        out.update({"global_batch": None, "parallel": None})
        if event == "checkpoint":
            out["save_s"] = number_of("save_s")
            out["checkpoint_path"] = (
                str(value("checkpoint_path")).strip() if value("checkpoint_path") else None
            )
        elif event == "config":
            sizes = {p: number_of(p) for p in PARALLEL}
            out["parallel"] = ",".join(f"{p}={v:g}" for p, v in sizes.items() if v is not None) or None
            out["global_batch"] = number_of("global_batch")
            model = value("model")
            layers, hidden = number_of("layers"), number_of("hidden")
            if model is None and layers is not None and hidden is not None:
                model = f"layers={layers:g},hidden={hidden:g}"  # Megatron-LM names no model: its shape
            out["model"] = str(model).strip() if model is not None else None
        return out

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
