"""Benchmark: storage inventories of 10 million objects ingested and the four storage rules evaluated, against
DuckDB's own bare read of the same inventory files.

    .venv/bin/python bench/storage.py [--runs 2000] [--files-per-run 1000] [--datasets 500] [--files-per-dataset 16000]
                                      [--memory-limit 2GB] [--dir bench/out/storage] [--keep] [--repeat 3]

Generates S3 Inventory reports (manifest.json + CSV.gz, URL-encoded keys, as S3 delivers them) for a checkpoint
bucket (runs x checkpoint files; 10 % of the runs failed, 5 % still running, 5 % unknown to the scheduler) and
three dataset buckets (datasets x files, with planted copies: 70 % re-uploaded byte for byte with the same
ETags, 30 % with another part size, so only ambiguous), then times in fresh processes, `--repeat` rounds of:
DuckDB reading the files into a table (all VARCHAR, and typed), then into a fresh warehouse `wastewatch`
ingestion (s3_inventory), the storage marts, and each storage rule. Prints times and ratios (taken round by
round) as median (min-max) over the rounds, and each phase's peak RSS (the phase process's VmHWM; the
highest round's). Not a test: nothing here asserts a time. The generated files are deleted afterwards
unless --keep.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _stats import Rounds, Spread, add_repeat, markdown, phase_result

COLUMNS = {
    "Bucket": "VARCHAR",
    "Key": "VARCHAR",
    "Size": "BIGINT",
    "LastModifiedDate": "TIMESTAMPTZ",
    "ETag": "VARCHAR",
    "StorageClass": "VARCHAR",
    "IsMultipartUploaded": "BOOLEAN",
}
SCHEMA = ", ".join(COLUMNS)
DATA_BUCKETS = ("bench-data-us", "bench-data-eu", "bench-scratch")

CHECKPOINT_ROWS = """
select
    'bench-ckpt' as b,
    'p' || (run % 20)::varchar || '/run-' || lpad(run::varchar, 5, '0') || '/checkpoints/step+'
        || lpad((step * 100)::varchar, 8, '0') || '/shard-' || shard::varchar || '.pt' as k,
    size as s,
    strftime(timestamp '2026-06-01' + to_hours(run * 2) + to_minutes(step * 7), '%Y-%m-%dT%H:%M:%S.000Z') as d,
    md5(i::varchar) || '-' || ceil(size / 8388608)::bigint::varchar as e,
    'STANDARD' as c,
    'true' as m
from (
    select i, i // $per_run as run, (i % $per_run) // 4 as step, i % 4 as shard,
        (536870912 + hash(i) % 2147483648)::bigint as size
    from range($lo, $hi) r(i)
)
"""
# dataset d (0 .. datasets-1): the first `copies` datasets are copies of originals `copies` .. 2*copies-1;
# copy j is exact (same ETags) unless j % 10 >= 7 (re-uploaded with 16 MiB parts: other ETags)
DATASET_ROWS = """
select
    $bucket as b,
    'datasets/ds-' || lpad(d::varchar, 4, '0') || '/part-' || lpad(f::varchar, 6, '0') || '.tar' as k,
    size as s,
    strftime(timestamp '2026-01-01' + to_days(d % 300), '%Y-%m-%dT%H:%M:%S.000Z') as d,
    case when d < $copies and d % 10 >= 7
        then md5('reup' || src::varchar || '/' || f::varchar) || '-' || ceil(size / 16777216)::bigint::varchar
        else md5(src::varchar || '/' || f::varchar) || '-' || ceil(size / 8388608)::bigint::varchar
    end as e,
    'STANDARD' as c,
    'true' as m
from (
    select d, f, src, (33554432 + hash(src, f) % 67108864)::bigint as size
    from (
        select i // $per_ds as d, i % $per_ds as f,
            case when i // $per_ds < $copies then i // $per_ds + $copies else i // $per_ds end as src
        from range($lo, $hi) r(i)
    )
    where d % 3 = $bucket_no
)
"""

PHASES = {
    "duckdb_varchar": """
