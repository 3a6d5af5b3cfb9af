"""Benchmark: cost_hourly's bill spread on Spark (local mode) against DuckDB's on the same warehouse.

    .venv/bin/python bench/spark_cost_hourly.py [--rows 2000000] [--files 4] [--shape cur2|focus]
        [--master local[2]] [--conf KEY=VALUE ...] [--repeat 3] [--dir bench/out/spark] [--keep]

Needs the `spark` extra (pyspark) and Java 17+. Generates a month of `--rows` hourly line items
(bench/billing_ingest.py's CUR 2.0 export, or its FOCUS 1.2 shape, as snappy Parquet), ingests it once
with `wastewatch ingest`, then times `--repeat` rounds of, each in a fresh process and in this order:

- `duckdb`: `build_mart(cost_hourly)` with the default engine, built in full (the reference; 2 threads,
  1 GB);
- `spark`: the same mart with `engine: spark` on `--master`: Spark reads the Parquet where it lies,
  spreads the lines and writes the mart's Parquet, which the warehouse then reads as a view; the
  session's start (a JVM: seconds) is timed apart as `spark_start` and included in `spark`.

Prints each phase's seconds and ratio to the reference, median (min-max) over the rounds, and the peak
RSS of the phase's process and, for Spark, of its JVM (a child process). Both builds must hold the same
number of rows, or the bench fails. Not a test: nothing asserts a time. Delete bench/out/ afterwards.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _stats import Rounds, add_repeat, markdown, run_code
from billing_ingest import SHAPES, generate

RUNNER = """
import json, os, re, sys, threading, time
work, engine, master, extra = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
mart, forget, on_spark, counted = sys.argv[5], sys.argv[6], json.loads(sys.argv[7]), sys.argv[8]
jvm = [0]
def _descendants():
    parents = {{}}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                stat = open(f"/proc/{{pid}}/stat").read()
            except OSError:
                continue
            parents[int(pid)] = int(stat.rsplit(")", 1)[1].split()[1])
    mine, grew = {{os.getpid()}}, True
    while grew:
        more = {{p for p, pp in parents.items() if pp in mine}} - mine
        grew = bool(more)
        mine |= more
    return mine - {{os.getpid()}}
def _watch():  # the JVM's resident memory: a child of this process, which VmHWM does not count
    while True:
        total = 0
        for pid in _descendants():
            try:
                m = re.search(r"VmRSS:\\s+(\\d+) kB", open(f"/proc/{{pid}}/status").read())
                total += int(m.group(1)) * 1024 if m else 0
            except OSError:
                pass
        jvm[0] = max(jvm[0], total)
        time.sleep(0.2)
threading.Thread(target=_watch, daemon=True).start()
from pipelines.config import SparkSettings, load_config
from pipelines.transform import build_mart
from pipelines.warehouse import connect
config = load_config(f"{{work}}/wastewatch.yaml")
# built in full every round: forget what it was last built from
con = connect(config.warehouse_path, settings=config.duckdb_settings)
con.execute(forget)
con.close()
t = time.perf_counter()
start = 0.0
if engine == "spark":
    from pipelines.transform.spark.session import get_session
    settings = SparkSettings(url=master, marts_dir=f"{{work}}/marts", marts=on_spark,
                             conf={{"spark.ui.enabled": "false", "spark.driver.memory": "2g", **extra}})
    get_session(settings).sparkContext.setLogLevel("ERROR")
    start = time.perf_counter() - t
    config = config.model_copy(update={{"engine": "spark", "spark": settings}})
con = connect(config.warehouse_path, settings=config.duckdb_settings)
build_mart(con, mart, config)
n = con.execute(f"select count(*) from {{counted}}").fetchall()[0][0]
con.close()
seconds = time.perf_counter() - t
hwm = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())
print(json.dumps({{"seconds": seconds, "start_s": start, "rows": n, "peak_rss_mb": int(hwm.group(1)) / 1024,
                  "jvm_mb": jvm[0] / 2**20}}))
