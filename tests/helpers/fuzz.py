"""The property-based ingest tests' parts: one small valid export per format, the mutations applied to it,
and a workspace that runs the real ingest on a copy of a warehouse that already holds other sources' rows.

Every path is fixed for the life of a workspace (the ledger keys files by absolute uri), so an example's
warehouse is a byte copy of one template and its outcome can be compared with the oracle's: the same
workspace's ingest of the unmutated export.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import Config, load_config
from pipelines.ingest import IngestReport, ingest
from pipelines.sources.registry import source_kind
from pipelines.warehouse import connect
from tests.helpers.billing_exports import csv_bytes, hours, parquet_file
from tests.helpers.empty_warehouse import open_prepared
from tests.helpers.paths import FIXTURES, H200

# -- the formats ----------------------------------------------------------------------------------------

NOV = datetime(2026, 11, 2)


@dataclass(frozen=True)
class Format:
    """One export format: its kind and options, the file's name and bytes, and how its text is laid out.

    `layout` says which structural mutations apply: "csv" (a header line then rows, split by `delimiter`;
    columns are matched by name, so a consistent reordering must load identically), "lines" (one record
    per line, no reorderable columns), "json" (one document), "ndjson" (one JSON object per line) or
    "binary" (Parquet, gzip: only byte-level mutations and a rewrite with its columns reordered).
    """

    name: str
    kind: str
    file: str
    data: Callable[[], bytes]
    layout: str
    options: str = "{}"
    delimiter: str = ","
    header_lines: int = 1  # lines before the first record (a header, dmon's unit line)
    billing: bool = False
    # a whole-file gzip of a text layout: the mutations apply to the text, then it is compressed again
    gz: bool = False

    def text_layout(self) -> bool:
        return self.layout in ("csv", "lines", "json", "ndjson")


def _read(path: Path) -> Callable[[], bytes]:
    return lambda: path.read_bytes()


def _head(path: Path, lines: int) -> Callable[[], bytes]:
    return lambda: b"".join(path.read_bytes().splitlines(keepends=True)[:lines])


FOCUS_SPEC = FIXTURES / "billing" / "focus-spec"
FOCUS_SMALL = FOCUS_SPEC / "commitment_discount_usage_scenario_3.csv"


def _focus_parquet() -> bytes:
    """The FOCUS sample as Parquet with the column types DuckDB infers (timestamps, decimals)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "export.parquet"
        con = duckdb.connect()
        try:
            con.execute(
                f"copy (select * from read_csv('{FOCUS_SMALL}', header = true, nullstr = 'null')) to '{path}' (format parquet)"
            )
        finally:
            con.close()
        return path.read_bytes()


def _cur2_rows() -> list[dict[str, str]]:
    return hours("i-a", NOV, 3, "2.50", tags={"team": "nlp"}) + hours("i-b", NOV, 2, "1.125")


def _cur2_csv() -> bytes:
    return csv_bytes(_cur2_rows(), gz=False)


def _cur2_parquet() -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "part.parquet"
        parquet_file(_cur2_rows(), path)
        return path.read_bytes()


