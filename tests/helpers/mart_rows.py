"""A rule case's `given:` rows, expanded, completed and inserted into the marts of a real warehouse.

The row syntax and the defaults are documented in tests/rules/test_rule_cases.py (the YAML rule cases);
`load_given` is also how other tests fill the marts with a scenario (tests/rules/test_gpu_precedence.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import yaml

from pipelines.marts.registry import MARTS, SHARED_GPU_MARTS
from pipelines.transform.build import build_mart_with_rollup, finish_marts, prepare_marts
from pipelines.warehouse import rows, transaction

GENERATOR_KEYS = {"at", "from", "to", "gpus"}
GPU_TABLES = ("gpu_hours", "gpu_job_hours")  # tables whose rows take `gpus`
NO_GENERATORS = ("resources", "jobs_enriched")  # one row each, as written
OWN_GPUS_COLUMN = {"job_mfu": {"gpus"}}  # tables whose own `gpus` column is a value, not a generator

DEFAULTS: dict[str, dict[str, Any]] = {
    "resources": {
        "resource_type": None,
        "provider": "AWS",
        "account_id": "111122223333",
        "region_id": "us-east-1",
        "service_name": "Amazon Elastic Compute Cloud",
        "instance_type": "p5.48xlarge",
        "gpu_model": "H100",
        "gpu_count": 8,
        "gpu_memory_gib": 80.0,
        "gpus_reporting": None,
        "team": None,
        "project": None,
        "owner": None,
        "tags": None,
        "currency": "USD",
        "first_seen": None,
        "last_seen": None,
    },
    "cost_hourly": {
        "service_category": "Compute",
        "charge_category": "Usage",
        "allocation": "hourly",
        "line_items": 1,
    },
    "gpu_hours": {
        "samples": 60,
        "coverage": 1.0,
        "mem_used_mean_mib": 0.0,
        "mem_total_mib": 81559.0,
        "power_mean_w": 70.0,
        "power_limit_w": 700.0,
        "util_stddev": 0.0,
        "sm_active_mean": None,
        "tensor_active_mean": None,
        "job_id": None,
    },
    "gpu_job_hours": {
        "samples": 60,
        "coverage": 1.0,
        "mem_used_mean_mib": 0.0,
        "mem_total_mib": 81559.0,
        "power_mean_w": 70.0,
        "power_limit_w": 700.0,
        "util_stddev": 0.0,
        "mem_util_mean": None,
        "sm_active_mean": None,
        "tensor_active_mean": None,
        "job_id": None,
        "jobs_running": 0,
    },
    "jobs_enriched": {
        "scheduler": "slurm",
        "state": "COMPLETED",
    },
}
REQUIRED: dict[str, tuple[str, ...]] = {
    "resources": ("resource_id",),
    "cost_hourly": ("resource_id", "hour", "effective_cost"),
    "gpu_hours": ("resource_id", "hour", "util_mean"),
    "gpu_job_hours": ("resource_id", "hour", "util_mean"),
    "jobs_enriched": ("job_id",),
}
# columns of cost_hourly that follow the case's resource row when the cost row leaves them out
FROM_RESOURCE = {
    "billing_currency": "currency",
    "provider": "provider",
    "account_id": "account_id",
    "region_id": "region_id",
    "service_name": "service_name",
    "instance_type": "instance_type",
    "team": "team",
    "project": "project",
    "owner": "owner",
}


def load_case_file(path: Path) -> dict[str, Any]:
    """A rule case file (tests/fixtures/rules/<ID>.yml) parsed by libyaml's safe loader: the same values as
    `yaml.safe_load`, a ninth of its CPU (the 17 files: 0.11 s against 0.95 under load)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    doc = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 - a safe loader
    assert isinstance(doc, dict), f"{path.name}: expected a mapping at the top"
    return doc


