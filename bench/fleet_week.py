"""Benchmark: a whole fleet week as cron runs it: `wastewatch run` over bill, telemetry, jobs and inventories.

    .venv/bin/python bench/fleet_week.py [--gpus 4000] [--week 2026-W48] [--idle-hosts 10]
                                         [--bill-lines 10000000] [--objects 10000000]
                                         [--memory-limit 4GB] [--dir bench/out/fleet] [--keep]

Generates one ISO week of a fleet of `--gpus` GPUs (8 per host: 4,000 GPUs = 500 p5.48xlarge hosts):
- nvidia-smi `--query-gpu --format=csv` telemetry, one sample per GPU per minute, one file per host and
  day (bench/telemetry_ingest.py's lines); the first `--idle-hosts` hosts idle all week, the rest busy;
- a CUR 2.0 Parquet bill (one BILLING_PERIOD, with its manifest): every host's hourly instance line, and
  other resources' hourly lines up to `--bill-lines` in all;
- a hosts CSV mapping each host to its instance id, and one Slurm `sacct -P` file with a job per busy
  host and day;
- S3 Inventory reports of `--objects` objects (bench/storage.py's checkpoint and dataset buckets).
Then, each in a fresh process, with DuckDB's memory limit set:
- `reference`: DuckDB's bare load of the same telemetry CSV, bill Parquet and inventory CSV.gz files into
  tables;
- `wastewatch run --week W --progress`: ingest, marts, every rule and the report in one process, as cron
  runs it, with each step's seconds from the progress lines and the process's peak RSS (VmHWM);
- `wastewatch ingest` again with nothing new (the nightly re-run).
Prints each phase's time, its share, the ratio of the whole run to the bare load, peak RSS, and the planted
idle waste (the idle hosts' billed week: hosts x 168 h x the hourly rate) against GPU001's finding. Not a
test: nothing here asserts a time. The input (about 17 GB of telemetry CSV at 4,000 GPUs) is deleted unless
--keep; check `df -h` first.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
from _stats import markdown
from billing_ingest import GENERATE_SQL
from storage import DATA_BUCKETS
from storage import generate as generate_inventories
from telemetry_ingest import SMI_HEADER, SMI_LINES

GPUS_PER_HOST = 8
RATE = Decimal("98.32")  # p5.48xlarge on demand, an hour
FILLER_RESOURCES = 50_000

# one day of samples: (host, minute, gpu); the first $idle hosts idle, the others busy
GRID = """
create or replace temp table grid as
select
    'gpu-node-' || lpad(h::varchar, 4, '0') as host,
    g as gpu,
    $day_start::timestamp + to_minutes(m) as ts,
    h >= $idle as busy,
    (hash(h, $day, m, g) % 1000) / 1000.0 as u