def _gcp_ndjson() -> bytes:
    """Three lines of a BigQuery JSON export (nested records, label arrays, credits)."""
    lines = []
    for hour, cost, credits in ((0, 12.5, [-2.25]), (1, 8.0, []), (2, 3.75, [-0.5, -0.25])):
        lines.append(
            {
                "billing_account_id": "01A2B3-C4D5E6-F7A8B9",
                "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
                "sku": {"id": "A1B2-C3D4-E5F6", "description": "Nvidia Tesla A100 GPU running in Americas"},
                "usage_start_time": f"2024-11-02 {hour:02d}:00:00+00:00",
                "usage_end_time": f"2024-11-02 {hour + 1:02d}:00:00+00:00",
                "project": {"id": "ml-prod", "name": "ML Prod", "labels": [{"key": "team", "value": "nlp"}]},
                "labels": [{"key": "job_id", "value": f"run-{hour}"}],
                "system_labels": [],
                "location": {"location": "us-central1", "region": "us-central1", "zone": "us-central1-a"},
                "resource": {"name": "trainer-1", "global_name": "//compute.googleapis.com/instances/123"},
                "export_time": "2024-11-02 05:00:00+00:00",
                "cost": cost,
                "currency": "USD",
                "usage": {
                    "amount": 3600,
                    "unit": "seconds",
                    "amount_in_pricing_units": 1,
                    "pricing_unit": "hour",
                },
                "credits": [
                    {"name": "SUD", "amount": a, "type": "SUSTAINED_USAGE_DISCOUNT"} for a in credits
                ],
                "invoice": {"month": "202411"},
                "cost_type": "regular",
            }
        )
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


LONG_OPTIONS = (
    "{columns: {ts: time, host: node, gpu_uuid: uuid, gpu_index: gpu, metric: name, value: val}, "
    "metrics: {gpu_mem_bytes: {column: mem_total_mib, scale: 9.5367431640625e-07}}}"
)
PHASES_OPTIONS = (
    "{columns: {started_at: start_ts, ended_at: end_ts, state: exit_status}, host: h200-node, gpus: 1}"
)

FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("focus_csv", "focus", "export.csv", _read(FOCUS_SMALL), "csv", billing=True),
        Format(
            "focus_csv_gz", "focus", "export.csv.gz", _read(FOCUS_SMALL), "csv", billing=True, gz=True
        ),
        Format("focus_parquet", "focus", "export.parquet", _focus_parquet, "binary", billing=True),
        Format("aws_cur2_csv", "aws_cur2", "cur2.csv", _cur2_csv, "csv", billing=True),
        Format("aws_cur2_parquet", "aws_cur2", "cur2.parquet", _cur2_parquet, "binary", billing=True),
        Format(
            "aws_cur_csv",
            "aws_cur",
            "cur.csv",
            _read(FIXTURES / "billing" / "aws" / "2023-06-01.csv"),
            "csv",
            billing=True,
        ),
        Format(
            "azure_csv",
            "azure",
            "azure.csv",
            _read(FIXTURES / "billing" / "azure" / "azure_version_2.csv"),
            "csv",
            billing=True,
        ),
        Format(
            "gcp_csv", "gcp", "gcp.csv", _read(FIXTURES / "billing" / "gcp" / "2022-08-01_5.csv"), "csv", billing=True
        ),
        Format("gcp_ndjson", "gcp", "gcp.ndjson", _gcp_ndjson, "ndjson", billing=True),
        Format("nvidia_smi", "nvidia_smi", "smi.csv", _head(H200 / "nvidia_smi_query_gpu.csv", 13), "csv", delimiter=", "),
        Format("nvidia_smi_gz", "nvidia_smi", "smi.csv.gz", _head(H200 / "nvidia_smi_query_gpu.csv", 13), "csv", delimiter=", ", gz=True),
        Format("nvidia_smi_dmon", "nvidia_smi_dmon", "dmon.txt", _head(H200 / "nvidia_smi_dmon.txt", 12), "lines", header_lines=2),
        Format("dcgm", "dcgm", "node.prom", _read(FIXTURES / "telemetry" / "dcgm" / "gpu-node-d_v1-names.txt"), "lines"),
        Format(
            "prometheus_json",
            "prometheus_json",
            "query.json",
            _read(FIXTURES / "telemetry" / "prometheus" / "query_range_2026-11-30T0142.json"),
            "json",
        ),
        Format(
            "prometheus_json_gz",
            "prometheus_json",
            "query.json.gz",
            _read(FIXTURES / "telemetry" / "prometheus" / "query_range_2026-11-30T0142.json"),
            "json",
            gz=True,
        ),
        Format(
            "metrics_csv",
            "metrics_csv",
            "metrics.csv",
            _read(FIXTURES / "telemetry" / "metrics_csv" / "vm-export_2026-11-30.csv"),
            "csv",
            options=LONG_OPTIONS,
        ),
        Format("slurm_sacct", "slurm_sacct", "sacct.txt", _read(FIXTURES / "jobs" / "sacct_cluster_a.txt"), "csv", delimiter="|"),
        Format("k8s_pods", "k8s_pods", "pods.json", _read(FIXTURES / "jobs" / "k8s_pods.json"), "json"),
        Format("k8s_pods_gz", "k8s_pods", "pods.json.gz", _read(FIXTURES / "jobs" / "k8s_pods.json"), "json", gz=True),
        Format("jobs_csv", "jobs_csv", "phases.csv", _read(H200 / "phases.csv"), "csv", options=PHASES_OPTIONS),
        Format(
            "hosts_csv",
            "hosts_csv",
            "hosts.csv",
            _read(FIXTURES / "resources" / "cmdb_hosts.csv"),
            "csv",
            options="{columns: {instance_id: aws_id}}",
        ),
    )
}  # fmt: skip
BILLING_FORMATS = tuple(n for n, f in FORMATS.items() if f.billing)
OTHER_FORMATS = tuple(n for n, f in FORMATS.items() if not f.billing)


