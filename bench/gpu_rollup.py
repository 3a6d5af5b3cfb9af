"""Benchmark: the GPU roll-up (gpu_samples -> int_gpu_slices -> gpu_job_hours, gpu_hours, jobs_enriched).

    .venv/bin/python bench/gpu_rollup.py [--hosts 500] [--gpus 8] [--days 4] [--dir bench/out/gpu_rollup] [--keep]
        [--repeat 3]

A day of 4,000 GPUs (500 hosts x 8) sampled every minute is 5.76 M samples. The script writes such
days straight into a fresh warehouse's `gpu_samples` (the readers' shape; ingestion has its own
benchmark), with Slurm-like jobs starting and ending at odd minutes on every host (so hours are cut into
job slices) and an hourly bill per host, then times in fresh processes, each with DuckDB's memory limit
at 2 GiB:

- DuckDB's bare scan of one day's samples (the columns the roll-up reads), and a plain GPU-hour
  group-by of it (no slices, coverage, jobs or cost): the references, on the same rows in the same run;
- the first build of `--days` - 1 days (roll-up + the GPU marts), a rebuild with nothing new
  (fingerprints only), and, after the last day lands, the incremental roll-up of that one day alone,
  then the GPU marts (which rebuild that day only).

The first `--days` - 1 days are written once; each of `--repeat` rounds starts from a copy of that
warehouse (the references first, then the builds) and writes the last day again before it lands.
Prints wall time (of the work, after imports and connecting) and ratios to the bare scan (taken round
by round) as median (min-max) over the rounds, and each phase's peak RSS (a fresh process each; the
highest round's). Not a test: nothing asserts a time.
Deletes its warehouse afterwards unless --keep.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

from _stats import Rounds, Spread, add_repeat, markdown, phase_result

FIRST_DAY = "2026-11-23"

GENERATE = """
import duckdb
from pipelines.ingest.billing.lines import insert_lines
from pipelines.warehouse import connect
con = connect(f"{root}/warehouse.duckdb")
con.execute("set memory_limit = '2GiB'")
day = sys.argv[2]
# jobs: on every host, back-to-back runs of 2-6 h starting at odd minutes, some failing, idle gaps between
con.execute('''
insert into jobs (job_id, scheduler, job_name, user, account, state, started_at, ended_at, gpus_requested,
                  hosts, source, x_source_file, x_file_id)
select h * 1000 + j + (epoch($day::date) // 86400)::bigint * 1000000, 'slurm', 'train-' || j, 'u' || (h % 40),
       'team' || (h % 6), case when hash(h, j, $day) % 17 = 0 then 'FAILED' else 'COMPLETED' end,
       $day::date + to_minutes(j * 300 + (hash(h, j) % 50)::int + 7),
       $day::date + to_minutes(j * 300 + 200 + (hash(j, h) % 80)::int + 3),
       $gpus, ['node-' || lpad(h::varchar, 4, '0')], 'slurm', 'sacct-' || $day, 'sacct-' || $day
from range($hosts) t(h), range(5) u(j)
''', {"day": day, "hosts": hosts, "gpus": gpus})
# one sample per GPU per minute, in the shape the nvidia-smi reader writes; busy inside jobs
con.execute('''
insert into gpu_samples (ts, host, gpu_uuid, gpu_index, gpu_model, pci_bus_id, util_pct, mem_util_pct,
                         mem_used_mib, mem_total_mib, power_w, power_limit_w, source, x_source_file,
                         x_file_id, x_sample_date)
with grid as (
    select h, g, m, $day::date + to_minutes(m) + to_milliseconds(310 + 11 * g) as ts,
           (hash(h, g, m) % 1000) / 1000.0 as u,
           (m % 300) between (hash(h, m // 300) % 50) + 8 and 200 as busy
    from range($hosts) t(h), range($gpus) v(g), range(1440) w(m)
)
select ts, 'node-' || lpad(h::varchar, 4, '0'), 'GPU-' || h || '-' || g, g, 'NVIDIA H100 80GB HBM3',
       '00000000:1' || g || ':00.0',
       case when busy then 60 + 39 * u else 0 end, case when busy then 30 * u else 0 end,
       case when busy then 60000 + 10000 * u else 4 end, 81559,
       case when busy then 400 + 250 * u else 70 + 5 * u end, 700, 'nvidia_smi',
       'node-' || lpad(h::varchar, 4, '0') || '_' || $day || '.csv', 'f-' || h || '-' || $day, $day::date
from grid
''', {"day": day, "hosts": hosts, "gpus": gpus})
# an hourly bill per host (its `hostname` tag matches the telemetry host)
insert_lines(con, '''
select 55.04 as billed_cost, 38.528 as effective_cost, 'USD' as billing_currency,
       $day::date + to_hours(k) as charge_period_start, $day::date + to_hours(k + 1) as charge_period_end,
       'i-' || lpad(h::varchar, 17, '0') as resource_id, 'Instance' as resource_type, 'AWS' as provider_name,
       'Compute' as service_category, 'node-' || lpad(h::varchar, 4, '0') as x_host, $gpus as x_gpu_count,
       'p5.48xlarge' as x_instance_type, 'team' || (h % 6) as team, 'bill-' || $day as x_file_id
from range($hosts) t(h), range(24) u(k)
''', {"day": day, "hosts": hosts, "gpus": gpus})
con.execute("checkpoint")
n = con.execute("select count(*) from gpu_samples where x_sample_date = $d", {"d": day}).fetchall()[0][0]
con.close()
"""

PHASES = {
    "duckdb_scan": """