from range($hosts) t(h), range(1440) mm(m), range(8) gg(g)
"""

# the bill's lines: every host's instance hour (resource r < hosts), then other resources' hours; the
# columns bench/billing_ingest.py's CUR 2.0 query reads
LINE_ITEMS = """(
    select
        i,
        case when i < @FLEET@ then i % @HOSTS@ else @HOSTS@ + (i - @FLEET@) % @FILLER@ end as r,
        r % 2000 as c,
        timestamp '@START@' + to_hours(
            (case when i < @FLEET@ then i // @HOSTS@ else ((i - @FLEET@) // @FILLER@) % 168 end)::int
        ) as ts,
        case when r < @HOSTS@ then 'p5.48xlarge' else ['m5.large', 'r6i.2xlarge', 'c6i.4xlarge'][1 + r % 3] end
            as itype,
        case when r < @HOSTS@ then @RATE@ else round(0.096 + (r % 3) * 0.4, 6) end as rate,
        rate as cost
    from range(0, @LINES@) as t(i)
)"""


def _week_start(label: str) -> datetime:
    year, week = label.split("-W")
    return datetime.combine(date.fromisocalendar(int(year), int(week), 1), datetime.min.time())


def host(h: int) -> str:
    return f"gpu-node-{h:04d}"


def instance(h: int) -> str:
    return "i-" + f"{h:x}".rjust(17, "0")


def generate(root: Path, hosts: int, idle: int, start: datetime, bill_lines: int, objects: int) -> dict:
    """Write the landing zone and wastewatch.yaml under root; what was written."""
    shutil.rmtree(root / "landing", ignore_errors=True)
    land = root / "landing"
    (land / "telemetry").mkdir(parents=True)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'; set preserve_insertion_order = true; set enable_progress_bar = false")
    t = time.perf_counter()
    for day in range(7):
        day_start = start + timedelta(days=day)
        con.execute(GRID, {"day": day, "day_start": day_start, "hosts": hosts, "idle": idle})
        target = land / "telemetry" / f"day={day:02d}"
        con.execute(
            f"copy ({SMI_LINES}) to '{target}' (format csv, header false, quote '', escape '', "  # noqa: S608
            "delimiter '\t', partition_by (host))"
        )
    for f in sorted((land / "telemetry").rglob("*.csv")):  # nvidia-smi writes its header first
        tmp = f.with_suffix(".tmp")
        with tmp.open("wb") as out, f.open("rb") as src:
            out.write((SMI_HEADER + "\n").encode())
            shutil.copyfileobj(src, out, 1 << 20)
        tmp.replace(f)
    telemetry_s = time.perf_counter() - t

    t = time.perf_counter()
    period = start.strftime("%Y-%m")
    export = land / "billing" / "cur2-fleet"
    data = export / "data" / f"BILLING_PERIOD={period}"
    meta = export / "metadata" / f"BILLING_PERIOD={period}"
    data.mkdir(parents=True)
    meta.mkdir(parents=True)
    fleet = hosts * 168
    items = (
        LINE_ITEMS.replace("@FLEET@", str(fleet))
        .replace("@HOSTS@", str(hosts))
        .replace("@FILLER@", str(FILLER_RESOURCES))
        .replace("@START@", f"{start:%Y-%m-%d %H:%M:%S}")
        .replace("@RATE@", str(RATE))
        .replace("@LINES@", str(max(bill_lines, fleet)))
    )
    first, last = f"{start:%Y-%m-01}", f"{(start.replace(day=28) + timedelta(days=4)):%Y-%m-01}"
    sql = (
        GENERATE_SQL.replace("@LINE_ITEMS@", items)
        .replace("2026-11-01 00:00:00", f"{first} 00:00:00")
        .replace("2026-12-01 00:00:00", f"{last} 00:00:00")
    )
    name = "cur2-fleet-00001.snappy.parquet"
    con.execute(f"copy ({sql}) to '{data / name}' (format parquet, compression snappy)")  # noqa: S608
    manifest = {
        "executionId": "fleet-0001",
        "exportName": "cur2-fleet",
        "billingPeriod": {"start": f"{first}T00:00:00.000Z", "end": f"{last}T00:00:00.000Z"},
        "dataFiles": [f"s3://fleet-bucket/exports/cur2-fleet/data/BILLING_PERIOD={period}/{name}"],
    }
    (meta / "cur2-fleet-Manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    con.close()
    bill_s = time.perf_counter() - t

    t = time.perf_counter()
    (land / "hosts").mkdir(parents=True)
    (land / "hosts" / "fleet_hosts.csv").write_text(
        "host,instance_id,instance_type\n"
        + "".join(f"{host(h)},{instance(h)},p5.48xlarge\n" for h in range(hosts)),
        encoding="utf-8",
    )
    fields = "JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|ElapsedRaw|AllocNodes|AllocTRES|NodeList"
    lines, job = [fields], 100_000
    tres = "billing=96,cpu=96,gres/gpu:h100=8,gres/gpu=8,mem=1000G,node=1"
    for day in range(7):
        s = start + timedelta(days=day, seconds=4)
        e = start + timedelta(days=day + 1, seconds=-9)
        secs = int((e - s).total_seconds())
        elapsed = f"{secs // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}"
        for h in range(idle, hosts):
            job += 1
            lines.append(
                f"{job}|{job}|train-{h}|user{h % 50}|team-{h % 20}|h100|COMPLETED|0:0|"
                f"{s - timedelta(minutes=3):%Y-%m-%dT%H:%M:%S}|{s:%Y-%m-%dT%H:%M:%S}|{e:%Y-%m-%dT%H:%M:%S}|"
                f"{elapsed}|{secs}|1|{tres}|{host(h)}"
            )
    (land / "jobs").mkdir(parents=True)
    (land / "jobs" / f"sacct_{start:%Y%m%d}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")

    inventories = root / "inventories"
    runs = max(1, objects * 2 // 10 // 1000)
    datasets = max(3, objects * 8 // 10 // 16000)
    generate_inventories(inventories, runs, 1000, datasets, 16000, None)
    shutil.move(str(inventories / "landing" / "inventory"), land / "inventory")
    shutil.rmtree(inventories)
    other_s = time.perf_counter() - t

    data_buckets = list(DATA_BUCKETS)
    config = (
        "warehouse: warehouse/wastewatch.duckdb\n"
        "duckdb: {memory_limit: @MEM@, temp_directory: warehouse/spill}\n"
        f"history_start: {start:%Y-%m-%d}\n"
        "sources:\n"
        "  - {name: cur2, kind: aws_cur2, uri: landing/billing/}\n"
        "  - {name: smi, kind: nvidia_smi, uri: 'landing/telemetry/**/*.csv', "
        "options: {host_pattern: 'host=(?P<host>[^/]+)'}}\n"
        "  - {name: hosts, kind: hosts_csv, uri: landing/hosts/}\n"
        "  - {name: slurm, kind: slurm_sacct, uri: landing/jobs/}\n"
        + "".join(
            f"  - {{name: {b}, kind: s3_inventory, uri: landing/inventory/{b}/}}\n"
            for b in ("bench-ckpt", *data_buckets)
        )
        + 'checkpoints:\n  - "s3://bench-ckpt/{project}/{run_id}/**"\n'
        + "datasets:\n"
        + "".join(f'  - "s3://{b}/datasets/"\n' for b in data_buckets)
        + "prices:\n  storage_gb_month: {STANDARD: 0.023, GLACIER_IR: 0.004}\n"
    )
    (root / "wastewatch.yaml.in").write_text(config, encoding="utf-8")
    csvs = list((land / "telemetry").rglob("*.csv"))
    return {
        "hosts": hosts,
        "gpus": hosts * GPUS_PER_HOST,
        "samples": hosts * GPUS_PER_HOST * 1440 * 7,
        "telemetry_files": len(csvs),
        "telemetry_mb": sum(f.stat().st_size for f in csvs) / 1e6,
        "bill_lines": max(bill_lines, fleet),
        "generate_s": {"telemetry": telemetry_s, "bill": bill_s, "jobs_hosts_inventories": other_s},
    }


REFERENCE = """
import duckdb, glob, json, re, sys, time
root, mem = sys.argv[1], sys.argv[2]
con = duckdb.connect(f"{root}/reference.duckdb")
con.execute(f"set memory_limit = '{mem}'; set enable_progress_bar = false")
t = time.perf_counter()
out = {}
for name, sql in (
    ("telemetry", "create or replace table smi as select * from read_csv($f, delim = ', ', header = true)"),
    ("bill", "create or replace table bill as select * from read_parquet($f)"),
    ("inventories", "create or replace table inv as select * from read_csv($f, header = false, all_varchar = true)"),
):
    pattern = {"telemetry": "landing/telemetry/**/*.csv", "bill": "landing/billing/**/*.parquet",
               "inventories": "landing/inventory/**/*.csv.gz"}[name]
    files = sorted(glob.glob(f"{root}/{pattern}", recursive=True))
    s = time.perf_counter()
    con.execute(sql, {"f": files})
    out[name] = time.perf_counter() - s
con.close()
hwm = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())
print(json.dumps({"seconds": time.perf_counter() - t, "phases": out, "peak_rss_mb": int(hwm.group(1)) / 1024}))
"""

# the CLI in this process, printing its peak RSS on stderr when it exits (click ends with SystemExit)
CLI = """
import atexit, re, sys
def _peak():
    hwm = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())
    sys.stderr.write(f"peak_rss_kb {hwm.group(1)}\\n")