def encode(fmt: Format, text_bytes: bytes) -> bytes:
    """The file's bytes from its (mutated) text: gzip-compressed again for a gzipped format."""
    return gzip.compress(text_bytes, mtime=0) if fmt.gz else text_bytes


# -- mutations ------------------------------------------------------------------------------------------


def split_csv(fmt: Format, text: str) -> tuple[list[str], list[list[str]], list[str]]:
    """(lines before the header, header fields, record fields) of a delimited text."""
    lines = text.splitlines()
    pre, header_line, body = (
        lines[: fmt.header_lines - 1],
        lines[fmt.header_lines - 1],
        lines[fmt.header_lines :],
    )
    delim = fmt.delimiter
    if len(delim) == 1:
        rows = list(csv.reader(io.StringIO("\n".join([header_line, *body])), delimiter=delim))
        return pre, rows[0], rows[1:]
    return pre, header_line.split(delim), [line.split(delim) for line in body]


def join_csv(fmt: Format, pre: list[str], header: list[str], rows: list[list[str]]) -> str:
    delim = fmt.delimiter
    if len(delim) == 1:
        buf = io.StringIO()
        # sacct -P never quotes; the CSV exports quote only what needs it
        quoting = csv.QUOTE_NONE if delim == "|" else csv.QUOTE_MINIMAL
        w = csv.writer(buf, delimiter=delim, lineterminator="\n", quoting=quoting, escapechar=None)
        w.writerow(header)
        w.writerows(rows)
        body = buf.getvalue()
    else:
        body = "".join(delim.join(r) + "\n" for r in [header, *rows])
    return "".join(p + "\n" for p in pre) + body


def shuffle_columns(fmt: Format, text: str, order: list[int]) -> str:
    """The same table with its columns in `order` (header and every row alike)."""
    pre, header, rows = split_csv(fmt, text)
    return join_csv(fmt, pre, [header[i] for i in order], [[r[i] for i in order] for r in rows])


def shuffle_json_keys(value: Any, seed: int) -> Any:
    """The same JSON value with every object's keys in another (seeded) order."""
    import random

    rnd = random.Random(seed)

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            items = list(v.items())
            rnd.shuffle(items)
            return {k: walk(x) for k, x in items}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value)


def parquet_columns_reordered(data: bytes, order: list[int]) -> bytes:
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data))
    out = io.BytesIO()
    pq.write_table(table.select([table.column_names[i] for i in order]), out)
    return out.getvalue()


def parquet_width(data: bytes) -> int:
    import pyarrow.parquet as pq

    return len(pq.read_schema(io.BytesIO(data)).names)