def when(value: Any) -> datetime:
    if isinstance(value, datetime):
        out = value
    elif isinstance(value, date):
        out = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        out = datetime.fromisoformat(value)
    else:
        raise ValueError(f"not a time: {value!r}")
    if out.tzinfo is not None:
        raise ValueError(f"{value!r}: write naive UTC times (no offset)")
    return out


def _hours(row: dict[str, Any]) -> list[datetime]:
    if "at" in row:
        if "from" in row or "to" in row:
            raise ValueError(f"a row takes `at` or `from`/`to`, not both: {row}")
        hours = [when(row.pop("at"))]
    elif "from" in row or "to" in row:
        if "from" not in row or "to" not in row:
            raise ValueError(f"`from` needs `to` (exclusive) and vice versa: {row}")
        start, end = when(row.pop("from")), when(row.pop("to"))
        if end <= start:
            raise ValueError(f"empty hour range {start} .. {end}")
        hours = []
        while start < end:
            hours.append(start)
            start += timedelta(hours=1)
    else:
        hour = row.pop("hour", None)
        return [when(hour)] if hour is not None else []
    for h in hours:
        if h.minute or h.second or h.microsecond:
            raise ValueError(f"{h}: mart rows are hourly; use whole hours")
    return hours


def _seconds(a: Any, b: Any) -> float:
    return (when(b) - when(a)).total_seconds()


def expand(table: str, raw: dict[str, Any]) -> list[dict[str, Any]]:
    """One given row -> the mart rows it stands for (see the module docstring)."""
    row = dict(raw)
    if table in NO_GENERATORS or table not in DEFAULTS:
        generators = GENERATOR_KEYS - OWN_GPUS_COLUMN.get(table, set())
        if generators & set(row):
            raise ValueError(f"{table} rows take no {sorted(generators & set(row))}: {raw}")
        return [row]
    if table == "gpu_job_hours" and "slice_start" in row:
        start = when(row["slice_start"])
        row["slice_start"] = start
        row.setdefault("hour", start.replace(minute=0, second=0, microsecond=0))
        if "slice_end" in row:
            row["slice_end"] = when(row["slice_end"])
    hours = _hours(row)
    if not hours:
        raise ValueError(f"{table} row without `at`, `from`/`to` or `hour`: {raw}")
    if "slice_start" in row and len(hours) > 1:
        raise ValueError(f"a row with `slice_start` is one part of one hour: {raw}")
    gpus: list[int | None] = [None]
    if "gpus" in row:
        if table not in GPU_TABLES:
            raise ValueError(f"`gpus` belongs on {' / '.join(GPU_TABLES)} rows: {raw}")
        spec = row.pop("gpus")
        gpus = list(range(spec)) if isinstance(spec, int) else [int(i) for i in spec]
    out = []
    for hour in hours:
        for gpu in gpus:
            r = {**row, "hour": hour}
            if gpu is not None:
                r["gpu_index"] = gpu
            out.append(r)
    return out


def _complete_slice(out: dict[str, Any], jobs: dict[str, dict[str, Any]]) -> None:
    """gpu_job_hours: the slice bounds, the job's key and state, and the exact sums behind the means."""
    out.setdefault("slice_start", out["hour"])
    out.setdefault("slice_end", when(out["hour"]) + timedelta(hours=1))
    out.setdefault("slice_seconds", _seconds(out["slice_start"], out["slice_end"]))
    out.setdefault("observed_seconds", float(out["coverage"]) * out["slice_seconds"])
    job = jobs.get(str(out["job_id"]), {}) if out.get("job_id") is not None else {}
    if out.get("job_id") is not None:
        out.setdefault("job_key", job.get("job_key", f"slurm/{out['job_id']}"))
        out.setdefault("job_state", job.get("state", "COMPLETED"))
        out.setdefault("job_source", "scheduler")
    mean, n = out["util_mean"], int(out["samples"] or 0)
    if mean is not None:
        sd = float(out["util_stddev"] or 0)
        out.setdefault("util_samples", n)
        out.setdefault("util_sum", float(mean) * n)
        out.setdefault("util_sumsq", (sd * sd + float(mean) ** 2) * n)
        out.setdefault("idle_share", 1.0 if float(mean) <= 5 else 0.0)
    else:
        out.setdefault("util_samples", 0)