import duckdb, json
files = json.load(open(f"{root}/files.json"))
con = duckdb.connect(f"{root}/reference.duckdb")
if MEMORY_LIMIT:
    con.execute(f"set memory_limit = '{MEMORY_LIMIT}'")
cols = {k: "VARCHAR" for k in COLUMNS}
con.execute("create or replace table t as select * from read_csv($f, header = false, columns = $c)", {"f": files, "c": cols})
n = con.execute("select count(*) from t").fetchall()[0][0]
con.close()
""",
    "duckdb_typed": """
import duckdb, json
files = json.load(open(f"{root}/files.json"))
con = duckdb.connect(f"{root}/reference.duckdb")
if MEMORY_LIMIT:
    con.execute(f"set memory_limit = '{MEMORY_LIMIT}'")
con.execute("create or replace table t as select * from read_csv($f, header = false, columns = $c)", {"f": files, "c": COLUMNS})
n = con.execute("select count(*) from t").fetchall()[0][0]
con.close()
""",
    "wastewatch_ingest": """
from pipelines.config import load_config
from pipelines.warehouse import open_warehouse
from pipelines.ingest import ingest
cfg = load_config(f"{root}/wastewatch.yaml")
with open_warehouse(cfg) as con:
    report = ingest(con, cfg)
    assert not report.rejected, report.summary()
    n = report.rows_into("storage_objects")
""",
    "jobs_setup": """
from pipelines.config import load_config
from pipelines.warehouse import open_warehouse
cfg = load_config(f"{root}/wastewatch.yaml")
with open_warehouse(cfg) as con:
    con.execute("delete from jobs")
    con.execute('''
        insert into jobs (job_id, scheduler, job_name, state, started_at, ended_at, source, x_source_file, x_file_id)
        select (100000 + run)::varchar, 'slurm', 'run-' || lpad(run::varchar, 5, '0'),
            case when run % 20 in (0, 1) then 'FAILED' when run % 20 = 2 then 'RUNNING' else 'COMPLETED' end,
            timestamp '2026-06-01' + to_hours(run * 2),
            case when run % 20 <> 2 then timestamp '2026-06-01' + to_hours(run * 2) + to_days(2) end,
            'bench', 'bench', 'bench'
        from range($runs) r(run)
        where run % 20 <> 3
    ''', {"runs": RUNS})
    n = con.execute("select count(*) from jobs").fetchall()[0][0]
""",
    "marts": """
from pipelines.config import load_config
from pipelines.warehouse import open_warehouse
from pipelines.transform import MARTS, build_mart
cfg = load_config(f"{root}/wastewatch.yaml")
timings = {}
with open_warehouse(cfg) as con:
    n = 0
    for name in MARTS:
        t0 = time.perf_counter()
        n += build_mart(con, name)
        timings[name] = round(time.perf_counter() - t0, 2)
extra = {"marts": timings}
""",
    **{
        f"rule_{rid}": f"""
from pipelines.config import load_config
from pipelines.warehouse import open_warehouse
from rules import Window, get_rule
cfg = load_config(f"{{root}}/wastewatch.yaml")
with open_warehouse(cfg) as con:
    frame = get_rule("{rid}").evaluate(con, Window.iso_week("2026-W48"))
    n = frame.height
    by = frame.group_by("status").agg(__import__("polars").col("estimated_waste").sum()).rows()
extra = {{"by_status": {{s: float(w) for s, w in by}}}}
"""
        for rid in ("STO001", "STO002", "STO003", "STO004")
    },
}

# peak RSS from the phase process's VmHWM: unlike ru_maxrss, it is not inherited from the parent across
# fork + exec, so a small phase started by a big parent does not report the parent's peak
RUNNER = """
import json, re, sys, time
import duckdb, polars  # imported before the clock starts: phases time work, not imports
import pipelines.config, pipelines.ingest, pipelines.transform, pipelines.warehouse, rules
root = sys.argv[1]
COLUMNS = {columns}
RUNS = {runs}
MEMORY_LIMIT = {memory_limit!r}
extra = {{}}
t = time.perf_counter()
{body}
seconds = time.perf_counter() - t
hwm = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())
print(json.dumps({{"seconds": seconds, "rows": n, "extra": extra, "peak_rss_mb": int(hwm.group(1)) / 1024}}))
"""


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM), in MB."""
    with open("/proc/self/status", encoding="ascii") as f:
        hwm = re.search(r"VmHWM:\s+(\d+) kB", f.read())
    return int(hwm.group(1)) / 1024 if hwm else float("nan")