def duplicate_lines(text: str, first_record: int, picks: list[int]) -> tuple[str, int]:
    """The text with the records at `picks` (indices among the records) written twice, each right after
    itself; returns the text and how many lines were added."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    records = len(lines) - first_record
    chosen = sorted({p % records for p in picks}) if records > 0 else []
    out = lines[:first_record]
    for i, line in enumerate(lines[first_record:]):
        out.append(line)
        if i in chosen:
            out.append(line)
    return "".join(out), len(chosen)


# -- the workspace --------------------------------------------------------------------------------------

# sources already loaded in every example's warehouse: a rejected file must leave their rows as they were
BACKGROUND = """
  - {name: bg-billing, kind: focus, uri: BG/billing/}
  - {name: bg-gpus, kind: dcgm, uri: BG/dcgm/}
  - {name: bg-jobs, kind: jobs_csv, uri: BG/jobs/}
  - {name: bg-hosts, kind: hosts_csv, uri: BG/hosts/}
"""
BG_JOBS = (
    "job_id,user,team,state,started_at,ended_at,hosts,gpus,gpu_indices,tags\n"
    "bg-1,ann,nlp,COMPLETED,2026-11-30 01:00:00,2026-11-30 02:00:00,bg-host-1,8,,\n"
)
BG_HOSTS = "host,instance_id,instance_type,region_id\nbg-host-1,i-0bg0000000000001,p5.48xlarge,us-east-1\n"

# ledger columns that depend on when and from which bytes a file was read, not on what landed (and
# `x_tag_set`, a billing tag set's id, is compared through the tags it stands for)
VOLATILE = {"first_seen_at", "checked_at", "loaded_at", "modified_at", "size_bytes", "checksum", "etag"}


@dataclass
class Outcome:
    report: IngestReport
    tables: dict[str, list[tuple[Any, ...]]]  # every table's rows (sorted), ledger without VOLATILE columns
    sums: dict[str, dict[str, Any]]  # every table's row count and numeric column sums
    fz: list[dict[str, Any]] = field(default_factory=list)  # ledger rows of the fuzzed source
    landed: int = 0  # rows of the fuzzed source's files in its target table
    landed_billed: Decimal = Decimal(0)  # ... and their billed cost (billing)


class Workspace:
    """Fixed folders for the background sources and the fuzzed files, one template warehouse holding the
    background's rows, and `run()`: copy the template, write the files, ingest, and snapshot."""

    def __init__(self, root: Path) -> None:
        self.root = root
        bg = root / "bg"
        for sub in ("billing", "dcgm", "jobs", "hosts"):
            (bg / sub).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FOCUS_SPEC / "commitment_discount_usage_scenario_1.csv", bg / "billing" / "bg.csv")
        shutil.copyfile(
            FIXTURES / "telemetry" / "dcgm" / "promtool-dump_gpu-node-c.txt", bg / "dcgm" / "c.txt"
        )
        (bg / "jobs" / "bg.csv").write_text(BG_JOBS, encoding="utf-8")
        (bg / "hosts" / "bg.csv").write_text(BG_HOSTS, encoding="utf-8")
        self.template = root / "template.duckdb"
        self._write_config(None)
        config = load_config(root / "wastewatch.yaml")
        con = connect(config.warehouse_path)
        try:
            report = ingest(con, config)
            assert [o.status for o in report.outcomes] == ["loaded"] * 4, report.summary()
            con.execute("checkpoint")
        finally:
            con.close()
        shutil.copyfile(config.warehouse_path, self.template)
        self.oracles: dict[str, Outcome] = {}
        self._configs: dict[str, Config] = {}

    def fz_dir(self, fmt: Format) -> Path:
        return self.root / "fz" / fmt.name

    def _write_config(self, fmt: Format | None) -> None:
        body = "warehouse: warehouse.duckdb\nsources:" + BACKGROUND.replace("BG/", f"{self.root / 'bg'}/")
        if fmt is not None:
            body += (
                f"  - {{name: fz, kind: {fmt.kind}, uri: '{self.fz_dir(fmt)}/', options: {fmt.options}}}\n"
            )
        (self.root / "wastewatch.yaml").write_text(body, encoding="utf-8")
        self._body = body

    def _config(self) -> Config:
        """The config as written last, loaded once per text (each format's is the same at every example)."""
        if self._body not in self._configs:
            self._configs[self._body] = load_config(self.root / "wastewatch.yaml")
        return self._configs[self._body]

    def reset(self, fmt: Format) -> Path:
        """A fresh copy of the template, an empty folder for the format's files; returns the folder."""
        folder = self.fz_dir(fmt)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        warehouse = self.root / "warehouse.duckdb"
        for leftover in (warehouse, warehouse.with_suffix(".duckdb.wal")):
            leftover.unlink(missing_ok=True)
        shutil.copyfile(self.template, warehouse)
        self._write_config(fmt)
        return folder

    def ingest(
        self, target: str | None = None, tables: Callable[[IngestReport], bool] | None = None
    ) -> Outcome:
        """Run the real ingest over every source (the background's files are unchanged) and snapshot; with
        `target`, also count what the fuzzed source's files landed there. `tables`, given the ingest's
        report, says whether the outcome needs every table's rows (the default) or only the fuzzed source's
        ledger rows and what landed (a load whose expectation compares no table: the snapshot is skipped)."""
        config = self._config()
        # a copy of the template `connect` made (reset): opened as `connect` leaves it, without its schema
        # check and catalogue reload (tests/helpers/empty_warehouse.py)
        con = open_prepared(config.warehouse_path)
        try:
            report = ingest(con, config)
            out = snapshot(con, report, tables is None or tables(report))
            if target:
                billed = "sum(billed_cost)" if target == "billing_line_items" else "0"
                got = con.execute(
                    f"select count(*), {billed} from {target} "  # noqa: S608 - our constants
                    "where x_file_id in (select file_id from ingest_files where source = 'fz')"
                ).fetchone()
                out.landed, out.landed_billed = (got[0], money(got[1])) if got else (0, Decimal(0))
            return out
        finally:
            # a throwaway copy (the next example's reset replaces it): what it wrote stays in its WAL,
            # which a second open in the same example replays, rather than being checkpointed into it
            con.execute("pragma disable_checkpoint_on_shutdown")
            con.close()

    def run(
        self, fmt: Format, files: dict[str, bytes], tables: Callable[[IngestReport], bool] | None = None
    ) -> Outcome:
        folder = self.reset(fmt)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        return self.ingest(source_kind(fmt.kind).target, tables)

    def oracle(self, fmt: Format) -> Outcome:
        """The format's unmutated export, loaded: every other outcome is compared with it."""
        if fmt.name not in self.oracles:
            out = self.run(fmt, {fmt.file: encode(fmt, plain(fmt))})
            assert [o.status for o in out.report.outcomes if o.source == "fz"] == ["loaded"], (
                out.report.summary()
            )
            self.oracles[fmt.name] = out
        return self.oracles[fmt.name]

    def before(self) -> Outcome:
        """The template as it is before any fuzzed file: what a rejected file must leave unchanged."""
        if "" not in self.oracles:
            con = duckdb.connect(str(self.template), read_only=True)
            try:
                self.oracles[""] = snapshot(con, IngestReport())
            finally:
                con.close()
        return self.oracles[""]