"""


# what a round builds of each stage: the mart built, the statement that makes it build in full, what
# `engine: spark` builds (spark.marts) and the table whose rows are counted
STAGES = {
    "cost_hourly": ("cost_hourly", "delete from int_mart_inputs where mart = 'cost_hourly'", ["cost_hourly"],
                    "cost_hourly"),
    # `resources` is the first mart that reads the roll-up: building it rolls every sample day up again
    "rollup": ("resources", "delete from int_incremental_days where object = 'int_gpu_slices'",
               ["int_gpu_slices"], "int_gpu_slices"),
}  # fmt: skip


def run_phase(
    work: Path, engine: str, master: str, conf: dict[str, str], stage: str = "cost_hourly"
) -> dict[str, float]:
    """One round of `stage` on `engine` in a fresh process: its seconds, rows and peak memory."""
    mart, forget, on_spark, counted = STAGES[stage]
    args = [str(work), engine, master, json.dumps(conf), mart, forget, json.dumps(on_spark), counted]
    return run_code(f"phase {engine}", RUNNER.format(), *args)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--shape", choices=tuple(SHAPES), default="cur2")
    parser.add_argument("--master", default="local[2]", help="Spark master URL (default local[2])")
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)"
    )
    parser.add_argument("--dir", type=Path, default=Path("bench/out/spark"))
    parser.add_argument("--keep", action="store_true", help="keep the generated files and warehouse")
    add_repeat(parser)
    args = parser.parse_args()
    root = args.dir.resolve()
    shutil.rmtree(root, ignore_errors=True)
    t = time.perf_counter()
    export = generate(root / "export", args.rows, args.files, args.shape, formats=("parquet",))["parquet"]
    work = root / "work"
    work.mkdir(parents=True)
    ingest_once(work, f"  - {{name: bill, kind: {SHAPES[args.shape][2]}, uri: '{export}'}}\n")
    print(f"{args.rows:,} {args.shape} lines generated and ingested in {time.perf_counter() - t:.1f} s")

    compare_engines(work, args, "cost_hourly")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def ingest_once(work: Path, sources: str, memory_limit: str = "1GB") -> None:
    """Write the bench's config with `sources` (YAML list items) into `work` and run `wastewatch ingest`."""
    (work / "wastewatch.yaml").write_text(
        f"warehouse: warehouse.duckdb\nduckdb: {{memory_limit: {memory_limit}, threads: 2}}\nsources:\n"
        + sources,
        encoding="utf-8",
    )
    ingest = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "--config", str(work / "wastewatch.yaml"), "ingest"],
        capture_output=True,
        text=True,
        check=False,
    )
    if ingest.returncode != 0:
        raise SystemExit(f"ingest failed:\n{ingest.stderr[-4000:]}")


def compare_engines(work: Path, args: argparse.Namespace, stage: str) -> None:
    """`args.repeat` rounds of `stage` on each engine (DuckDB first), and the table of their times."""
    conf = dict(c.split("=", 1) for c in args.conf)
    rounds = Rounds(args.repeat, ref="duckdb")
    for _ in rounds:
        built = rounds.record("duckdb", run_phase(work, "duckdb", args.master, conf, stage))
        spark = rounds.record("spark", run_phase(work, "spark", args.master, conf, stage))
        rounds.record("spark_start", {"seconds": spark["start_s"], "peak_rss_mb": 0})
        if spark["rows"] != built["rows"]:
            raise SystemExit(f"the engines built {built['rows']:,} and {spark['rows']:,} rows")
    print()
    print(rounds.legend())
    print(
        markdown(
            ("phase", "time", "x duckdb", "peak RSS"),
            [
                ("duckdb", rounds.time("duckdb"), "1.00x", rounds.peak("duckdb")),
                ("spark", rounds.time("spark"), rounds.ratio("spark", "duckdb"),
                 f"{rounds.peak('spark')} + JVM {rounds.peak('spark', 'jvm_mb')}"),
                ("of which the session's start", rounds.time("spark_start"), "", ""),
            ],
        )
    )  # fmt: skip
    print(f"{STAGES[stage][3]} rows: {rounds.last('spark')['rows']:,}")


if __name__ == "__main__":
    raise SystemExit(main())