def complete(
    table: str,
    row: dict[str, Any],
    columns: list[str],
    file_defaults: dict[str, Any],
    resources: dict[str, dict[str, Any]],
    jobs: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Fill the columns a row leaves out: static defaults, the file's defaults, then derived values."""
    unknown = set(row) - set(columns)
    if unknown:
        raise ValueError(f"{table}: no column(s) {sorted(unknown)}; columns are {columns}")
    out = {**DEFAULTS.get(table, {}), **file_defaults, **row}
    missing = [c for c in REQUIRED.get(table, ()) if c not in out]
    if missing:
        raise ValueError(f"{table} row needs {missing}: {row}")
    res = resources.get(out.get("resource_id"), {})
    if table == "resources":
        out.setdefault("resource_name", out["resource_id"])
        out.setdefault("host", out["resource_name"])
    elif table == "cost_hourly":
        for col, res_col in FROM_RESOURCE.items():
            out.setdefault(col, res.get(res_col, DEFAULTS["resources"].get(res_col)))
        out.setdefault("billed_cost", out["effective_cost"])
        out.setdefault("list_cost", out["effective_cost"])
    elif table == "jobs_enriched":
        out.setdefault("job_key", f"{out['scheduler']}/{out['job_id']}")
        if out.get("started_at") is not None and out.get("ended_at") is not None:
            out.setdefault("runtime_s", _seconds(out["started_at"], out["ended_at"]))
        first = resources.get((out.get("resource_ids") or [None])[0], {})
        for col, res_col in (("provider", "provider"), ("account_id", "account_id"),
                             ("region_id", "region_id"), ("currency", "currency")):  # fmt: skip
            out.setdefault(col, first.get(res_col))
    elif table in GPU_TABLES:
        out.setdefault("host", res.get("host", out["resource_id"]))
        out.setdefault("gpu_index", 0)
        out.setdefault("gpu_id", f"{out['resource_id']}/gpu{out['gpu_index']}")
        out.setdefault("gpu_uuid", f"GPU-{out['resource_id']}-{out['gpu_index']}")
        model = res.get("gpu_model", DEFAULTS["resources"]["gpu_model"])
        out.setdefault("gpu_model", f"NVIDIA {model}" if model else None)
        out.setdefault("util_p95", out["util_mean"])
        out.setdefault("util_max", out["util_mean"])
        out.setdefault("mem_used_max_mib", out["mem_used_mean_mib"])
        out.setdefault("power_max_w", out["power_mean_w"])
        if table == "gpu_job_hours":
            _complete_slice(out, jobs or {})
    for col in columns:
        out.setdefault(col, None)
    return {c: out[c] for c in columns}


def _text(value: Any) -> str | None:
    """Values travel as text and DuckDB casts them to the column's type (exact for decimals)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def mart_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    return marts_columns(con, (table,))[table]


def marts_columns(
    con: duckdb.DuckDBPyConnection, tables: tuple[str, ...]
) -> dict[str, list[tuple[str, str]]]:
    """Each table's (column, type) in order, from one catalogue query for all of them."""
    out: dict[str, list[tuple[str, str]]] = {t: [] for t in tables}
    for r in rows(
        con,
        # duckdb_columns(): the same names and types as information_schema.columns, at half the cost
        "select table_name, column_name, data_type from duckdb_columns() "
        "where table_name in (select unnest($t)) and schema_name = 'main' "
        "and database_name = current_database() order by table_name, column_index",
        {"t": list(tables)},
    ):
        out[r["table_name"]].append((r["column_name"], r["data_type"]))
    return out


@dataclass(frozen=True)
class MartLayout:
    """What `load_given` reads of a warehouse before it inserts: each mart's (column, type) in order, and the
    marts that hold rows (the others need no `delete`)."""

    columns: dict[str, list[tuple[str, str]]]
    filled: frozenset[str]


def mart_layout(con: duckdb.DuckDBPyConnection) -> MartLayout:
    """The layout of the warehouse `con` is on: read once for every copy of one template (the rule cases)."""
    counts = con.execute(
        " union all ".join(f"select '{t}', count(*) from {t}" for t in MARTS)  # noqa: S608 - our constants
    ).fetchall()
    return MartLayout(marts_columns(con, MARTS), frozenset(t for t, n in counts if n))


def load_given(
    con: duckdb.DuckDBPyConnection,
    given: dict[str, Any],
    file_defaults: dict[str, Any],
    reads: Iterable[str] | None = None,
    layout: MartLayout | None = None,
) -> dict[str, int]:
    """Empty the marts and insert the case's rows; returns rows inserted per table.

    The shared marts the rows do not give are then built from them, as a run builds them from their
    inputs: every one, or with `reads` (the marts a rule reads and the marts those read,
    tests/helpers/marts.py's `marts_needed`) only those among them; the others stay empty. `layout`: the
    warehouse's, when the caller read it once for many copies of the same file (`mart_layout`)."""
    unknown = set(given) - set(MARTS)
    if unknown:
        raise ValueError(f"given: unknown table(s) {sorted(unknown)}; rules read the marts {MARTS}")
    unknown = set(file_defaults) - set(MARTS)
    if unknown:
        raise ValueError(f"defaults: unknown table(s) {sorted(unknown)}")
    resources = {r["resource_id"]: r for r in given.get("resources") or [] if "resource_id" in r}
    resources = {
        k: {**DEFAULTS["resources"], **file_defaults.get("resources", {}), **v} for k, v in resources.items()
    }
    for rid, r in resources.items():
        r.setdefault("resource_name", rid)
        r.setdefault("host", r["resource_name"])
    jobs = {}
    for j in given.get("jobs_enriched") or []:
        job = {**DEFAULTS["jobs_enriched"], **file_defaults.get("jobs_enriched", {}), **j}
        jobs[str(job["job_id"])] = {
            **job,
            "job_key": job.get("job_key", f"{job['scheduler']}/{job['job_id']}"),
        }
    counts = {}
    typed_by_table = layout.columns if layout else marts_columns(con, MARTS)
    with transaction(con):  # one commit for every table's rows, not one per statement
        for table in MARTS:
            typed = typed_by_table[table]
            columns = [c for c, _ in typed]
            full = [
                complete(table, r, columns, file_defaults.get(table, {}), resources, jobs)
                for raw in given.get(table) or []
                for r in expand(table, raw)
            ]
            if layout is None or table in layout.filled:
                con.execute(f"delete from {table}")
            counts[table] = len(full)
            if not full:
                continue
            frame = pl.DataFrame(
                {c: [_text(r[c]) for r in full] for c in columns}, schema={c: pl.String for c in columns}
            )
            casts = ", ".join(f'cast("{c}" as {t}) as "{c}"' for c, t in typed)
            con.register("_given", frame.to_arrow())
            try:
                con.execute(f"insert into {table} select {casts} from _given")
            finally:
                con.unregister("_given")
        # marts written by hand were built from nothing the fingerprints know: forget them, so a mart built
        # from them is built again (pipelines/transform/fingerprints.py)
        con.execute("delete from int_mart_inputs")
    read = set(SHARED_GPU_MARTS if reads is None else reads)
    wanted = [t for t in SHARED_GPU_MARTS if t in read and not given.get(t)]
    if wanted:
        # as a run's marts step builds them: the intermediate layer, the raw layer's fingerprints and the
        # roll-up once for all of them (pipelines/transform/build.py's MartRun)
        run = prepare_marts(con)
        for table in wanted:
            build_mart_with_rollup(con, table, prepared=run)
        if reads is None:
            finish_marts(con)  # their COMMENTs (a reader given `reads`, a rule, reads none)
    return counts