def _value(v: Any) -> Any:
    """A value comparable across runs: NaN equals NaN, maps and lists compare by content."""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, dict):
        return tuple(sorted((str(k), _value(x)) for k, x in v.items()))
    if isinstance(v, list | tuple):
        return tuple(_value(x) for x in v)
    if isinstance(v, str) and v.startswith("{") and v.endswith("}"):
        # JSON objects kept as text (a file's extra columns) hold their keys in the file's column order
        try:
            return ("json", _value(json.loads(v)))
        except ValueError:
            return v
    return v


NUMERIC = (
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UBIGINT",
    "UINTEGER",
    "FLOAT",
    "DOUBLE",
    "DECIMAL",
)


def snapshot(con: duckdb.DuckDBPyConnection, report: IngestReport, tables: bool = True) -> Outcome:
    """Every base table's rows and, per table, the row count and the sum of each numeric column (without
    `tables`: none of them), and the fuzzed source's ledger rows."""
    fz = [
        dict(zip(("uri", "status", "rows", "error", "billed_cost_sum"), r, strict=True))
        for r in con.execute(
            "select uri, status, rows, error, billed_cost_sum from ingest_files where source = 'fz' order by uri"
        ).fetchall()
    ]
    if not tables:
        return Outcome(report, {}, {}, fz)
    columns: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind in con.execute(
        "select c.table_name, c.column_name, c.data_type from duckdb_columns() c join duckdb_tables() t "
        "using (database_name, schema_name, table_name) where c.database_name = current_database() "
        "and c.schema_name = 'main' order by c.table_name, c.column_index"
    ).fetchall():
        columns.setdefault(table, []).append((column, kind))
    content: dict[str, list[tuple[Any, ...]]] = {}
    sums: dict[str, dict[str, Any]] = {}
    for table, cols in columns.items():
        kept = [c for c, _ in cols if not (table == "ingest_files" and c in VOLATILE) and c != "x_tag_set"]
        select = ", ".join(f'"{c}"' for c in kept)
        fetched = con.execute(f'select {select} from "{table}"').fetchall()  # noqa: S608 - catalog names
        # (column, value) pairs without NULLs: a billing file that adds a column to `billing_lines` leaves
        # the other rows as they were, with NULL in it
        content[table] = sorted(
            (tuple((c, _value(v)) for c, v in zip(kept, r, strict=True) if v is not None) for r in fetched),
            key=repr,
        )
        # sums of the numeric columns, in Python from the rows already fetched
        figures: dict[str, Any] = {"rows": len(fetched)}
        for i, (c, t) in enumerate((c, t) for c, t in cols if c in kept):
            if t.split("(")[0] in NUMERIC:
                values = [r[i] for r in fetched if r[i] is not None]
                figures[c] = (
                    _value(sum(sorted(values))) if values else None
                )  # sorted: the same sum in any row order
        sums[table] = figures
    # a line's tags through its tag set (the set's id hashes the tags' text as the file wrote it, so the
    # same tags written with their keys in another order get another id)
    content["billing_line_items (tags)"] = sorted(
        (
            tuple(_value(v) for v in r)
            for r in con.execute(
                "select x_file_id, x_source_row, tags, team, project, owner, job_id, x_host from billing_line_items"
            ).fetchall()
        ),
        key=repr,
    )
    return Outcome(report, content, sums, fz)


