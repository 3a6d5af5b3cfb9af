"""Benchmark: a night's cost_hourly (the current month rebuilt) against the whole history spread again.

    .venv/bin/python bench/cost_months.py [--weeks 12] [--gpus 1000] [--lines-per-week 2500000]
        [--repeat 3] [--dir bench/out/cost_months] [--keep]

Writes bench/fleet_week.py's CUR 2.0 bill of `--weeks` weeks from 2026-09-01 (one Parquet delivery per
billing period, `--lines-per-week` lines a week: 30 M lines over September to November by default, the
bill of the growth curves' 12-week point), ingests it once with `wastewatch ingest`, then times
`--repeat` rounds of, each in a fresh process and in this order:

- `history`: cost_hourly built from every line (its `cost_hourly` fingerprint deleted: how a user forces
  a rebuild; what every night did before cost_hourly was kept by month): the reference;
- `night`: what a night whose delivery restated the last month builds: that month's billed rows and the
  modelled part (the month's fingerprint deleted, the part's made stale), with the month fingerprints
  computed as a night does.

Prints each phase's seconds, its ratio to the reference, its peak RSS, the months each phase rebuilt,
and fails unless both leave cost_hourly with the same rows (count and cost sums). Not a test: nothing
asserts a time. Delete bench/out/ afterwards.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from datetime import datetime
from pathlib import Path

import duckdb
from _stats import Rounds, add_repeat, markdown, run_code
from fleet_week import Bill
from spark_cost_hourly import ingest_once

START = datetime(2026, 9, 1)

RUNNER = """
import json, re, sys, time
from pipelines.config import load_config
from pipelines.transform import build_mart_with_rollup
from pipelines.warehouse import connect
work, forget = sys.argv[1], json.loads(sys.argv[2])
config = load_config(f"{work}/wastewatch.yaml")
con = connect(config.warehouse_path, settings=config.duckdb_settings)
for statement, params in forget:
    con.execute(statement, params)
con.close()
t = time.perf_counter()
con = connect(config.warehouse_path, settings=config.duckdb_settings)
_, stats = build_mart_with_rollup(con, "cost_hourly", config)
seconds = time.perf_counter() - t
rows, cost = con.execute("select count(*), sum(effective_cost)::varchar from cost_hourly").fetchall()[0]
con.close()
months = [d.isoformat()[:7] for s in stats if s.table == "cost_hourly" for d in s.days_rebuilt]
hwm = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())
print(json.dumps({"seconds": seconds, "rows": rows, "cost": cost, "months": months,
                  "peak_rss_mb": int(hwm.group(1)) / 1024}))
"""


def run_phase(work: Path, forget: list[tuple[str, dict[str, str]]]) -> dict:
    """Build cost_hourly in a fresh process after the statements `forget`: seconds, rows, peak memory."""
    return run_code("cost_hourly", RUNNER, str(work), json.dumps(forget))


def write_bill(land: Path, weeks: int, gpus: int, lines_per_week: int) -> int:
    """The CUR 2.0 export of `weeks` weeks from START, one delivery per billing period; its lines."""
    bill = Bill(land, START, weeks, max(1, gpus // 8), lines_per_week)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'; set enable_progress_bar = false")
    lines = sum(bill.deliver(con, a, b, f"bench-{a}") for a, b in bill.periods(0, weeks * 168))
    con.close()
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weeks", type=int, default=12)
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--lines-per-week", type=int, default=2_500_000)
    parser.add_argument("--memory-limit", default="4GB", help="DuckDB's, as the growth curves ran")
    parser.add_argument("--dir", type=Path, default=Path("bench/out/cost_months"))
    parser.add_argument("--keep", action="store_true", help="keep the generated files and warehouse")
    parser.add_argument(
        "--reuse", action="store_true", help="measure the warehouse --dir kept, generating nothing"
    )
    add_repeat(parser)
    args = parser.parse_args()
    root = args.dir.resolve()
    work = root / "work"
    if not (args.reuse and (work / "warehouse.duckdb").exists()):
        shutil.rmtree(root, ignore_errors=True)
        work.mkdir(parents=True)
        t = time.perf_counter()
        lines = write_bill(root / "landing", args.weeks, args.gpus, args.lines_per_week)
        source = f"  - {{name: cur2, kind: aws_cur2, uri: '{root / 'landing' / 'billing'}'}}\n"
        ingest_once(work, source, args.memory_limit)
        print(
            f"{lines:,} CUR 2.0 lines over {args.weeks} weeks written and ingested in {time.perf_counter() - t:.1f} s"
        )

    con = duckdb.connect(str(work / "warehouse.duckdb"), read_only=True)
    per_month = con.execute(
        "select strftime(date_trunc('month', charge_period_start), '%Y-%m'), count(*) from billing_lines "
        "group by 1 order by 1"
    ).fetchall()
    con.close()
    last = per_month[-1][0]
    history = [("delete from int_mart_inputs where mart = 'cost_hourly'", {})]
    night = [
        ("delete from int_incremental_days where object = 'cost_hourly' and strftime(day, '%Y-%m') = $m",
         {"m": last}),
        ("update int_mart_inputs set fingerprint = 0 where mart = 'cost_hourly/modelled'", {}),
    ]  # fmt: skip
    rounds = Rounds(args.repeat, ref="history")
    for _ in rounds:
        whole = rounds.record("history", run_phase(work, history))
        month = rounds.record("night", run_phase(work, night))
        if (whole["rows"], whole["cost"]) != (month["rows"], month["cost"]):
            raise SystemExit(f"history and night left different tables: {whole} {month}")
    print()
    print("lines per month: " + ", ".join(f"{m} {n:,}" for m, n in per_month))
    print(rounds.legend())
    print(
        markdown(
            ("phase", "time", "x history", "peak RSS", "months rebuilt"),
            [
                ("history", rounds.time("history"), "1.00x", rounds.peak("history"),
                 ", ".join(rounds.last("history")["months"])),
                ("night", rounds.time("night"), rounds.ratio("night", "history"), rounds.peak("night"),
                 ", ".join(rounds.last("night")["months"])),
            ],
        )
    )  # fmt: skip
    print(f"cost_hourly rows: {rounds.last('night')['rows']:,}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