import duckdb
con = duckdb.connect(f"{root}/warehouse.duckdb", read_only=True)
con.execute("set memory_limit = '2GiB'")
t = time.perf_counter()
n = con.execute('''select count(*), sum(util_pct), sum(mem_used_mib), sum(power_w), max(ts), count(distinct host)
                   from gpu_samples where x_sample_date = $d''', {"d": sys.argv[2]}).fetchall()[0][0]
""",
    "duckdb_groupby": """
import duckdb
con = duckdb.connect(f"{root}/warehouse.duckdb", read_only=True)
con.execute("set memory_limit = '2GiB'")
t = time.perf_counter()
con.execute('''create temp table hourly as
               select host, gpu_uuid, date_trunc('hour', ts) as hour, count(*) as samples, avg(util_pct),
                      max(util_pct), avg(mem_used_mib), max(mem_used_mib), avg(power_w)
               from gpu_samples where x_sample_date = $d group by all''', {"d": sys.argv[2]})
n = con.execute("select sum(samples) from hourly").fetchall()[0][0]
""",
    "build_marts": """
from pipelines.warehouse import connect
from pipelines.transform import build_mart
con = connect(f"{root}/warehouse.duckdb")
con.execute("set memory_limit = '2GiB'")
t = time.perf_counter()
for mart in ("resources", "cost_hourly", "gpu_job_hours", "gpu_hours", "jobs_enriched"):
    m0 = time.perf_counter()
    build_mart(con, mart)
    extra[mart] = round(time.perf_counter() - m0, 2)
seconds = time.perf_counter() - t
n = con.execute("select coalesce(sum(samples), 0) from gpu_job_hours").fetchall()[0][0]
con.close()
""",
    "rollup_only": """
from pipelines.warehouse import connect, transaction
from pipelines.transform import build_intermediate, refresh_rollups
con = connect(f"{root}/warehouse.duckdb")
con.execute("set memory_limit = '2GiB'")
t = time.perf_counter()
with transaction(con):
    build_intermediate(con)
    stats = refresh_rollups(con)
seconds = time.perf_counter() - t
n = con.execute("select coalesce(sum(samples), 0) from int_gpu_slices where list_contains($d, day)",
                {"d": stats.days_rolled_up}).fetchall()[0][0]
extra = {"days": [d.isoformat() for d in stats.days_rolled_up], "slices": stats.rows}
con.close()
""",
}

RUNNER = """
import json, re, sys, time


def _hwm_mb():  # this phase's own peak: ru_maxrss is inherited across fork + exec
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)) / 1024


sys.path.insert(0, {repo!r})
root = sys.argv[1]
hosts, gpus = {hosts}, {gpus}
extra = {{}}
t = time.perf_counter()
seconds = None
{body}
print(json.dumps({{"seconds": seconds or time.perf_counter() - t, "rows": int(n), **extra,
                  "peak_rss_mb": _hwm_mb()}}))
