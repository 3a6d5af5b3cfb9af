"""Benchmark: the GPU roll-up (`int_gpu_slices`) on Spark (local mode) against DuckDB's on the same warehouse.

    .venv/bin/python bench/spark_rollup.py [--gpus 1000] [--days 1] [--master local[2]] [--conf KEY=VALUE ...]
        [--repeat 3] [--dir bench/out/spark-rollup] [--keep]

Needs the `spark` extra (pyspark) and Java 17+. Writes `--days` of nvidia-smi captures of `--gpus` GPUs
(8 a host, one sample a minute, one file per host and day: bench/fleet_week.py's telemetry and Slurm
jobs, which cut every busy host's day at a job's start and end), ingests them once with
`wastewatch ingest`, then times `--repeat` rounds of, each in a fresh process and in this order:

- `duckdb`: every sample day rolled up again with the default engine (the reference; 2 threads, 1 GB);
- `spark`: the same with `int_gpu_slices` on Spark (`--master`): Spark reads the captures where they lie,
  checks them against the warehouse, slices them and writes Parquet, which the warehouse copies into
  its table; the session's start is timed apart as `spark_start` and included in `spark`.

Prints each phase's seconds and ratio to the reference, median (min-max) over the rounds, and peak RSS
(Spark's JVM apart). Both must roll up the same number of rows, or the bench fails. Not a test: nothing
asserts a time. Delete bench/out/ afterwards.
"""

from __future__ import annotations

import argparse
import shutil
import time
from datetime import datetime
from pathlib import Path

from _stats import add_repeat
from fleet_week import _connect, jobs_text, write_telemetry_day
from spark_cost_hourly import compare_engines, ingest_once


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=1000, help="GPUs (8 a host; default 1000)")
    parser.add_argument("--days", type=int, default=1)
    parser.add_argument("--master", default="local[2]", help="Spark master URL (default local[2])")
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)"
    )
    parser.add_argument("--dir", type=Path, default=Path("bench/out/spark-rollup"))
    parser.add_argument("--keep", action="store_true", help="keep the generated files and warehouse")
    add_repeat(parser)
    args = parser.parse_args()
    root = args.dir.resolve()
    shutil.rmtree(root, ignore_errors=True)
    hosts, idle = max(1, args.gpus // 8), max(1, args.gpus // 80)
    start = datetime(2026, 11, 23)
    t = time.perf_counter()
    land = root / "landing"
    (land / "jobs").mkdir(parents=True)
    (land / "telemetry").mkdir()
    con = _connect()
    files = [f for day in range(args.days) for f in write_telemetry_day(con, land, start, day, hosts, idle)]
    con.close()
    (land / "jobs" / "sacct.txt").write_text(
        jobs_text(start, range(args.days), hosts, idle), encoding="utf-8"
    )
    work = root / "work"
    work.mkdir()
    ingest_once(
        work,
        f"  - {{name: smi, kind: nvidia_smi, uri: '{land}/telemetry/**/*.csv', "
        "options: {host_pattern: 'host=(?P<host>[^/]+)'}}\n"
        f"  - {{name: slurm, kind: slurm_sacct, uri: '{land}/jobs/'}}\n",
    )
    samples = args.gpus * 1440 * args.days
    print(
        f"{len(files):,} captures of {hosts * 8:,} GPUs x {args.days} day(s) ({samples:,} samples) written and "
        f"ingested in {time.perf_counter() - t:.1f} s"
    )

    compare_engines(work, args, "rollup")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
