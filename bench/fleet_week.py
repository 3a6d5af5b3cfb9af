"""Benchmark: a whole fleet week as cron runs it: `wastewatch run` over bill, telemetry, jobs and inventories.

    .venv/bin/python bench/fleet_week.py [--gpus 4000] [--weeks 1] [--week W] [--idle-hosts N]
                                         [--bill-lines 2500 x GPUs] [--objects 2500 x GPUs]
                                         [--landing whole|nightly] [--delete-landed]
                                         [--memory-limit 4GB] [--dir bench/out/fleet] [--keep] [--json PATH]
                                         [--resume] [--reuse] [--run-only]

Generates `--weeks` consecutive ISO weeks from `--week` (default: so that they end with the last week that
has ended, as `wastewatch run --week` refuses a week that has not started) of a fleet of `--gpus` GPUs (8 per
host: 4,000 GPUs = 500 p5.48xlarge hosts):
- nvidia-smi `--query-gpu --format=csv` telemetry, one sample per GPU per minute, one file per host and
  day (bench/telemetry_ingest.py's lines); the first `--idle-hosts` hosts idle all along, the rest busy;
- a CUR 2.0 Parquet bill (one BILLING_PERIOD per month, with its manifest): every host's hourly instance
  line, and other resources' hourly lines up to `--bill-lines` a week in all;
- a hosts CSV mapping each host to its instance id, and Slurm `sacct -P` files with a job per busy host
  and day;
- S3 Inventory reports of `--objects` objects (bench/storage.py's checkpoint and dataset buckets).

`--landing whole` (the default for one week): everything is written first; then, each in a fresh process,
with DuckDB's memory limit set:
- `reference`: DuckDB's bare load of the same telemetry CSV, bill Parquet and inventory CSV.gz files into
  tables;
- `wastewatch run --week W --progress` for each week: ingest, marts, every rule and the report in one
  process, as cron runs it, with each step's seconds from the progress lines and the process's peak RSS
  (VmHWM);
- `wastewatch ingest` again with nothing new (the nightly re-run).

`--landing nightly` (the default for more than one week): the weeks land as cron sees them. Before each
night's `wastewatch ingest` (timed, with its peak RSS) the night's files are written: that day's telemetry,
that day's sacct file, and the bill as CUR 2.0 delivers it, the month to date in a new execution of the
month's BILLING_PERIOD export (overwrite mode: the same data file, a new manifest `executionId`), which the
ingest loads as a restatement replacing the period's earlier lines; a new month starts a new period. The
hosts CSV lands on the first night; the S3 Inventory reports weekly (S3 Inventory's weekly frequency), on
each week's first night (dated that Monday, 01:00 UTC), as a new report (the same objects, hard-linked, so
they take no more disk). After each week's last night, `wastewatch run --week W` (the weekly evaluation).
The reference is the bare load of what the last night's ingest reads (its telemetry day and the
month-to-date bill; the inventories too when that night is a Monday).
`--delete-landed` removes each day's telemetry CSV once it is ingested: the ledger keeps the rows of a
non-billing file that is gone from its source (only a billing file's disappearance deletes its rows), so
12 weeks fit on a small disk. What is done is saved in `--dir`/progress.json after each night and each
week's run; `--resume` carries a point that was cut short on from there (with the same arguments and the
same clean commit, as a point measured by two versions of the code measures neither): a night cut short is
landed and ingested again, and the seconds spent before are added to the point's elapsed time.

`--reuse` (whole landing) keeps the generated files under `--dir` with what they are (inputs.json) and uses
them again in a later invocation asking for the same ones, deleting everything else there (the warehouse
first); `--run-only` times `run --week` alone (no bare load, no nightly re-run): with both, an A/B of two
checkouts (PYTHONPATH) over the same files costs a run each, not a generation (20 min at 4,000 GPUs). The
CLI's stderr is passed on as it comes.

Prints each phase's time and CPU seconds (user + system of every thread, read from /proc four times a
second and split at the progress lines' times; the rest is the process's total less the phases'), the step
during which the peak RSS was reached, the load average as each run began and ended, its share, the ratio
of the whole run to the bare load, peak RSS, and for every
week the planted idle waste (the idle hosts' billed week: hosts x 168 h x the hourly rate) against GPU001's
finding. `--json PATH` appends one JSON line with the point's arguments, every phase's seconds (each mart's too) and peak RSS,
the nights, the disk used and the git commit (bench/growth.py reads them). Not a test: nothing here asserts
a time. The input (about 8 GB of telemetry CSV for 4,000 GPUs and a week) is deleted unless --keep; check
`df -h` first.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
from datetime import UTC, date, datetime, timedelta
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
FILLER_RESOURCES = 50_000  # at most: fewer when a week has fewer than 168 lines for each
PER_GPU = 2_500  # default bill lines a week and inventory objects per GPU: 10 M each at 4,000 GPUs
EXPORT = "cur2-fleet"

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

# the bill's lines of the bench's hours [@A@, @B@): every host's instance hour (resource r < hosts, line
# i = hour x hosts + r), then each week's other resources' hours (@PERWEEK@ lines a week over @FILLER@
# resources); a line's id i is the same in every delivery that holds it. One week, hours [0, 168), gives
# the lines bench/fleet_week.py always wrote. The columns are those bench/billing_ingest.py's CUR 2.0
# query reads.
LINE_ITEMS = """(
    select
        i,
        r,
        r % 2000 as c,
        timestamp '@START@' + to_hours(hr::int) as ts,
        case when r < @HOSTS@ then 'p5.48xlarge' else ['m5.large', 'r6i.2xlarge', 'c6i.4xlarge'][1 + r % 3] end
            as itype,
        case when r < @HOSTS@ then @RATE@ else round(0.096 + (r % 3) * 0.4, 6) end as rate,
        rate as cost
    from (
        select i, i % @HOSTS@ as r, i // @HOSTS@ as hr
        from range(@HOSTS@ * @A@, @HOSTS@ * @B@) as t(i)
        union all
        select * from (
            select @FLEET@ + w * @PERWEEK@ + j as i, @HOSTS@ + j % @FILLER@ as r,
                168 * w + (j // @FILLER@) % 168 as hr
            from range(@W0@, @W1@) as ww(w), range(0, @PERWEEK@) as t(j)
        )
        where hr >= @A@ and hr < @B@
    )
)"""


def _week_start(label: str) -> datetime:
    year, week = label.split("-W")
    return datetime.combine(date.fromisocalendar(int(year), int(week), 1), datetime.min.time())


def _week_label(monday: datetime) -> str:
    year, week, _ = monday.isocalendar()
    return f"{year}-W{week:02d}"


def _next_month(d: datetime) -> datetime:
    return (d.replace(day=28) + timedelta(days=4)).replace(day=1, hour=0, minute=0, second=0)


def host(h: int) -> str:
    return f"gpu-node-{h:04d}"


def instance(h: int) -> str:
    return "i-" + f"{h:x}".rjust(17, "0")


def _du(path: Path) -> int:
    """Bytes of the files under path."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def _connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'; set preserve_insertion_order = true; set enable_progress_bar = false")
    return con


