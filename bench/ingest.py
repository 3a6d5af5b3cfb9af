"""Benchmark: ingestion and marts on the demo's landing zone, against DuckDB's own scan of the same files.

    .venv/bin/python bench/ingest.py [--weeks 4] [--dir bench/out/ingest] [--repeat 3]

Runs `--repeat` rounds on one generated landing zone, each into a fresh warehouse: DuckDB reading the
same CSV files itself (a bare `count(*)` scan and a plain all-VARCHAR load into a table), then
`wastewatch` ingestion and the marts. Prints each phase's time, rows/s and ratios to the two DuckDB
reads as median (min-max) over the rounds (a ratio taken round by round), plus its peak memory (RSS of
a fresh process; the highest round's). Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

from _stats import Rounds, add_repeat, markdown, phase_result

PHASES = {
    "duckdb_scan": """
import duckdb, glob
files = sorted(glob.glob(f"{root}/landing/telemetry/nvidia-smi/*.csv"))
con = duckdb.connect()
n = con.execute("select count(*) from read_csv($f, header=true, all_varchar=true, delim=',', quote='')", {"f": files}).fetchall()[0][0]
""",
    "duckdb_load": """
import duckdb, glob
files = sorted(glob.glob(f"{root}/landing/telemetry/nvidia-smi/*.csv"))
con = duckdb.connect(f"{root}/bench_reference.duckdb")
con.execute("create or replace table t as select * from read_csv($f, header=true, all_varchar=true, delim=',', quote='')", {"f": files})
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
    n = report.rows_into("gpu_samples") + report.rows_into("billing_line_items")
""",
    "marts": """
from pipelines.config import load_config
from pipelines.warehouse import open_warehouse
from pipelines.transform import build_marts
cfg = load_config(f"{root}/wastewatch.yaml")
with open_warehouse(cfg) as con:
    n = sum(build_marts(con).values())
""",
}

RUNNER = """
import json, re, sys, time


def _hwm_mb():  # this phase's own peak: ru_maxrss is inherited across fork + exec
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)) / 1024


root = sys.argv[1]
t = time.perf_counter()
{body}
print(json.dumps({{"seconds": time.perf_counter() - t, "rows": n,
                  "peak_rss_mb": _hwm_mb()}}))
"""


def run_phase(name: str, root: Path) -> dict[str, float]:
    code = RUNNER.format(body=PHASES[name])
    out = subprocess.run([sys.executable, "-c", code, str(root)], check=True, capture_output=True, text=True)
    return phase_result(out.stdout)


def _fresh(root: Path) -> None:
    """Remove the warehouse and the reference's database, so a round starts from the landing zone alone."""
    for stale in (root / "warehouse", root / "bench_reference.duckdb"):
        if stale.is_dir():
            for f in stale.iterdir():
                f.unlink()
        elif stale.exists():
            stale.unlink()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weeks", type=int, default=4)
    parser.add_argument("--dir", type=Path, default=Path("bench/out/ingest"))
    add_repeat(parser)
    args = parser.parse_args()
    from pipelines.demo import generate

    root = args.dir.resolve()
    t = time.perf_counter()
    generate(root, last_week="2026-W48", weeks=args.weeks)
    gen = time.perf_counter() - t
    files = sorted((root / "landing" / "telemetry" / "nvidia-smi").glob("*.csv"))
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    print(
        f"landing zone: {args.weeks} week(s), {len(files)} telemetry files, {size_mb:,.0f} MB (generated in {gen:.1f} s)"
    )
    rounds = Rounds(args.repeat, ref="duckdb_load")
    for _ in rounds:  # the DuckDB reads first, then wastewatch, round after round
        _fresh(root)
        for name in PHASES:
            rounds.record(name, run_phase(name, root))
    print()
    print(rounds.legend())
    print(
        markdown(
            ("phase", "time", "rows", "rows/s", "vs DuckDB scan", "vs DuckDB load", "peak RSS"),
            (
                (
                    name,
                    rounds.time(name),
                    f"{rounds.last(name)['rows']:,}",
                    rounds.rate(name),
                    rounds.ratio(name, "duckdb_scan"),
                    rounds.ratio(name, "duckdb_load"),
                    rounds.peak(name),
                )
                for name in PHASES
            ),
        )
    )
    print(f"(this process: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