atexit.register(_peak)
from pipelines.cli import main
sys.argv = ["wastewatch", *sys.argv[1:]]
main()
"""

SECONDS = re.compile(r"(?:in )?(\d+(?:\.\d+)?) s$")


def run_cli(root: Path, *args: str) -> dict:
    """`wastewatch --progress --config ... ARGS` in a fresh process: wall time, steps' seconds, peak RSS."""
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CLI, "--progress", "--config", str(root / "wastewatch.yaml"), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=root,
    )
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"wastewatch {' '.join(args)} exited {out.returncode}:\n{out.stderr[-4000:]}")
    steps: dict[str, float] = {"ingest": 0.0, "marts": 0.0, "rules": 0.0, "report": 0.0}
    peak = 0.0
    for line in out.stderr.splitlines():
        if line.startswith("peak_rss_kb "):
            peak = int(line.split()[1]) / 1024
        m = SECONDS.search(line.strip())
        if not m or not line.startswith("  "):
            continue
        text = line.strip()
        kind = (
            "marts"
            if text.startswith("mart ")
            else "report"
            if text.startswith("report ")
            else "rules"
            if re.match(r"^[A-Z]{3}\d{3} ", text)
            else "ingest"
            # a source's final line only: while it loads, a counter line with the seconds so far repeats
            if re.match(r"^[\w.-]+ \(\w+\): (\d[\d,]* file\(s\) loaded|could not be read)", text)
            else None
        )
        if kind:
            steps[kind] += float(m.group(1))
    return {"wall": wall, "steps": steps, "peak_rss_mb": peak, "stdout": out.stdout, "stderr": out.stderr}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=4000)
    parser.add_argument("--week", default="2026-W48")
    parser.add_argument("--idle-hosts", type=int, default=None, help="default: 2 %% of the hosts, at least 1")
    parser.add_argument("--bill-lines", type=int, default=10_000_000)
    parser.add_argument("--objects", type=int, default=10_000_000)
    parser.add_argument("--memory-limit", default="4GB")
    parser.add_argument("--dir", type=Path, default=Path("bench/out/fleet"))
    parser.add_argument("--keep", action="store_true", help="keep the generated files and the warehouse")
    args = parser.parse_args()
    hosts = max(1, args.gpus // GPUS_PER_HOST)
    idle = args.idle_hosts if args.idle_hosts is not None else max(1, hosts // 50)
    root = args.dir.resolve()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    start = _week_start(args.week)
    t = time.perf_counter()
    made = generate(root, hosts, idle, start, args.bill_lines, args.objects)
    (root / "wastewatch.yaml").write_text(
        (root / "wastewatch.yaml.in").read_text().replace("@MEM@", args.memory_limit), encoding="utf-8"
    )
    print(
        f"generated in {time.perf_counter() - t:.0f} s: {made['gpus']:,} GPUs on {hosts} hosts ({idle} idle), "
        f"{made['samples']:,} samples in {made['telemetry_files']:,} files ({made['telemetry_mb']:,.0f} MB), "
        f"{made['bill_lines']:,} bill lines, {args.objects:,} inventory objects",
        flush=True,
    )
    reference = subprocess.run(
        [sys.executable, "-c", REFERENCE, str(root), args.memory_limit],
        capture_output=True,
        text=True,
        check=True,
    )
    ref = json.loads(reference.stdout.strip().splitlines()[-1])
    (root / "reference.duckdb").unlink(missing_ok=True)
    week = run_cli(root, "run", "--week", args.week)
    again = run_cli(root, "ingest")

    con = duckdb.connect(str(root / "warehouse" / "wastewatch.duckdb"), read_only=True)
    found = con.execute(
        "select coalesce(sum(estimated_waste), 0), count(*) from findings "
        "where rule_id = 'GPU001' and week_start = $w and status = 'waste'",
        {"w": start.date()},
    ).fetchall()[0]
    con.close()
    planted = idle * 168 * RATE

    steps = week["steps"]
    overhead = week["wall"] - sum(steps.values())
    rows = [
        ["DuckDB bare load of the same files (reference)", f"{ref['seconds']:.1f} s", "1.00x", f"{ref['peak_rss_mb']:,.0f} MB"],
        *[[f"  {k}", f"{v:.1f} s", "", ""] for k, v in ref["phases"].items()],
        ["wastewatch run --week (one process, as cron)", f"{week['wall']:.1f} s", f"{week['wall'] / ref['seconds']:.2f}x", f"{week['peak_rss_mb']:,.0f} MB"],
        *[[f"  {k}", f"{v:.1f} s", f"{v / ref['seconds']:.2f}x", ""] for k, v in steps.items()],
        ["  the rest (start-up, Dagster, checks, publish)", f"{overhead:.1f} s", "", ""],
        ["nightly re-run, nothing new (wastewatch ingest)", f"{again['wall']:.1f} s", "", f"{again['peak_rss_mb']:,.0f} MB"],
    ]  # fmt: skip
    print(markdown(["phase", "time", "vs reference", "peak RSS"], rows))
    print(
        f"GPU001 in {args.week}: found USD {Decimal(str(found[0])).quantize(Decimal('0.01')):,} in {found[1]} "
        f"finding(s), planted USD {planted:,.2f} ({idle} idle host(s) x 168 h x {RATE})"
        + ("" if abs(Decimal(str(found[0])) - planted) < Decimal("0.005") else "  MISMATCH")
    )
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if abs(Decimal(str(found[0])) - planted) < Decimal("0.005") else 1


if __name__ == "__main__":
    sys.exit(main())