def write_telemetry_day(
    con: duckdb.DuckDBPyConnection, land: Path, start: datetime, day: int, hosts: int, idle: int
) -> list[Path]:
    """Day `day` (from start) of every host's telemetry, one file per host under telemetry/day=NN/."""
    con.execute(GRID, {"day": day, "day_start": start + timedelta(days=day), "hosts": hosts, "idle": idle})
    target = land / "telemetry" / f"day={day:02d}"
    con.execute(
        f"copy ({SMI_LINES}) to '{target}' (format csv, header false, quote '', escape '', "  # noqa: S608
        "delimiter '\t', partition_by (host))"
    )
    files = sorted(target.rglob("*.csv"))
    for f in files:  # nvidia-smi writes its header first
        tmp = f.with_suffix(".tmp")
        with tmp.open("wb") as out, f.open("rb") as src:
            out.write((SMI_HEADER + "\n").encode())
            shutil.copyfileobj(src, out, 1 << 20)
        tmp.replace(f)
    return files


def jobs_text(start: datetime, days: range, hosts: int, idle: int) -> str:
    """A `sacct -P` file: one job a busy host and day of `days` (job ids unique across days)."""
    fields = "JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|ElapsedRaw|AllocNodes|AllocTRES|NodeList"
    lines = [fields]
    tres = "billing=96,cpu=96,gres/gpu:h100=8,gres/gpu=8,mem=1000G,node=1"
    for day in days:
        s = start + timedelta(days=day, seconds=4)
        e = start + timedelta(days=day + 1, seconds=-9)
        secs = int((e - s).total_seconds())
        elapsed = f"{secs // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}"
        for h in range(idle, hosts):
            job = 100_001 + day * (hosts - idle) + (h - idle)
            lines.append(
                f"{job}|{job}|train-{h}|user{h % 50}|team-{h % 20}|h100|COMPLETED|0:0|"
                f"{s - timedelta(minutes=3):%Y-%m-%dT%H:%M:%S}|{s:%Y-%m-%dT%H:%M:%S}|{e:%Y-%m-%dT%H:%M:%S}|"
                f"{elapsed}|{secs}|1|{tres}|{host(h)}"
            )
    return "\n".join(lines) + "\n"