"""


def run(body: str, root: Path, hosts: int, gpus: int, *args: str) -> dict[str, object]:
    repo = str(Path(__file__).resolve().parent.parent)
    code = RUNNER.format(repo=repo, hosts=hosts, gpus=gpus, body=body)
    out = subprocess.run(
        [sys.executable, "-c", code, str(root), *args], check=True, capture_output=True, text=True
    )
    return phase_result(out.stdout)


LABELS = {  # phase -> what the table calls it (the first build's is completed with the days it builds)
    "duckdb_scan": "DuckDB bare scan of one day's samples",
    "duckdb_groupby": "DuckDB plain GPU-hour group-by of it",
    "first_build": "first build: roll-up of {history} + GPU marts",
    "rebuild": "rebuild with nothing new (fingerprints)",
    "rollup_new_day": "a new day lands: its incremental roll-up",
    "marts_new_day": "  then the GPU marts (its day only)",
}
MARTS = ("resources", "cost_hourly", "gpu_job_hours", "gpu_hours", "jobs_enriched")


def _copy_warehouse(src: Path, dst: Path) -> None:
    """Copy a closed warehouse file (and its write-ahead log, if one was left) over `dst`."""
    for suffix in ("", ".wal"):
        target = dst.with_name(dst.name + suffix)
        target.unlink(missing_ok=True)
        source = src.with_name(src.name + suffix)
        if source.exists():
            shutil.copyfile(source, target)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument(
        "--days", type=int, default=4, help="days of samples; the last one lands incrementally"
    )
    parser.add_argument("--dir", type=Path, default=Path("bench/out/gpu_rollup"))
    parser.add_argument("--keep", action="store_true", help="keep the generated warehouse")
    add_repeat(parser)
    args = parser.parse_args()
    root = args.dir.resolve()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    h, g = args.hosts, args.gpus
    print(f"{h} hosts x {g} GPUs = {h * g:,} GPUs, one sample per GPU per minute; DuckDB memory_limit 2 GiB")
    days = [(date.fromisoformat(FIRST_DAY) + timedelta(days=i)).isoformat() for i in range(args.days)]
    warehouse, history = root / "warehouse.duckdb", root / "history.duckdb"
    rounds = Rounds(args.repeat, ref="duckdb_scan")
    try:
        for day in days[:-1]:
            gen = run(GENERATE, root, h, g, day)
            print(f"generated {day}: {gen['rows']:,} samples in {gen['seconds']:.1f} s")
        _copy_warehouse(warehouse, history)
        first = days[0]
        for _ in rounds:  # the references first, then the builds; every round from the same history
            _copy_warehouse(history, warehouse)
            rounds.record("duckdb_scan", run(PHASES["duckdb_scan"], root, h, g, first))
            rounds.record("duckdb_groupby", run(PHASES["duckdb_groupby"], root, h, g, first))
            rounds.record("first_build", run(PHASES["build_marts"], root, h, g))
            rounds.record("rebuild", run(PHASES["build_marts"], root, h, g))
            gen = run(GENERATE, root, h, g, days[-1])
            print(f"generated {days[-1]}: {gen['rows']:,} samples in {gen['seconds']:.1f} s")
            rounds.record("rollup_new_day", run(PHASES["rollup_only"], root, h, g))
            rounds.record("marts_new_day", run(PHASES["build_marts"], root, h, g))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    labels = {**LABELS, "first_build": LABELS["first_build"].format(history=f"{len(days) - 1} day(s)")}
    print()
    print(rounds.legend())
    print(
        markdown(
            ("phase", "time", "samples", "vs bare scan", "peak RSS"),
            (
                (
                    label,
                    rounds.time(phase, ".2f"),
                    f"{int(rounds.last(phase)['rows']):,}",
                    rounds.ratio(phase, "duckdb_scan", ".1f"),
                    rounds.peak(phase),
                )
                for phase, label in labels.items()
            ),
        )
    )
    rolled = rounds.last("rollup_new_day")
    print(f"\nthe incremental roll-up rolled up {rolled.get('days')} ({rolled.get('slices'):,} slices)")
    for phase, label in labels.items():
        marts = [m for m in MARTS if m in rounds.last(phase)]
        if marts:
            spreads = (Spread.of(rounds.values(phase, m)).show(".2f", " s") for m in marts)
            print(f"{label.strip()}: " + ", ".join(f"{m} {t}" for m, t in zip(marts, spreads, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