def run_phase(name: str, root: Path, runs: int, memory_limit: str | None) -> dict:
    code = RUNNER.format(body=PHASES[name], columns=repr(COLUMNS), runs=runs, memory_limit=memory_limit)
    out = subprocess.run(
        [sys.executable, "-c", code, str(root)], check=True, capture_output=True, text=True, cwd=Path.cwd()
    )
    return phase_result(out.stdout)


def _report(con, root: Path, bucket: str, sql: str, params: dict, total: int, per_file: int) -> list[str]:
    """Write `bucket`'s inventory report: data files of up to `per_file` rows and the manifest."""
    import hashlib

    base = root / "landing" / "inventory" / bucket / "daily"
    (base / "data").mkdir(parents=True, exist_ok=True)
    entries, paths = [], []
    for n, lo in enumerate(range(0, total, per_file)):
        path = base / "data" / f"{bucket}-{n:04d}.csv.gz"
        con.execute(
            f"copy ({sql}) to '{path}' (header false, quote '\"', force_quote *)",  # noqa: S608 - our path
            {**params, "lo": lo, "hi": min(lo + per_file, total)},
        )
        blob = path.read_bytes()
        entries.append(
            {
                "key": f"{bucket}/daily/data/{path.name}",
                "size": len(blob),
                "MD5checksum": hashlib.md5(blob).hexdigest(),  # noqa: S324 - S3 Inventory's checksum
            }
        )
        paths.append(str(path))
    stamp = base / "2026-11-29T01-00Z"
    stamp.mkdir(exist_ok=True)
    manifest = {
        "sourceBucket": bucket,
        "destinationBucket": "arn:aws:s3:::bench-inventory",
        "version": "2016-11-30",
        "creationTimestamp": "1795914000000",
        "fileFormat": "CSV",
        "fileSchema": SCHEMA,
        "files": entries,
    }
    (stamp / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return paths


def generate(
    root: Path, runs: int, per_run: int, datasets: int, per_ds: int, memory_limit: str | None
) -> list[str]:
    import duckdb

    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    files = _report(con, root, "bench-ckpt", CHECKPOINT_ROWS, {"per_run": per_run}, runs * per_run, 1_000_000)
    copies = datasets // 5
    for no, bucket in enumerate(DATA_BUCKETS):
        # each bucket holds every third dataset; the range covers all files, the filter keeps its own
        files += _report(
            con,
            root,
            bucket,
            DATASET_ROWS,
            {"bucket": bucket, "bucket_no": no, "per_ds": per_ds, "copies": copies},
            datasets * per_ds,
            3_000_000,
        )
    con.close()
    (root / "files.json").write_text(json.dumps(files))
    sources = "".join(
        f"  - {{name: {b}, kind: s3_inventory, uri: landing/inventory/{b}/, region: "
        f"{'eu-west-1' if b.endswith('-eu') else 'us-east-1'}}}\n"
        for b in ("bench-ckpt", *DATA_BUCKETS)
    )
    (root / "wastewatch.yaml").write_text(
        "warehouse: warehouse/wastewatch.duckdb\n"
        + (f"duckdb: {{memory_limit: {memory_limit}}}\n" if memory_limit else "")
        + "sources:\n"
        + sources
        + 'checkpoints:\n  - "s3://bench-ckpt/{project}/{run_id}/**"\n'
        + "datasets:\n"
        + "".join(f'  - "s3://{b}/datasets/"\n' for b in DATA_BUCKETS)
        + "prices:\n  storage_gb_month: {STANDARD: 0.023, GLACIER_IR: 0.004}\n"
    )
    return files


def _fresh(root: Path) -> None:
    """Remove the warehouse and the reference's database, so a round starts from the inventories alone."""
    shutil.rmtree(root / "warehouse", ignore_errors=True)
    (root / "reference.duckdb").unlink(missing_ok=True)


def _duplicate_detection(r: dict) -> float:
    """Current objects with lineage, prices, datasets, matches, STO002: one round's seconds."""
    marts = r["marts"]["extra"]["marts"]
    return (
        marts["storage_objects_current"]
        + marts["storage_prices"]
        + marts["storage_datasets"]
        + marts["storage_dataset_matches"]
        + r["rule_STO002"]["seconds"]
    )


def _storage_all(r: dict) -> float:
    """All storage marts and the four rules: one round's seconds."""
    marts = r["marts"]["extra"]["marts"]
    return sum(v for k, v in marts.items() if k.startswith("storage")) + sum(
        r[f"rule_STO00{i}"]["seconds"] for i in range(1, 5)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--files-per-run", type=int, default=1000)
    parser.add_argument("--datasets", type=int, default=500)
    parser.add_argument("--files-per-dataset", type=int, default=16000)
    parser.add_argument("--dir", type=Path, default=Path("bench/out/storage"))
    parser.add_argument("--keep", action="store_true", help="keep the generated files and warehouse")
    parser.add_argument(
        "--memory-limit",
        default="2GB",
        help="DuckDB memory_limit for every phase (wastewatch.yaml duckdb.memory_limit); 'none' for DuckDB's default",
    )
    add_repeat(parser)
    args = parser.parse_args()
    root = args.dir.resolve()
    t = time.perf_counter()
    memory_limit = None if args.memory_limit.lower() == "none" else args.memory_limit
    files = generate(root, args.runs, args.files_per_run, args.datasets, args.files_per_dataset, memory_limit)
    size_mb = sum(Path(f).stat().st_size for f in files) / 1e6
    objects = args.runs * args.files_per_run + args.datasets * args.files_per_dataset
    print(f"DuckDB memory_limit: {memory_limit or 'default (80% of RAM)'}")
    print(
        f"inventories: {objects:,} objects in {len(files)} CSV.gz files, {size_mb:,.0f} MB "
        f"(generated in {time.perf_counter() - t:.1f} s)"
    )
    rounds = Rounds(args.repeat, ref="duckdb_typed")
    try:
        for _ in rounds:  # DuckDB's reads first, then wastewatch into a fresh warehouse
            _fresh(root)
            for name in PHASES:
                rounds.record(name, run_phase(name, root, args.runs, memory_limit))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print()
    print(rounds.legend())
    print(
        markdown(
            ("phase", "time", "rows", "rows/s", "vs typed read", "vs VARCHAR read", "peak RSS"),
            (
                (
                    name,
                    rounds.time(name),
                    f"{rounds.last(name)['rows']:,}",
                    rounds.rate(name) if rounds.last(name)["rows"] else "",
                    rounds.ratio(name, "duckdb_typed"),
                    rounds.ratio(name, "duckdb_varchar"),
                    rounds.peak(name),
                )
                for name in PHASES
            ),
        )
    )
    marts = rounds.last("marts")["extra"]["marts"]
    print(
        "marts: "
        + ", ".join(
            f"{m} {Spread.of(r['marts']['extra']['marts'][m] for r in rounds.results).show('.2f', ' s')}"
            for m in marts
        )
    )
    for i in range(1, 5):  # the findings do not change between rounds
        print(f"STO00{i} (last round): {json.dumps(rounds.last(f'rule_STO00{i}')['extra']['by_status'])}")
    print(
        "duplicate detection (current objects with lineage, prices, datasets, matches, STO002): "
        f"{rounds.each(_duplicate_detection).show(unit=' s')}; "
        f"all storage marts + rules: {rounds.each(_storage_all).show(unit=' s')}"
    )
    print(f"(this process, the generator: peak RSS {peak_rss_mb():,.0f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