class Bill:
    """The CUR 2.0 export of the bench's weeks: per week, every host's hours and filler lines up to
    `lines_per_week`; written period by period (overwrite mode), each delivery with a new executionId."""

    def __init__(
        self, land: Path, start: datetime, weeks: int, hosts: int, lines_per_week: int, nightly: bool = False
    ) -> None:
        self.land, self.start, self.weeks, self.hosts = land, start, weeks, hosts
        # nightly: each day's lines generated once, as a delivery is the month to date and generating it again
        # each night took most of a late night's set-up (67 s of 10 M lines); the cache is outside landing/
        self.cache = land.parent / "bill-days" if nightly else None
        self.per_week = max(lines_per_week, hosts * 168) - hosts * 168
        # each other resource billed every hour of the week when there are fewer than 50,000 x 168 such lines
        # (so a night's delivery holds its share of them); from about 3,400 GPUs the 50,000 resources as ever
        self.filler = min(FILLER_RESOURCES, max(1, self.per_week // 168))

    def _items(self, a: int, b: int) -> str:
        """The line items of hours [a, b), as LINE_ITEMS selects them (a function of each line alone)."""
        return (
            LINE_ITEMS.replace("@FLEET@", str(self.hosts * 168 * self.weeks))
            .replace("@HOSTS@", str(self.hosts))
            .replace("@FILLER@", str(self.filler))
            .replace("@PERWEEK@", str(self.per_week))
            .replace("@START@", f"{self.start:%Y-%m-%d %H:%M:%S}")
            .replace("@RATE@", str(RATE))
            .replace("@A@", str(a))
            .replace("@B@", str(b))
            .replace("@W0@", str(a // 168))
            .replace("@W1@", str((b - 1) // 168 + 1))
        )

    def _generate(
        self, con: duckdb.DuckDBPyConnection, a: int, b: int, first: datetime, last: datetime, path: Path
    ) -> None:
        """Write the CUR 2.0 lines of hours [a, b) of the period [first, last) to `path`."""
        sql = (
            GENERATE_SQL.replace("@LINE_ITEMS@", self._items(a, b))
            .replace("2026-11-01 00:00:00", f"{first:%Y-%m-%d} 00:00:00")
            .replace("2026-12-01 00:00:00", f"{last:%Y-%m-%d} 00:00:00")
        )
        con.execute(f"copy ({sql}) to '{path}' (format parquet, compression snappy)")  # noqa: S608

    def _day_files(
        self, con: duckdb.DuckDBPyConnection, a: int, b: int, first: datetime, last: datetime
    ) -> list[str]:
        """The cached Parquet of each day of hours [a, b) (whole days of one month), generated when missing;
        the cache keeps this month's days only."""
        assert self.cache is not None
        self.cache.mkdir(parents=True, exist_ok=True)
        month = f"{first:%Y-%m}"
        for old in self.cache.glob("*.parquet"):
            if not old.name.startswith(month):
                old.unlink()
        files = []
        for d0 in range(a, b, 24):
            path = self.cache / f"{month}-{d0:06d}-{min(b, d0 + 24):06d}.parquet"
            if not path.exists():
                tmp = path.with_suffix(".tmp")
                self._generate(con, d0, min(b, d0 + 24), first, last, tmp)
                tmp.replace(path)
            files.append(str(path))
        return files

    def deliver(self, con: duckdb.DuckDBPyConnection, a: int, b: int, execution: str) -> int:
        """Write the period holding hours [a, b) (which must lie in one month) and its manifest; its lines."""
        first = (self.start + timedelta(hours=a)).replace(day=1, hour=0)
        last = _next_month(first)
        assert self.start + timedelta(hours=b) <= last, "a delivery holds one billing period"
        period = f"{first:%Y-%m}"
        export = self.land / "billing" / EXPORT
        data = export / "data" / f"BILLING_PERIOD={period}"
        meta = export / "metadata" / f"BILLING_PERIOD={period}"
        data.mkdir(parents=True, exist_ok=True)
        meta.mkdir(parents=True, exist_ok=True)
        name = f"{EXPORT}-00001.snappy.parquet"
        tmp = data / f".{name}.tmp"
        if self.cache is None:
            self._generate(con, a, b, first, last, tmp)
        else:
            con.execute(
                f"copy (select * from read_parquet($days)) to '{tmp}' (format parquet, compression snappy)",  # noqa: S608
                {"days": self._day_files(con, a, b, first, last)},
            )
        tmp.replace(data / name)
        manifest = {
            "executionId": execution,
            "exportName": EXPORT,
            "billingPeriod": {
                "start": f"{first:%Y-%m-%d}T00:00:00.000Z",
                "end": f"{last:%Y-%m-%d}T00:00:00.000Z",
            },
            "dataFiles": [f"s3://fleet-bucket/exports/{EXPORT}/data/BILLING_PERIOD={period}/{name}"],
        }
        (meta / f"{EXPORT}-Manifest.json").write_text(json.dumps(manifest), encoding="utf-8")  # written last
        return con.execute("select count(*) from read_parquet($f)", {"f": str(data / name)}).fetchone()[0]

    def periods(self, a: int, b: int) -> list[tuple[int, int]]:
        """[a, b) cut at month boundaries."""
        out = []
        while a < b:
            end = _next_month(self.start + timedelta(hours=a))
            cut = min(b, int((end - self.start).total_seconds()) // 3600)
            out.append((a, cut))
            a = cut
        return out


def make_inventories(root: Path, objects: int) -> Path:
    """bench/storage.py's S3 Inventory reports of about `objects` objects, under root/inventory/landing/inventory."""
    inventories = root / "inventory"
    runs = max(1, objects * 2 // 10 // 1000)
    datasets = max(3, objects * 8 // 10 // 16000)
    generate_inventories(inventories, runs, 1000, datasets, 16000, None)
    return inventories / "landing" / "inventory"


def land_inventories(src: Path, land: Path, week: int, taken: datetime) -> None:
    """A new dated report per bucket (week `week`'s, taken at `taken`): the source reports' data files
    hard-linked under new names, a manifest naming them, dated `taken`."""
    for bucket_dir in sorted(p for p in src.iterdir() if p.is_dir()):
        bucket = bucket_dir.name
        (manifest_path,) = list((bucket_dir / "daily").glob("*/manifest.json"))
        doc = json.loads(manifest_path.read_text())
        out = land / "inventory" / bucket / "daily"
        (out / "data").mkdir(parents=True, exist_ok=True)
        for entry in doc["files"]:
            name = Path(entry["key"]).name
            new = name.replace(f"{bucket}-", f"{bucket}-w{week:02d}-")
            (out / "data" / new).unlink(missing_ok=True)  # landed again when a cut-short night is
            os.link(bucket_dir / "daily" / "data" / name, out / "data" / new)
            entry["key"] = f"{bucket}/daily/data/{new}"
        doc["creationTimestamp"] = str(int(taken.replace(tzinfo=UTC).timestamp() * 1000))
        stamp = out / f"{taken:%Y-%m-%dT%H-%MZ}"
        stamp.mkdir(exist_ok=True)
        (stamp / "manifest.json").write_text(json.dumps(doc, indent=2))


def write_config(root: Path, start: datetime, memory_limit: str) -> None:
    data_buckets = list(DATA_BUCKETS)
    config = (
        "warehouse: warehouse/wastewatch.duckdb\n"
        f"duckdb: {{memory_limit: {memory_limit}, temp_directory: warehouse/spill}}\n"
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
    (root / "wastewatch.yaml").write_text(config, encoding="utf-8")


def write_hosts(land: Path, hosts: int) -> None:
    (land / "hosts").mkdir(parents=True, exist_ok=True)
    (land / "hosts" / "fleet_hosts.csv").write_text(
        "host,instance_id,instance_type\n"
        + "".join(f"{host(h)},{instance(h)},p5.48xlarge\n" for h in range(hosts)),
        encoding="utf-8",
    )


def generate(
    root: Path, hosts: int, idle: int, start: datetime, weeks: int, bill_lines: int, objects: int
) -> dict:
    """Write every week's landing zone under root at once (--landing whole); what was written."""
    shutil.rmtree(root / "landing", ignore_errors=True)
    land = root / "landing"
    (land / "telemetry").mkdir(parents=True)
    con = _connect()
    t = time.perf_counter()
    for day in range(7 * weeks):
        write_telemetry_day(con, land, start, day, hosts, idle)
    telemetry_s = time.perf_counter() - t

    t = time.perf_counter()
    bill = Bill(land, start, weeks, hosts, bill_lines)
    lines = sum(bill.deliver(con, a, b, f"fleet-{a:05d}") for a, b in bill.periods(0, 168 * weeks))
    con.close()
    bill_s = time.perf_counter() - t

    t = time.perf_counter()
    write_hosts(land, hosts)
    (land / "jobs").mkdir(parents=True)
    (land / "jobs" / f"sacct_{start:%Y%m%d}.txt").write_text(
        jobs_text(start, range(7 * weeks), hosts, idle), encoding="utf-8"
    )
    shutil.move(str(make_inventories(root, objects)), land / "inventory")
    shutil.rmtree(root / "inventory")
    other_s = time.perf_counter() - t

    csvs = list((land / "telemetry").rglob("*.csv"))
    return {
        "telemetry_files": len(csvs),
        "telemetry_mb": sum(f.stat().st_size for f in csvs) / 1e6,
        "bill_lines": lines,
        "generate_s": {"telemetry": telemetry_s, "bill": bill_s, "jobs_hosts_inventories": other_s},
    }


REFERENCE = """
import duckdb, glob, json, re, sys, time
root, mem, patterns = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
con = duckdb.connect(f"{root}/reference.duckdb")
con.execute(f"set memory_limit = '{mem}'; set enable_progress_bar = false")
t = time.perf_counter()
out = {}
for name, sql in (
    ("telemetry", "create or replace table smi as select * from read_csv($f, delim = ', ', header = true)"),
    ("bill", "create or replace table bill as select * from read_parquet($f)"),
    ("inventories", "create or replace table inv as select * from read_csv($f, header = false, all_varchar = true)"),
):
    files = sorted(glob.glob(f"{root}/{patterns[name]}", recursive=True)) if patterns.get(name) else []
    if not files:
        continue
    s = time.perf_counter()
    con.execute(sql, {"f": files})
    out[name] = time.perf_counter() - s
con.close()
hwm = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())
print(json.dumps({"seconds": time.perf_counter() - t, "phases": out, "peak_rss_mb": int(hwm.group(1)) / 1024}))
"""
WHOLE_PATTERNS = {
    "telemetry": "landing/telemetry/**/*.csv",
    "bill": "landing/billing/**/*.parquet",
    "inventories": "landing/inventory/**/*.csv.gz",
}


def reference(root: Path, memory_limit: str, patterns: dict[str, str]) -> dict:
    """DuckDB's bare load of the files `patterns` match, in a fresh process (its CPU seconds too)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", REFERENCE, str(root), memory_limit, json.dumps(patterns)],
        capture_output=True,
        text=True,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    (root / "reference.duckdb").unlink(missing_ok=True)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "cpu_s": round(cpu, 3), "files": patterns}


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
TICK = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.25  # how often the CLI's CPU time and peak RSS are read from /proc while it runs


def _proc_sample(pid: int) -> tuple[float, float] | None:
    """(CPU seconds, user + system of every thread so far; VmHWM in MB) of a running process, or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    hwm = re.search(r"VmHWM:\s+(\d+) kB", status)
    return (int(fields[11]) + int(fields[12])) / TICK, int(hwm.group(1)) / 1024 if hwm else 0.0


def _cpu_at(samples: list[tuple[float, float, float]], t: float) -> float:
    """The CPU seconds at time t, interpolated between the samples around it."""
    if not samples or t <= samples[0][0]:
        return samples[0][1] * (t >= samples[0][0]) if samples else 0.0
    for (t0, c0, _), (t1, c1, _) in zip(samples, samples[1:], strict=False):
        if t0 <= t <= t1:
            return c0 + (c1 - c0) * (t - t0) / (t1 - t0 or 1)
    return samples[-1][1]


def _kind(text: str) -> str | None:
    """Which phase a progress line ends (stripped), or None: marts, report, rules or a source's ingest."""
    if text.startswith("mart "):
        return "marts"
    if text.startswith("report "):
        return "report"
    if re.match(r"^[A-Z]{3}\d{3} ", text):
        return "rules"
    # a source's final line only: while it loads, a counter line with the seconds so far repeats
    if re.match(r"^[\w.-]+ \(\w+\): (\d[\d,]* file\(s\) loaded|could not be read)", text):
        return "ingest"
    return None


def run_cli(root: Path, *args: str, echo: bool = True) -> dict:
    """`wastewatch --progress --config ... ARGS` in a fresh process: wall time, each phase's seconds and CPU
    seconds (from its progress lines' times and /proc samples), peak RSS and the step during which it was
    reached. Its stderr is passed on as it comes (`echo`), so a long run shows where it is."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "--progress", "--config", str(root / "wastewatch.yaml"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    samples: list[tuple[float, float, float]] = []  # (time, CPU seconds, VmHWM MB)
    stop = threading.Event()

    def sample() -> None:
        while True:
            got = _proc_sample(proc.pid)
            if got is not None:
                samples.append((time.perf_counter(), *got))
            if stop.wait(SAMPLE_S):
                return

    stdout: list[str] = []
    threads = [
        threading.Thread(target=sample, daemon=True),
        threading.Thread(target=lambda: stdout.append(proc.stdout.read()), daemon=True),  # type: ignore[union-attr]
    ]
    for th in threads:
        th.start()
    lines: list[tuple[float, str]] = []  # (when it came, the line)
    for line in proc.stderr:  # type: ignore[union-attr]
        lines.append((time.perf_counter(), line.rstrip("\n")))
        if echo:
            sys.stderr.write("    | " + line)
            sys.stderr.flush()
    proc.wait()
    stop.set()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stderr = "\n".join(text for _, text in lines)
    if proc.returncode != 0:
        raise SystemExit(f"wastewatch {' '.join(args)} exited {proc.returncode}:\n{stderr[-4000:]}")
    steps: dict[str, float] = {"ingest": 0.0, "marts": 0.0, "rules": 0.0, "report": 0.0}
    cpu: dict[str, float] = dict.fromkeys(steps, 0.0)
    marts: dict[str, float] = {}  # each mart's seconds: which of them grows with the history
    spans: list[tuple[float, float, str]] = []  # (start, end, the step's line) of every step timed
    by_step: dict[str, float] = {}  # CPU seconds of each source's ingest, mart, rule and report
    peak = 0.0
    for when, line in lines:
        if line.startswith("peak_rss_kb "):
            peak = int(line.split()[1]) / 1024
        m = SECONDS.search(line.strip())
        if not m or not line.startswith("  "):
            continue
        text = line.strip()
        kind = _kind(text)
        if not kind:
            continue
        took = float(m.group(1))
        steps[kind] += took
        cpu[kind] += _cpu_at(samples, when) - _cpu_at(samples, when - took)
        spans.append((when - took, when, text.split(":")[0]))
        step = text.split(" (")[0] if kind == "ingest" else text.split(":")[0]
        by_step[step] = by_step.get(step, 0.0) + _cpu_at(samples, when) - _cpu_at(samples, when - took)
        if kind == "marts":
            name = text.split()[1].rstrip(":")
            marts[name] = marts.get(name, 0.0) + took
    # where the peak fell: the first sample at the final high-water mark, and the step running then
    top = max((s[2] for s in samples), default=0.0)
    at = next((s[0] for s in samples if s[2] >= top), None)
    peak_at = next((name for a, b, name in spans if at is not None and a <= at <= b + SAMPLE_S), "the rest")
    return {
        "wall": wall,
        "steps": steps,
        "cpu": cpu,
        "cpu_total": cpu_total,
        "cpu_by_step": by_step,
        "marts": marts,
        "peak_rss_mb": peak,
        "peak_at": peak_at,
        "loadavg": (round(load, 2), *(round(x, 2) for x in os.getloadavg()[:2])),
        "stdout": "".join(stdout),
        "stderr": stderr,
    }


def _measured(r: dict) -> dict:
    """What a CLI run's JSON keeps: seconds, steps, the rest, CPU seconds (each step's, the rest's), peak RSS
    and the step it fell in, and the load average when it ended."""
    return {
        "seconds": round(r["wall"], 3),
        "steps": {k: round(v, 3) for k, v in r["steps"].items()},
        "rest": round(r["wall"] - sum(r["steps"].values()), 3),
        "cpu_s": round(r["cpu_total"], 3),
        "cpu_steps": {k: round(v, 3) for k, v in r["cpu"].items()},
        "cpu_rest": round(r["cpu_total"] - sum(r["cpu"].values()), 3),
        "cpu_by_step": {k: round(v, 3) for k, v in r["cpu_by_step"].items()},
        "marts": {k: round(v, 3) for k, v in r["marts"].items()},
        "peak_rss_mb": round(r["peak_rss_mb"], 1),
        "peak_at": r["peak_at"],
        "loadavg": r[
            "loadavg"
        ],  # the 1-minute load average as it began, and the 1- and 5-minute ones as it ended
    }


def check_week(root: Path, monday: datetime, idle: int) -> dict:
    """GPU001's waste found in the week of `monday` against the planted idle hosts' billed week."""
    con = duckdb.connect(str(root / "warehouse" / "wastewatch.duckdb"), read_only=True)
    found, findings = con.execute(
        "select coalesce(sum(estimated_waste), 0), count(*) from findings "
        "where rule_id = 'GPU001' and week_start = $w and status = 'waste'",
        {"w": monday.date()},
    ).fetchall()[0]
    con.close()
    found = Decimal(str(found)).quantize(Decimal("0.01"))
    planted = idle * 168 * RATE
    return {
        "week": _week_label(monday),
        "planted": float(planted),
        "found": float(found),
        "findings": findings,
        "ok": abs(found - planted) < Decimal("0.005"),
    }


def _check_line(c: dict, idle: int) -> str:
    return (
        f"GPU001 in {c['week']}: found USD {c['found']:,.2f} in {c['findings']} finding(s), planted USD "
        f"{c['planted']:,.2f} ({idle} idle host(s) x 168 h x {RATE})" + ("" if c["ok"] else "  MISMATCH")
    )


INPUTS = "inputs.json"  # what --reuse finds under --dir: the generation's arguments and what it wrote


def _inputs(
    args: argparse.Namespace, root: Path, hosts: int, idle: int, start: datetime
) -> tuple[dict, float, bool]:
    """The landing zone of one whole landing: generated, or with --reuse the one a run with the same
    arguments left under root (everything else there, the warehouse first, is deleted). (What was
    written, seconds spent generating, whether it was reused.)"""
    key = {
        "hosts": hosts,
        "idle": idle,
        "start": f"{start:%Y-%m-%d}",
        "weeks": args.weeks,
        "bill_lines": args.bill_lines,
        "objects": args.objects,
    }
    saved = root / INPUTS
    if args.reuse and saved.exists() and (root / "landing").is_dir():
        state = json.loads(saved.read_text(encoding="utf-8"))
        if state["key"] == key:
            for p in root.iterdir():
                if p.name not in ("landing", INPUTS):
                    shutil.rmtree(p) if p.is_dir() else p.unlink()
            return state["made"], 0.0, True
        print(f"--reuse: {saved} was generated with {state['key']}, not {key}: generating again", flush=True)
    for p in root.iterdir() if root.exists() else ():
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    t = time.perf_counter()
    made = generate(root, hosts, idle, start, args.weeks, args.bill_lines, args.objects)
    saved.write_text(json.dumps({"key": key, "made": made}), encoding="utf-8")
    return made, time.perf_counter() - t, False


def _phase_rows(week: dict, ref_s: float | None, label: str) -> list[list[str]]:
    """The table rows of one `run --week`: the whole, each step, the rest, with CPU seconds."""
    steps, cpu = week["steps"], week["cpu"]
    vs = (lambda v: f"{v / ref_s:.2f}x") if ref_s else (lambda v: "")
    return [
        [f"wastewatch run --week{label} (one process, as cron)", f"{week['wall']:.1f} s",
         f"{week['cpu_total']:.1f} s", vs(week["wall"]), f"{week['peak_rss_mb']:,.0f} MB"],
        *[[f"  {k}", f"{v:.1f} s", f"{cpu[k]:.1f} s", vs(v), ""] for k, v in steps.items()],
        ["  the rest (start-up, Dagster, checks, publish)", f"{week['wall'] - sum(steps.values()):.1f} s",
         f"{week['cpu_total'] - sum(cpu.values()):.1f} s", "", ""],
        [f"  peak RSS reached during: {week['peak_at']}; load average {week['loadavg'][0]:.1f} as it "
         f"began, {week['loadavg'][1]:.1f} as it ended", "", "", "", ""],
    ]  # fmt: skip


def run_whole(args: argparse.Namespace, root: Path, hosts: int, idle: int, start: datetime) -> dict:
    """Every week landed at once, the bare load, `run --week` for each week, then a no-op ingest (with
    --run-only, the `run --week`s alone)."""
    made, generate_s, reused = _inputs(args, root, hosts, idle, start)
    write_config(root, start, args.memory_limit)
    samples = hosts * GPUS_PER_HOST * 1440 * 7 * args.weeks
    print(
        f"{'reused' if reused else f'generated in {generate_s:.0f} s'}: {hosts * GPUS_PER_HOST:,} GPUs on "
        f"{hosts} hosts ({idle} idle), {args.weeks} week(s), {samples:,} samples in "
        f"{made['telemetry_files']:,} files ({made['telemetry_mb']:,.0f} MB), {made['bill_lines']:,} bill lines, "
        f"{args.objects:,} inventory objects",
        flush=True,
    )
    landed = _du(root / "landing")
    ref = None if args.run_only else reference(root, args.memory_limit, WHOLE_PATTERNS)
    runs, checks = [], []
    for w in range(args.weeks):
        monday = start + timedelta(weeks=w)
        runs.append(run_cli(root, "run", "--week", _week_label(monday)))
        checks.append(check_week(root, monday, idle))
    again = None if args.run_only else run_cli(root, "ingest")

    rows = []
    if ref is not None:
        rows += [
            ["DuckDB bare load of the same files (reference)", f"{ref['seconds']:.1f} s", f"{ref['cpu_s']:.1f} s", "1.00x", f"{ref['peak_rss_mb']:,.0f} MB"],
            *[[f"  {k}", f"{v:.1f} s", "", "", ""] for k, v in ref["phases"].items()],
        ]  # fmt: skip
    for w, week in enumerate(runs):
        rows += _phase_rows(
            week, ref["seconds"] if ref else None, "" if args.weeks == 1 else f" {checks[w]['week']}"
        )
    if again is not None:
        rows.append(["nightly re-run, nothing new (wastewatch ingest)", f"{again['wall']:.1f} s", f"{again['cpu_total']:.1f} s", "", f"{again['peak_rss_mb']:,.0f} MB"])  # fmt: skip
    print(markdown(["phase", "time", "CPU (user + sys)", "vs reference", "peak RSS"], rows))
    for c in checks:
        print(_check_line(c, idle))
    return {
        "generate_s": round(generate_s, 3),
        "generate_parts_s": {k: round(v, 3) for k, v in made["generate_s"].items()},
        "reused_inputs": reused,
        "samples": samples,
        "telemetry_files": made["telemetry_files"],
        "telemetry_mb": round(made["telemetry_mb"], 1),
        "bill_lines": made["bill_lines"],
        "reference": ref,
        "runs": [{**_measured(r), **c} for r, c in zip(runs, checks, strict=True)],
        "nights": [],
        "noop": _measured(again) if again is not None else None,
        "landed_mb_peak": round(landed / 1e6, 1),
        "ok": all(c["ok"] for c in checks),
    }


PROGRESS = "progress.json"
# what must be the same for a point to be carried on from its progress file
RESUMED_ARGS = (
    "gpus",
    "weeks",
    "week",
    "idle_hosts",
    "bill_lines",
    "objects",
    "memory_limit",
    "delete_landed",
)


def load_progress(root: Path, args: argparse.Namespace) -> dict | None:
    """The progress of an interrupted nightly point under root, checked against args and the code; None when
    there is none. A point measured by two versions of the code would measure neither."""
    path = root / PROGRESS
    if not path.exists():
        return None
    state = json.loads(path.read_text(encoding="utf-8"))
    if state["commit"] != _commit() or state["commit"].endswith("-dirty"):
        raise SystemExit(
            f"{path}: measured by {state['commit']}, this is {_commit()}: --resume needs the same clean checkout"
        )
    asked = {k: getattr(args, k) for k in RESUMED_ARGS}
    differ = [
        k for k in RESUMED_ARGS if k != "week" and asked[k] is not None and asked[k] != state["args"][k]
    ]
    if differ:
        raise SystemExit(f"{path}: --{differ[0].replace('_', '-')} was {state['args'][differ[0]]!r}")
    return state


def save_progress(root: Path, state: dict) -> None:
    tmp = root / f".{PROGRESS}.tmp"
    tmp.write_text(json.dumps(state), encoding="utf-8")
    tmp.replace(root / PROGRESS)


def run_nightly(
    args: argparse.Namespace, root: Path, hosts: int, idle: int, start: datetime, state: dict | None = None
) -> dict:
    """Night by night: the night's files, `wastewatch ingest`; after each week's last night, `run --week`.
    What is done is saved in root/progress.json after each step; `state` (that file) carries a point on
    from where it stopped: a night cut short is landed and ingested again."""
    land = root / "landing"
    if state is None:
        for sub in (
            "telemetry",
            "jobs",
            "billing",
            *(f"inventory/{b}" for b in ("bench-ckpt", *DATA_BUCKETS)),
        ):
            (land / sub).mkdir(parents=True, exist_ok=True)
        write_config(root, start, args.memory_limit)
        t = time.perf_counter()
        write_hosts(land, hosts)
        make_inventories(root, args.objects)
        state = {
            "args": {k: getattr(args, k) for k in RESUMED_ARGS},
            "commit": _commit(),
            "nights": [],
            "runs": [],
            "ref": None,
            "telemetry_files": 0,
            "telemetry_mb": 0.0,
            "bill_lines": 0,
            "landed_peak": 0,
            "generate_s": time.perf_counter() - t,
            "elapsed_s": 0.0,
            "resumed": 0,
        }
        save_progress(root, state)
    else:
        state["resumed"] += 1
        print(f"carried on from {root / PROGRESS}: {len(state['nights'])} night(s) done", flush=True)
    inventory_src = root / "inventory" / "landing" / "inventory"
    print(
        f"nightly landing: {hosts * GPUS_PER_HOST:,} GPUs on {hosts} hosts ({idle} idle), {args.weeks} week(s) "
        f"from {args.week}; {args.bill_lines:,} bill lines a week, {args.objects:,} inventory objects (weekly); "
        f"set-up {state['generate_s']:.0f} s",
        flush=True,
    )
    bill = Bill(land, start, args.weeks, hosts, args.bill_lines, nightly=True)
    con = _connect()
    nights, runs = state["nights"], state["runs"]
    began, before = time.perf_counter(), state["elapsed_s"]

    def save() -> None:
        state["elapsed_s"] = before + time.perf_counter() - began
        save_progress(root, state)

    days = 7 * args.weeks
    for day in range(days):
        night = start + timedelta(days=day)
        if day < len(nights):
            if args.delete_landed:  # cut short between the night's ingest and its deletion
                shutil.rmtree(land / "telemetry" / f"day={day:02d}", ignore_errors=True)
            if day % 7 == 6 and len(runs) <= day // 7:  # cut short between the night and the week's run
                run_week(root, start, day, idle, runs)
                save()
            continue
        t = time.perf_counter()
        shutil.rmtree(land / "telemetry" / f"day={day:02d}", ignore_errors=True)  # a cut-short night's
        files = write_telemetry_day(con, land, start, day, hosts, idle)
        (land / "jobs" / f"sacct_{night:%Y%m%d}.txt").write_text(
            jobs_text(start, range(day, day + 1), hosts, idle), encoding="utf-8"
        )
        # the month to date: from the period's first hour (or the bench's) to the end of this day
        month = night.replace(day=1)
        a, b = max(0, int((month - start).total_seconds()) // 3600), 24 * (day + 1)
        lines = bill.deliver(con, a, b, f"fleet-{night:%Y%m%d}")
        if day % 7 == 0:
            land_inventories(inventory_src, land, day // 7, night + timedelta(hours=1))
        gen = time.perf_counter() - t
        landed = _du(land)
        if day == days - 1:
            state["ref"] = reference(
                root,
                args.memory_limit,
                {
                    "telemetry": f"landing/telemetry/day={day:02d}/**/*.csv",
                    "bill": f"landing/billing/{EXPORT}/data/BILLING_PERIOD={night:%Y-%m}/*.parquet",
                    "inventories": f"landing/inventory/*/daily/data/*-w{day // 7:02d}-*.csv.gz"
                    if day % 7 == 0
                    else "",
                },
            )
        r = run_cli(root, "ingest")
        nights.append(
            {"date": f"{night:%Y-%m-%d}", "generate_s": round(gen, 3), "bill_lines": lines, **_measured(r)}
        )
        state["telemetry_files"] += len(files)
        state["telemetry_mb"] += sum(f.stat().st_size for f in files) / 1e6
        if day == days - 1 or _next_month(night) == night + timedelta(days=1):
            state["bill_lines"] += lines  # a period's last delivery before the bench ends or the month does
        state["generate_s"] += gen
        state["landed_peak"] = max(state["landed_peak"], landed)
        save()
        print(
            f"night {day + 1:3d}/{days} {night:%Y-%m-%d}: generated in {gen:5.1f} s ({lines:,} bill lines to date), "
            f"ingest {r['wall']:6.1f} s, peak RSS {r['peak_rss_mb']:,.0f} MB",
            flush=True,
        )
        if args.delete_landed:
            shutil.rmtree(land / "telemetry" / f"day={day:02d}")
        if day % 7 == 6:
            run_week(root, start, day, idle, runs)
            save()
    con.close()
    again = run_cli(root, "ingest")
    ref = state["ref"]

    rows = [
        [
            "DuckDB bare load of the last night's files (reference)",
            f"{ref['seconds']:.1f} s",
            "1.00x",
            f"{ref['peak_rss_mb']:,.0f} MB",
        ],
        *[[f"  {k}", f"{v:.1f} s", "", ""] for k, v in ref["phases"].items()],
    ]
    for w, week in enumerate(runs):
        ingests = [n["seconds"] for n in nights[7 * w : 7 * w + 7]]
        peaks = [n["peak_rss_mb"] for n in nights[7 * w : 7 * w + 7]]
        rows += [
            [
                f"{week['week']}: nightly ingest, median (min-max)",
                f"{sorted(ingests)[3]:.1f} s ({min(ingests):.1f}-{max(ingests):.1f})",
                "",
                f"{max(peaks):,.0f} MB",
            ],
            [
                f"{week['week']}: wastewatch run --week (ingest / marts / rules / report / rest)",
                f"{week['seconds']:.1f} s ("
                + " / ".join(f"{v:.1f}" for v in (*week["steps"].values(), week["rest"]))
                + ")",
                "",
                f"{week['peak_rss_mb']:,.0f} MB",
            ],
        ]
    rows.append(["last night: ingest", f"{nights[-1]['seconds']:.1f} s", f"{nights[-1]['seconds'] / ref['seconds']:.2f}x", ""])  # fmt: skip
    rows.append(["nightly re-run, nothing new (wastewatch ingest)", f"{again['wall']:.1f} s", "", f"{again['peak_rss_mb']:,.0f} MB"])  # fmt: skip
    print(markdown(["phase", "time", "vs reference", "peak RSS"], rows))
    for c in runs:
        print(_check_line(c, idle))
    return {
        "generate_s": round(state["generate_s"], 3),
        "samples": hosts * GPUS_PER_HOST * 1440 * days,
        "telemetry_files": state["telemetry_files"],
        "telemetry_mb": round(state["telemetry_mb"], 1),
        "bill_lines": state["bill_lines"],
        "reference": ref,
        "runs": runs,
        "nights": nights,
        "noop": _measured(again),
        "landed_mb_peak": round(state["landed_peak"] / 1e6, 1),
        "resumed": state["resumed"],
        "elapsed_before_s": round(before, 3),
        "ok": all(c["ok"] for c in runs),
    }


def run_week(root: Path, start: datetime, day: int, idle: int, runs: list[dict]) -> None:
    """`wastewatch run --week` of the week whose last night is `day`, measured and checked, into runs."""
    monday = start + timedelta(days=day - 6)
    week = run_cli(root, "run", "--week", _week_label(monday))
    runs.append({**_measured(week), **check_week(root, monday, idle)})
    print(
        f"run --week {runs[-1]['week']}: {week['wall']:.1f} s, peak RSS {week['peak_rss_mb']:,.0f} MB; "
        + _check_line(runs[-1], idle),
        flush=True,
    )


def _commit() -> str:
    here = Path(__file__).resolve().parent
    done = subprocess.run(
        ["git", "describe", "--always", "--dirty", "--abbrev=7"], capture_output=True, text=True, cwd=here
    )
    return done.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=4000)
    parser.add_argument("--weeks", type=int, default=1, help="consecutive ISO weeks from --week (default 1)")
    parser.add_argument(
        "--week",
        default=None,
        help="the first ISO week (default: the weeks end with the last week that has ended)",
    )
    parser.add_argument("--idle-hosts", type=int, default=None, help="default: 2 %% of the hosts, at least 1")
    parser.add_argument(
        "--bill-lines", type=int, default=None, help=f"bill lines a week (default {PER_GPU:,} x GPUs)"
    )
    parser.add_argument(
        "--objects", type=int, default=None, help=f"inventory objects (default {PER_GPU:,} x GPUs)"
    )
    parser.add_argument(
        "--landing",
        choices=("whole", "nightly"),
        default=None,
        help="land every week at once, or night by night with an ingest each night "
        "(default: whole for one week, nightly for more)",
    )
    parser.add_argument(
        "--delete-landed", action="store_true", help="nightly: delete each day's telemetry CSV once ingested"
    )
    parser.add_argument("--memory-limit", default="4GB")
    parser.add_argument("--dir", type=Path, default=Path("bench/out/fleet"))
    parser.add_argument("--keep", action="store_true", help="keep the generated files and the warehouse")
    parser.add_argument(
        "--resume",
        action="store_true",
        help=f"nightly: carry on an interrupted point from --dir/{PROGRESS} (same arguments, same commit)",
    )
    parser.add_argument("--json", type=Path, default=None, help="append the point's results as one JSON line")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help=f"whole landing: keep the generated inputs under --dir ({INPUTS}) and use them again when a "
        "later invocation asks for the same ones (the warehouse is made anew each time)",
    )
    parser.add_argument(
        "--run-only",
        action="store_true",
        help="whole landing: time `run --week` alone (no bare load, no nightly re-run)",
    )
    args = parser.parse_args()
    args.bill_lines = args.bill_lines if args.bill_lines is not None else PER_GPU * args.gpus
    args.objects = args.objects if args.objects is not None else PER_GPU * args.gpus
    args.landing = args.landing or ("whole" if args.weeks == 1 else "nightly")
    hosts = max(1, args.gpus // GPUS_PER_HOST)
    idle = args.idle_hosts if args.idle_hosts is not None else max(1, hosts // 50)
    root = args.dir.resolve()
    if (args.reuse or args.run_only) and args.landing != "whole":
        parser.error("--reuse and --run-only are for --landing whole")
    state = load_progress(root, args) if args.resume and args.landing == "nightly" else None
    if state is None and not args.reuse:
        shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    # `wastewatch run --week` refuses a week that has not started: the weeks must end by the current one
    current = _week_start(_week_label(datetime.now(UTC).replace(tzinfo=None)))
    if state is not None:
        args.week = args.week or state["args"]["week"]
        if args.week != state["args"]["week"]:
            parser.error(f"--week {args.week}: {root / PROGRESS} began at {state['args']['week']}")
    args.week = args.week or _week_label(current - timedelta(weeks=args.weeks))
    start = _week_start(args.week)
    if start + timedelta(weeks=args.weeks - 1) > current:
        parser.error(
            f"--week {args.week}: its {args.weeks} week(s) reach past the current week, which `run --week` refuses"
        )
    began = time.perf_counter()
    if args.landing == "whole":
        result = run_whole(args, root, hosts, idle, start)
    else:
        result = run_nightly(args, root, hosts, idle, start, state)
    warehouse_mb = _du(root / "warehouse") / 1e6
    elapsed = time.perf_counter() - began + result.get("elapsed_before_s", 0.0)
    print(
        f"warehouse {warehouse_mb:,.0f} MB, landed files at most {result['landed_mb_peak']:,.0f} MB; {elapsed:.0f} s in all"
    )
    if args.json:
        record = {
            "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "gpus": hosts * GPUS_PER_HOST,
            "hosts": hosts,
            "idle_hosts": idle,
            "weeks": args.weeks,
            "landing": args.landing,
            **result,
            "warehouse_mb": round(warehouse_mb, 1),
            "elapsed_s": round(elapsed, 3),
            "run_history": os.environ.get("WASTEWATCH_RUN_HISTORY", "on"),
            "cores": os.cpu_count(),
            "commit": _commit(),
            "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        with args.json.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
    if not args.keep and not args.reuse:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