def without_fz_ledger(tables: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    """Every table but the ledger's rows of the fuzzed source (a rejection is recorded there)."""
    return {
        t: [r for r in rows if ("source", "fz") not in r] if t == "ingest_files" else rows
        for t, rows in tables.items()
    }


def money(v: Any) -> Decimal:
    return Decimal(str(v or 0))


# -- applying a mutation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutated:
    """The files one mutation produced and what a correct ingest of them must do.

    `expect`: "same" (load exactly as the oracle), "same_or_reject" (that, or a precise rejection),
    "fewer" (a precise rejection, or a load of at most the oracle's rows), "any" (a precise rejection or a
    consistent load), "extra" (duplicated records: for billing a rejection naming the duplicate line
    items or a load of `added` more rows; else a rejection or at most `added` more rows).
    """

    files: dict[str, bytes]
    expect: str
    added: int = 0


def plain(fmt: Format) -> bytes:
    """The export's uncompressed text (or, for a binary layout, its bytes): made once per process (the
    Parquet ones are written by DuckDB and pyarrow), the same bytes for every mutation."""
    if fmt.name not in _PLAIN:
        _PLAIN[fmt.name] = fmt.data()
    return _PLAIN[fmt.name]


_PLAIN: dict[str, bytes] = {}


def truncated(fmt: Format, keep: int) -> Mutated:
    data = encode(fmt, plain(fmt))
    return Mutated({fmt.file: data[: max(0, min(keep, len(data) - 1))]}, "fewer")


def flipped(fmt: Format, flips: list[tuple[int, int]]) -> Mutated:
    data = bytearray(encode(fmt, plain(fmt)))
    for pos, mask in flips:
        data[pos % len(data)] ^= mask or 1
    return Mutated({fmt.file: bytes(data)}, "any")


def columns_shuffled(fmt: Format, order: list[int], seed: int) -> Mutated:
    data = plain(fmt)
    if fmt.layout == "binary":
        return Mutated({fmt.file: parquet_columns_reordered(data, order)}, "same")
    text = data.decode("utf-8")
    if fmt.layout == "csv":
        out = shuffle_columns(fmt, text, order)
    elif fmt.layout == "json":
        out = json.dumps(shuffle_json_keys(json.loads(text), seed), indent=1) + "\n"
    else:  # ndjson
        out = "".join(
            json.dumps(shuffle_json_keys(json.loads(line), seed)) + "\n" for line in text.splitlines()
        )
    return Mutated({fmt.file: encode(fmt, out.encode("utf-8"))}, "same")


def width(fmt: Format) -> int:
    """How many columns a column shuffle permutes (0: the layout has no columns to reorder)."""
    if fmt.layout == "binary":
        return parquet_width(plain(fmt))
    if fmt.layout == "csv":
        return len(split_csv(fmt, plain(fmt).decode("utf-8"))[1])
    return 1 if fmt.layout in ("json", "ndjson") else 0


def reencoded(fmt: Format, encoding: str) -> Mutated:
    text = plain(fmt).decode("utf-8").removeprefix("\ufeff")
    if encoding == "utf-8-sig":
        return Mutated({fmt.file: encode(fmt, text.encode("utf-8-sig"))}, "same")
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError:
        data = text.encode(encoding, errors="replace")
    expect = "same" if data == text.encode("utf-8") else "same_or_reject"
    return Mutated({fmt.file: encode(fmt, data)}, expect)


def ascii_only(fmt: Format) -> bool:
    """Latin-1 writes an ASCII-only export byte for byte as UTF-8 does: nothing to test."""
    return plain(fmt).decode("utf-8").removeprefix("\ufeff").isascii()


def lines_duplicated(fmt: Format, picks: list[int]) -> Mutated:
    text = plain(fmt).decode("utf-8")
    first = fmt.header_lines if fmt.layout in ("csv", "lines") else 0
    out, added = duplicate_lines(text, first, picks)
    return Mutated({fmt.file: encode(fmt, out.encode("utf-8"))}, "extra", added)


def file_duplicated(fmt: Format) -> Mutated:
    """The same bytes under a second name, in the same folder. Of copies in one run the first by name
    loads, so the copy's name sorts after the original's: the loaded file is the oracle's."""
    data = encode(fmt, plain(fmt))
    return Mutated({fmt.file: data, f"zz-copy-{fmt.file}": data}, "same")


# -- the oracle -----------------------------------------------------------------------------------------

# texts of a library or of Python, never a rejection's explanation
RAW_TEXTS = (
    "Traceback", "sniff", "Conversion Error", "Invalid Input Error", "Binder Error", "Parser Error",
    "INTERNAL", "object has no attribute", "NoneType", "KeyError", "IndexError", "index out of range",
    "codec can't decode", "unsupported operand",
)  # fmt: skip
ENCODING_WORDS = ("UTF-8", "UTF-16", "encod")


def assert_precise(error: str | None, uri: str, encoding: bool = False) -> None:
    """A rejection names the file first, on one line, in its own words, with a reason after a CSV error's
    line number; a file in another encoding is rejected as such (`encoding`)."""
    assert error, f"{uri}: rejected without an error"
    assert error.startswith(uri), error
    assert "\n" not in error, error
    assert not any(raw in error for raw in RAW_TEXTS), error
    problem = error[len(uri) :].lstrip(":0123456789 ")
    assert problem and problem not in ("cannot read", "cannot load"), error
    if "CSV Error on Line" in error:
        assert re.search(r"CSV Error on Line: \d+: \S", error), error
    if encoding:
        assert any(w in error for w in ENCODING_WORDS), error


def check(ws: Workspace, fmt: Format, m: Mutated, encoding: bool = False) -> Outcome:
    """Ingest the mutated files and assert what `m.expect` says (see Mutated), plus, always: no exception
    escapes, the background's files stay unchanged, a rejection is precise and leaves every table as it
    was, and a load lands the rows its ledger row counts."""
    oracle, before = ws.oracle(fmt), ws.before()

    def compares_tables(report: IngestReport) -> bool:
        """Whether the assertions below read every table: after a rejection of every file (nothing moved)
        and when the files must load as the oracle did; a load expected to differ checks what landed only."""
        fz = [o for o in report.outcomes if o.source == "fz"]
        if all(o.status != "loaded" for o in fz):
            return True
        return m.expect == "same" or (
            m.expect == "same_or_reject" and not any(o.status == "rejected" for o in fz)
        )

    out = ws.run(fmt, m.files, compares_tables)  # an exception here is the traceback a user would see
    summary = out.report.summary()
    assert {o.status for o in out.report.outcomes if o.source != "fz"} == {"unchanged"}, summary
    fz = [o for o in out.report.outcomes if o.source == "fz"]
    assert len(fz) == len(m.files), summary
    for o in fz:
        assert o.status in ("loaded", "rejected", "duplicate"), summary
        if o.status == "rejected":
            assert_precise(o.error, o.uri, encoding)
    if all(o.status != "loaded" for o in fz):
        # nothing of a rejected file landed, and nothing else moved
        assert without_fz_ledger(out.tables) == without_fz_ledger(before.tables), summary
        assert _landed_sums(out) == _landed_sums(before), summary
        assert out.landed == 0
    else:
        assert out.landed == sum(r["rows"] or 0 for r in out.fz if r["status"] == "loaded"), summary
        if fmt.billing:
            assert out.landed_billed == sum(
                (money(r["billed_cost_sum"]) for r in out.fz if r["status"] == "loaded"), Decimal(0)
            ), summary
    rejected = any(o.status == "rejected" for o in fz)
    if m.expect == "same" or (m.expect == "same_or_reject" and not rejected):
        assert not rejected, summary
        assert without_fz_ledger(out.tables) == without_fz_ledger(oracle.tables), summary
        assert _landed_sums(out) == _landed_sums(oracle), summary
        assert (out.landed, out.landed_billed) == (oracle.landed, oracle.landed_billed), summary
    elif m.expect == "fewer" and not rejected:
        assert out.landed <= oracle.landed, summary
    elif m.expect == "extra" and rejected:
        if fmt.billing:
            assert "duplicate line items" in (fz[0].error or ""), summary
    elif m.expect == "extra":
        if fmt.billing:  # a format without line item ids: every line is a charge
            assert out.landed == oracle.landed + m.added, summary
        else:  # telemetry and job readers may drop an exact repeat
            assert oracle.landed <= out.landed <= oracle.landed + m.added, summary
    return out


def _landed_sums(out: Outcome) -> dict[str, dict[str, Any]]:
    """Row counts and numeric sums of every table but the ledger (which records every file's outcome)."""
    return {t: v for t, v in out.sums.items() if t != "ingest_files"}
