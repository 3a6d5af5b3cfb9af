"""Benchmark: telemetry ingestion and gpu_hours roll-up (nvidia-smi CSV, dcgm-exporter scrapes) vs DuckDB's read_csv.

    .venv/bin/python bench/telemetry_ingest.py [--hosts 500] [--days 9] [--formats smi,dcgm]
                                               [--memory-limit 2GB] [--dir bench/out/telemetry] [--keep]
                                               [--reuse] [--no-rollup] [--repeat 3]

Generates one file per host and day (8 GPUs, one sample a minute: 500 hosts x 9 days = 51.8 M samples):
- smi: `nvidia-smi --query-gpu=... --format=csv` with header and units, `<day>/host=<host>/data_0.csv`;
- dcgm: dcgm-exporter scrapes with sample timestamps (GPU_UTIL, FB_USED, POWER_USAGE for every GPU, with
  `# TYPE` lines, dcgm-exporter's labels; lines not in scrape order), gzip-compressed,
  `<day>/host=<host>/data_0.prom.gz`.
Then, each in a fresh process with DuckDB's memory limit set (default 2 GB):
- `duckdb_read_csv`: DuckDB's own `create table as select * from read_csv(<all files>)` into a new file
  (nvidia-smi: auto-detected columns; scrapes: one VARCHAR column per line, the only way read_csv reads them);
- `wastewatch_ingest`: `pipelines.ingest.ingest` into a new warehouse (the ledger, validation, parsing,
  units, UTC, labels, one row per GPU per sample);
- `gpu_hours_rollup`: the GPU marts on that warehouse, in the order `build_marts` builds them:
  `resources` (which rolls `gpu_samples` up into `int_gpu_slices`, GPU x hour x job slice),
  `cost_hourly`, `gpu_job_hours` and `gpu_hours`; its rows are the samples rolled up, and it also
  reports the GPU-hours written and the time per mart. Part of every run (`--no-rollup` skips it).
These phases run in `--repeat` rounds per format (DuckDB's read first, then wastewatch into a fresh
warehouse). Prints wall time and the ratio to DuckDB's read of the same files in the same round as median
(min-max) over the rounds, samples/s at the median time, and each phase's peak RSS (the process's VmHWM;
the highest round's). Not a test: nothing here asserts a time. The generated input
(~10 GB of CSV, ~4 GB of gzip at full size) is deleted at the end unless --keep; `--reuse` times the
files an earlier --keep run left (same --hosts and --days; otherwise they are generated again). Check
`df -h` and free memory first, and run one benchmark at a time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _stats import Rounds, Spread, add_repeat, markdown, phase_result

START = "2026-11-23"
MARKER = ".bench.json"  # in landing/<format>/: the sizes a kept landing zone was generated for
SMI_HEADER = (
    "timestamp, name, pci.bus_id, uuid, index, utilization.gpu [%], utilization.memory [%], memory.total [MiB], "
    "memory.used [MiB], memory.free [MiB], power.draw [W], power.limit [W], temperature.gpu, "
    "clocks.current.sm [MHz], clocks.current.memory [MHz], pstate"
)

# one day of samples: (host, minute, gpu) with a busy/idle pattern per host and hour
GRID = """
create or replace temp table grid as
select
    'gpu-node-' || lpad(h::varchar, 3, '0') as host,
    m as minute,
    g as gpu,
    timestamp '{start}' + to_days($day) + to_minutes(m) as ts,
    (hash(h, $day, m // 60) % 100) < 60 as busy,
    (hash(h, $day, m, g) % 1000) / 1000.0 as u
from range($hosts) t(h), range(1440) mm(m), range(8) gg(g)
"""

SMI_LINES = """
select host,
    strftime(ts + to_milliseconds(310 + 11 * gpu), '%Y/%m/%d %H:%M:%S.%g')
    || ', NVIDIA H100 80GB HBM3, 00000000:' || printf('%02X', 24 + gpu * 17) || ':00.0'
    || ', GPU-' || substr(md5(host || gpu::varchar), 1, 8) || '-' || substr(md5(host || gpu::varchar), 9, 4)
    || '-' || substr(md5(host || gpu::varchar), 13, 4) || '-' || substr(md5(host || gpu::varchar), 17, 4)
    || '-' || substr(md5(host || gpu::varchar), 21, 12)
    || ', ' || gpu::varchar
    || ', ' || (case when busy then 70 + (u * 29)::int else 0 end)::varchar || ' %'
    || ', ' || (case when busy then 30 + (u * 20)::int else 0 end)::varchar || ' %'
    || ', 81559 MiB'
    || ', ' || (case when busy then 60000 + (u * 9000)::int else 4 end)::varchar || ' MiB'
    || ', ' || (case when busy then 21559 - (u * 9000)::int else 81555 end)::varchar || ' MiB'
    || ', ' || printf('%.2f', case when busy then 450 + u * 220 else 70 + u * 4 end) || ' W'
    || ', 700.00 W'
    || ', ' || (case when busy then 60 + (u * 15)::int else 31 end)::varchar
    || ', ' || (case when busy then 1980 else 345 end)::varchar || ' MHz'
    || ', 2619 MHz, P0' as line
from grid
"""

DCGM_LABELS = """'{gpu="' || gpu::varchar || '",UUID="GPU-' || substr(md5(host || gpu::varchar), 1, 8) || '-'
    || substr(md5(host || gpu::varchar), 9, 4) || '-' || substr(md5(host || gpu::varchar), 13, 4) || '-'
    || substr(md5(host || gpu::varchar), 17, 4) || '-' || substr(md5(host || gpu::varchar), 21, 12)
    || '",pci_bus_id="00000000:' || printf('%02X', 24 + gpu * 17) || ':00.0",device="nvidia' || gpu::varchar
    || '",modelName="NVIDIA H100 80GB HBM3",Hostname="' || host || '",DCGM_FI_DRIVER_VERSION="550.54.15"}'"""

DCGM_LINES = """
with metrics(k, name) as (values (0, 'DCGM_FI_DEV_GPU_UTIL'), (1, 'DCGM_FI_DEV_FB_USED'), (2, 'DCGM_FI_DEV_POWER_USAGE')),
samples as (
    select host, minute, k, 1 as kind, gpu,
        name || $LABELS || ' ' || case k
            when 0 then (case when busy then 70 + (u * 29)::int else 0 end)::varchar
            when 1 then (case when busy then 60000 + (u * 9000)::int else 4 end)::varchar
            else printf('%.3f', case when busy then 450 + u * 220 else 70 + u * 4 end)
        end || ' ' || (epoch_ms(ts) + 310)::varchar as line
    from grid, metrics
),
comments as (
    select host, minute, k, 0 as kind, -1 as gpu, '# TYPE ' || name || ' gauge' as line
    from grid, metrics
    where gpu = 0
)
-- no ORDER BY: sorting 20 M lines a day costs more than the whole read; line order does not matter
select host, line from (select * from samples union all select * from comments)
""".replace("$LABELS", DCGM_LABELS)

PHASES = {
    "duckdb_read_csv": """
import duckdb, glob
files = sorted(glob.glob(f"{root}/landing/{fmt}/**/*.{ext}", recursive=True))
con = duckdb.connect(f"{root}/reference.duckdb")
con.execute(f"set memory_limit = '{memory_limit}'")
if fmt == "smi":
    con.execute("create or replace table t as select * from read_csv($f)", {"f": files})
else:
    con.execute("create or replace table t as select * from read_csv($f, columns = {'line': 'VARCHAR'}, header = false, "
                "delim = '\\x1f', quote = '', escape = '', auto_detect = false)", {"f": files})
n = con.execute("select count(*) from t").fetchall()[0][0]
con.close()
""",
    "wastewatch_ingest": """
from pipelines.config import load_config
from pipelines.warehouse import connect
from pipelines.ingest import ingest
cfg = load_config(f"{root}/wastewatch_{fmt}.yaml")
con = connect(cfg.warehouse_path)
con.execute(f"set memory_limit = '{memory_limit}'")
report = ingest(con, cfg)
assert not report.rejected, report.summary()
n = report.rows_into("gpu_samples")
con.close()
""",
    "gpu_hours_rollup": """
from pipelines.config import load_config
from pipelines.warehouse import connect
from pipelines.transform import build_mart
cfg = load_config(f"{root}/wastewatch_{fmt}.yaml")
con = connect(cfg.warehouse_path)
con.execute(f"set memory_limit = '{memory_limit}'")
for mart in ("resources", "cost_hourly", "gpu_job_hours", "gpu_hours"):
    m0 = time.perf_counter()
    build_mart(con, mart)
    extra[mart + "_s"] = round(time.perf_counter() - m0, 2)
n, extra["gpu_hours"] = con.execute("select coalesce(sum(samples), 0), count(*) from gpu_hours").fetchall()[0]
con.close()
""",
}

# peak RSS from VmHWM: unlike ru_maxrss, it is not inherited from the parent across fork + exec
RUNNER = """
import json, re, sys, time
root, fmt, ext, memory_limit = sys.argv[1:5]
extra = {{}}
t = time.perf_counter()  # every phase is timed the same way: imports, connect and work
{body}
seconds = time.perf_counter() - t
hwm = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())
print(json.dumps({{"seconds": seconds, "rows": int(n), "extra": extra, "peak_rss_mb": int(hwm.group(1)) / 1024}}))
"""


def run_phase(name: str, root: Path, fmt: str, memory_limit: str) -> dict[str, float]:
    code = RUNNER.format(body=PHASES[name])
    ext = "csv" if fmt == "smi" else "prom.gz"
    out = subprocess.run(
        [sys.executable, "-c", code, str(root), fmt, ext, memory_limit],
        check=True,
        capture_output=True,
        text=True,
    )
    return phase_result(out.stdout)


def generate(root: Path, fmt: str, hosts: int, days: int) -> tuple[int, float]:
    """Write the landing zone for one format; returns (files, MB)."""
    import duckdb

    folder = root / "landing" / fmt
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    con.execute("set preserve_insertion_order = true")
    for day in range(days):
        con.execute(GRID.format(start=START), {"day": day, "hosts": hosts})
        target = folder / f"day={day:02d}"
        if fmt == "smi":
            con.execute(
                f"copy ({SMI_LINES}) to '{target}' (format csv, header false, quote '', escape '', "  # noqa: S608 - our constants
                "delimiter '\t', partition_by (host))"
            )
        else:
            con.execute(
                f"copy ({DCGM_LINES}) to '{target}' (format csv, header false, quote '', escape '', "  # noqa: S608 - our constants
                "delimiter '\t', partition_by (host), compression gzip, file_extension 'prom.gz')"
            )
    con.close()
    files = sorted(folder.rglob("*.csv" if fmt == "smi" else "*.prom.gz"))
    if fmt == "smi":  # nvidia-smi writes its header first: prepend it
        for f in files:
            tmp = f.with_suffix(".tmp")
            with tmp.open("wb") as out, f.open("rb") as src:
                out.write((SMI_HEADER + "\n").encode())
                shutil.copyfileobj(src, out, 1 << 20)
            tmp.replace(f)
    write_config(root, fmt)
    mb = sum(f.stat().st_size for f in files) / 1e6
    # what --reuse checks: the files of a kept run are reused only for the same sizes
    (folder / MARKER).write_text(json.dumps({"hosts": hosts, "days": days, "files": len(files), "mb": mb}))
    return len(files), mb


def write_config(root: Path, fmt: str) -> None:
    ext = "csv" if fmt == "smi" else "prom.gz"
    (root / f"wastewatch_{fmt}.yaml").write_text(
        f"warehouse: warehouse_{fmt}/wastewatch.duckdb\n"
        "sources:\n"
        f"  - {{name: {fmt}, kind: {'nvidia_smi' if fmt == 'smi' else 'dcgm'}, "
        f"uri: 'landing/{fmt}/**/*.{ext}', options: {{host_pattern: 'host=(?P<host>[^/]+)'}}}}\n",
        encoding="utf-8",
    )


def reusable(root: Path, fmt: str, hosts: int, days: int) -> tuple[int, float] | None:
    """(files, MB) of the landing zone a --keep run left for these sizes, or None when there is none."""
    marker = root / "landing" / fmt / MARKER
    try:
        kept = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    ext = "csv" if fmt == "smi" else "prom.gz"
    files = list((root / "landing" / fmt).rglob(f"*.{ext}"))
    if (kept.get("hosts"), kept.get("days"), kept.get("files")) != (hosts, days, len(files)):
        return None
    write_config(root, fmt)
    return len(files), sum(f.stat().st_size for f in files) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--days", type=int, default=9)
    parser.add_argument("--formats", default="smi,dcgm")
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--dir", type=Path, default=Path("bench/out/telemetry"))
    parser.add_argument("--keep", action="store_true", help="keep the generated files and warehouses")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="time the files an earlier --keep run left (same --hosts/--days) instead of generating them",
    )
    parser.add_argument("--no-rollup", action="store_true", help="skip the gpu_hours roll-up phase")
    parser.add_argument("--rollup", action="store_true", help=argparse.SUPPRESS)  # the default now
    add_repeat(parser)
    args = parser.parse_args()
    root = args.dir.resolve()
    root.mkdir(parents=True, exist_ok=True)
    samples = args.hosts * args.days * 1440 * 8
    print(f"{args.hosts} hosts x 8 GPUs x {args.days} days at 1 sample/min = {samples:,} samples per format")
    print(f"DuckDB memory_limit {args.memory_limit} in every phase; each phase a fresh process")
    phases = ["duckdb_read_csv", "wastewatch_ingest"] + ([] if args.no_rollup else ["gpu_hours_rollup"])
    try:
        for fmt in args.formats.split(","):
            for stale in (root / f"warehouse_{fmt}", root / "reference.duckdb"):
                shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink(missing_ok=True)
            t = time.perf_counter()
            kept = reusable(root, fmt, args.hosts, args.days) if args.reuse else None
            if kept is not None:
                n_files, mb = kept
                print(
                    f"\n[{fmt}] {n_files:,} files, {mb:,.0f} MB on disk (reused from an earlier --keep run)"
                )
            else:
                if args.reuse:
                    print(f"\n[{fmt}] nothing to reuse for {args.hosts} hosts x {args.days} days: generating")
                n_files, mb = generate(root, fmt, args.hosts, args.days)
                print(
                    f"\n[{fmt}] {n_files:,} files, {mb:,.0f} MB on disk "
                    f"(generated in {time.perf_counter() - t:.0f} s)"
                )
            rounds = Rounds(args.repeat, ref="duckdb_read_csv", label=f"  [{fmt}] ")
            for _ in rounds:  # DuckDB's read first, then wastewatch into a fresh warehouse
                shutil.rmtree(root / f"warehouse_{fmt}", ignore_errors=True)
                (root / "reference.duckdb").unlink(missing_ok=True)
                for name in phases:
                    rounds.record(name, run_phase(name, root, fmt, args.memory_limit))
            print(f"\n[{fmt}] {rounds.legend()}")
            print(
                markdown(
                    ("phase", "time", "rows", "rows/s", "vs read_csv", "peak RSS"),
                    (
                        (
                            name,
                            rounds.time(name),
                            f"{rounds.last(name)['rows']:,}",
                            rounds.rate(name),
                            rounds.ratio(name, "duckdb_read_csv"),
                            rounds.peak(name),
                        )
                        for name in phases
                    ),
                )
            )
            if "gpu_hours_rollup" in phases:
                r = rounds.last("gpu_hours_rollup")
                runs = [x["gpu_hours_rollup"] for x in rounds.results]
                marts = ", ".join(
                    f"{k[:-2]} {Spread.of(x['extra'][k] for x in runs).show('.2f', ' s')}"
                    for k in r["extra"]
                    if k.endswith("_s")
                )
                per_day = Spread.of(x["seconds"] / args.days for x in runs).show(".2f", " s")
                print(
                    f"roll-up: {r['extra']['gpu_hours']:,} GPU-hours from {r['rows']:,} samples ({marts}); "
                    f"{per_day} per day of {args.hosts * 8:,} GPUs"
                )
            (root / "reference.duckdb").unlink(missing_ok=True)
            if not args.keep:
                shutil.rmtree(root / "landing" / fmt, ignore_errors=True)
                shutil.rmtree(root / f"warehouse_{fmt}", ignore_errors=True)
    finally:
        if not args.keep:
            for fmt in args.formats.split(","):
                shutil.rmtree(root / "landing" / fmt, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
