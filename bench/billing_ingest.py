"""Benchmark: billing ingestion of a CUR 2.0-like export against DuckDB's own load of the same files.

    .venv/bin/python bench/billing_ingest.py [--rows 10000000] [--files 10] [--dir bench/out/billing]
        [--shape cur2|focus] [--repeat 3] [--only parquet|csv] [--keep] [--reuse]

Generates a CUR 2.0 (AWS Data Exports) billing period of `--rows` hourly line items for 50k resources
with 2k tag combinations, once as snappy Parquet and once as gzip CSV (each `--files` parts plus the
`metadata/BILLING_PERIOD=.../*-Manifest.json`), then times `--repeat` rounds (default 3) per format of,
each phase in a fresh process and in this order:

- DuckDB's bare load of the same files into a table (`create table as select * from read_parquet(...)` /
  `read_csv(...)` of the .gz), the reference;
- `wastewatch ingest` (aws_cur2 reader: manifest, validation, FOCUS mapping, tags, reconciliation,
  ledger) with DuckDB's memory limit at 1 GB and 2 threads;
- the same ingest again on unchanged files;
- a tag-representation comparison (normalised tags as MAP vs as JSON text) on the Parquet files.

`--shape focus` writes the same line items as a narrow FOCUS 1.2 bill instead (24 columns, in AWS's FOCUS
export layout, read by the `focus` reader): the kind of bill the issue's reference numbers were taken
on, where decompression is a larger share of the work than for CUR 2.0's 59 columns.

Prints each phase's seconds and ratio to its reference (the bare load; the tag comparison's: the MAP
per line) as median (min-max) over the rounds, a ratio taken round by round, the same ratio of the phases'
thread-seconds (user + system CPU: steadier when other work shares the machine), and the highest round's peak
RSS and peak size of the CSV.gz parts wastewatch held inflated in memory (memfd files, which RSS does not
count; 0 when they went to disk). Not a test: nothing asserts a time.
Delete bench/out/ afterwards (the inputs are a few GB).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _stats import Rounds, Spread, add_repeat, markdown, run_code

PERIOD = "2026-11"
RESOURCES = 50_000
TAG_COMBINATIONS = 2_000

# row i -> resource i % 50k, hour i // 50k: its tag combination, instance type, rate and cost
LINE_ITEMS = """(
    select
        i,
        i % @RESOURCES@ as r,
        (i % @RESOURCES@) % @TAGS@ as c,
        timestamp '2026-11-01 00:00:00' + to_hours((i // @RESOURCES@)::int) as ts,
        ['p4d.24xlarge', 'p5.48xlarge', 'g5.xlarge', 'm5.large'][1 + (i % @RESOURCES@) % 4] as itype,
        round(0.5 + ((i % @RESOURCES@) % 4) * 9.75 + (i % 7) * 0.001, 6) as rate,
        case when i % 97 = 0 then round(rate * 0.08, 6) when i % 53 = 0 then -round(rate * 0.1, 6) else rate end
            as cost
    from range(@START@, @STOP@) as t(i)
)"""

# one CUR 2.0 line item per (resource, hour)
GENERATE_SQL = """
select
    'Anniversary' as bill_bill_type,
    'AWS' as bill_billing_entity,
    timestamp '2026-11-01 00:00:00' as bill_billing_period_start_date,
    timestamp '2026-12-01 00:00:00' as bill_billing_period_end_date,
    null::varchar as bill_invoice_id,
    'Amazon Web Services, Inc.' as bill_invoicing_entity,
    '111122223333' as bill_payer_account_id,
    'acme-payer' as bill_payer_account_name,
    md5(i::varchar) as identity_line_item_id,
    strftime(ts, '%Y-%m-%dT%H:%M:%SZ') || '/' || strftime(ts + interval 1 hour, '%Y-%m-%dT%H:%M:%SZ')
        as identity_time_interval,
    'us-east-1' || chr(97 + (r % 4)::int) as line_item_availability_zone,
    cost as line_item_blended_cost,
    rate::varchar as line_item_blended_rate,
    'USD' as line_item_currency_code,
    'Amazon Web Services, Inc.' as line_item_legal_entity,
    '$' || rate::varchar || ' per On Demand Linux ' || itype || ' Instance Hour' as line_item_line_item_description,
    case when i % 97 = 0 then 'Tax' when i % 53 = 0 then 'Credit' else 'Usage' end as line_item_line_item_type,
    cost as line_item_net_unblended_cost,
    rate::varchar as line_item_net_unblended_rate,
    1.0 as line_item_normalization_factor,
    1.0 as line_item_normalized_usage_amount,
    'RunInstances' as line_item_operation,
    'AmazonEC2' as line_item_product_code,
    'i-' || lpad(printf('%x', r), 17, '0') as line_item_resource_id,
    '' as line_item_tax_type,
    cost as line_item_unblended_cost,
    rate::varchar as line_item_unblended_rate,
    (100000000000 + (r % 40))::varchar as line_item_usage_account_id,
    'team-account-' || (r % 40)::varchar as line_item_usage_account_name,
    1.0 as line_item_usage_amount,
    ts + interval 1 hour as line_item_usage_end_date,
    ts as line_item_usage_start_date,
    'USE1-BoxUsage:' || itype as line_item_usage_type,
    'USD' as pricing_currency,
    round(rate * 1.1, 6) as pricing_public_on_demand_cost,
    round(rate * 1.1, 6)::varchar as pricing_public_on_demand_rate,
    'OnDemand' as pricing_purchase_option,
    'RC' || (r % 997)::varchar as pricing_rate_code,
    'OnDemand' as pricing_term,
    'Hrs' as pricing_unit,
    map {'product_name': 'Amazon Elastic Compute Cloud', 'tenancy': 'Shared', 'vcpu': '96'} as product,
    itype as product_instance_type,
    'Compute Instance' as product_product_family,
    'us-east-1' as product_region_code,
    'AmazonEC2' as product_servicecode,
    'SKU' || (r % 997)::varchar as product_sku,
    null::double as reservation_effective_cost,
    null::varchar as reservation_reservation_a_r_n,
    null::varchar as savings_plan_savings_plan_a_r_n,
    null::double as savings_plan_savings_plan_effective_cost,
    null::double as savings_plan_total_commitment_to_date,
    null::double as savings_plan_used_commitment,
    map {
        'user_team': 'team-' || (c % 20)::varchar, 'user_project': 'project-' || (c % 50)::varchar,
        'user_owner': 'owner-' || (c % 100)::varchar, 'user_cost_center': 'cc-' || c::varchar
    } as resource_tags,
    map {'environment': case when c % 3 = 0 then 'prod' else 'dev' end} as cost_category,
    null::varchar as split_line_item_parent_resource_id,
    null::double as split_line_item_split_cost,
    null::double as split_line_item_unused_cost
from @LINE_ITEMS@
"""

# --shape focus: a narrow FOCUS 1.2 bill (24 columns, as the reference measurement), the same
# resources, hours, costs and tag combinations, in the AWS Data Exports layout the `focus` reader follows
FOCUS_SQL = """
select
    'us-east-1' || chr(97 + (r % 4)::int) as AvailabilityZone,
    cost as BilledCost,
    '111122223333' as BillingAccountId,
    'acme-payer' as BillingAccountName,
    'USD' as BillingCurrency,
    timestamp '2026-12-01 00:00:00' as BillingPeriodEnd,
    timestamp '2026-11-01 00:00:00' as BillingPeriodStart,
    case when i % 97 = 0 then 'Tax' when i % 53 = 0 then 'Credit' else 'Usage' end as ChargeCategory,
    '$' || rate::varchar || ' per On Demand Linux ' || itype || ' Instance Hour' as ChargeDescription,
    ts + interval 1 hour as ChargePeriodEnd,
    ts as ChargePeriodStart,
    round(rate * 1.1, 6) as ContractedCost,
    cost as EffectiveCost,
    round(rate * 1.1, 6) as ListCost,
    1.0 as PricingQuantity,
    'Hours' as PricingUnit,
    'AWS' as ProviderName,
    'us-east-1' as RegionId,
    'i-' || lpad(printf('%x', r), 17, '0') as ResourceId,
    'Compute' as ServiceCategory,
    'Amazon Elastic Compute Cloud' as ServiceName,
    (100000000000 + (r % 40))::varchar as SubAccountId,
    map {
        'team': 'team-' || (c % 20)::varchar, 'project': 'project-' || (c % 50)::varchar,
        'owner': 'owner-' || (c % 100)::varchar, 'cost_center': 'cc-' || c::varchar
    } as Tags,
    itype as x_InstanceType
from @LINE_ITEMS@
"""
SHAPES = {  # shape -> (export name, generating SQL, wastewatch reader, map columns written as JSON in CSV)
    "cur2": ("cur2-bench", GENERATE_SQL, "aws_cur2", ("product", "resource_tags", "cost_category")),
    "focus": ("focus-bench", FOCUS_SQL, "focus", ("Tags",)),
}

# CSV: maps become JSON objects, as the CSV flavour of CUR 2.0 (and AWS's FOCUS export) writes them
CSV_SELECT = "select * replace ({maps}) from ({inner})"


def _gzip(path: Path) -> None:
    from isal import igzip

    with path.open("rb") as src, igzip.open(path.with_name(path.name + ".gz"), "wb", compresslevel=1) as dst:
        shutil.copyfileobj(src, dst, 1 << 22)
    path.unlink()


def generate(
    root: Path, rows: int, files: int, shape: str = "cur2", formats: tuple[str, ...] = ("parquet", "csv")
) -> dict[str, Path]:
    """Write the Parquet and the CSV.gz exports (or those of `formats`) under root; returns {format: export
    folder}."""
    import duckdb

    export_name, sql, _, maps = SHAPES[shape]
    as_json = ", ".join(f"to_json({m})::varchar as {m}" for m in maps)

    out: dict[str, Path] = {}
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'; set enable_progress_bar = false")
    per_file = -(-rows // files)
    for fmt in formats:
        export = root / fmt / export_name
        data = export / "data" / f"BILLING_PERIOD={PERIOD}"
        meta = export / "metadata" / f"BILLING_PERIOD={PERIOD}"
        data.mkdir(parents=True, exist_ok=True)
        meta.mkdir(parents=True, exist_ok=True)
        names = []
        plain: list[Path] = []
        for n in range(files):
            start, stop = n * per_file, min(rows, (n + 1) * per_file)
            inner = (
                sql.replace("@LINE_ITEMS@", LINE_ITEMS)
                .replace("@RESOURCES@", str(RESOURCES))
                .replace("@TAGS@", str(TAG_COMBINATIONS))
                .replace("@START@", str(start))
                .replace("@STOP@", str(stop))
            )
            if fmt == "parquet":
                name = f"{export_name}-{n + 1:05d}.snappy.parquet"
                con.execute(f"copy ({inner}) to '{data / name}' (format parquet, compression snappy)")
            else:
                name = f"{export_name}-{n + 1:05d}.csv.gz"
                target = data / f"{export_name}-{n + 1:05d}.csv"
                select = CSV_SELECT.format(maps=as_json, inner=inner)
                con.execute(f"copy ({select}) to '{target}' (format csv, header)")
                plain.append(target)
            names.append(name)
        if plain:
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(_gzip, plain))
        manifest = {
            "executionId": "bench-0001",
            "exportName": export_name,
            "billingPeriod": {"start": "2026-11-01T00:00:00.000Z", "end": "2026-12-01T00:00:00.000Z"},
            "dataFiles": [
                f"s3://bench-bucket/exports/{export_name}/data/BILLING_PERIOD={PERIOD}/{n}" for n in names
            ],
        }
        (meta / f"{export_name}-Manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        out[fmt] = export
    con.close()
    return out


PHASES = {
    "bare_parquet": """
import duckdb, glob
files = sorted(glob.glob(f"{export}/data/*/*.parquet"))
con = duckdb.connect(f"{work}/reference.duckdb")
con.execute("set memory_limit = '1GB'; set threads = 2")
con.execute("create or replace table t as select * from read_parquet($f)", {"f": files})
n = con.execute("select count(*) from t").fetchall()[0][0]
con.close()
""",
    "bare_csv_gz": """
import duckdb, glob
files = sorted(glob.glob(f"{export}/data/*/*.csv.gz"))
con = duckdb.connect(f"{work}/reference.duckdb")
con.execute("set memory_limit = '1GB'; set threads = 2")
con.execute("create or replace table t as select * from read_csv($f, header = true)", {"f": files})
n = con.execute("select count(*) from t").fetchall()[0][0]
con.close()
""",
    "wastewatch_ingest": """
from pipelines.config import load_config
from pipelines.warehouse import open_warehouse
from pipelines.ingest import ingest
cfg = load_config(f"{work}/wastewatch.yaml")
with open_warehouse(cfg) as con:
    report = ingest(con, cfg)
    assert not report.rejected, report.summary()
    n = report.rows_into("billing_line_items")
""",
    "wastewatch_rerun": """
from pipelines.config import load_config
from pipelines.warehouse import open_warehouse
from pipelines.ingest import ingest
cfg = load_config(f"{work}/wastewatch.yaml")
with open_warehouse(cfg) as con:
    report = ingest(con, cfg)
    assert not report.of("loaded") and not report.rejected, report.summary()
    n = len(report.of("unchanged"))
""",
    "wastewatch_parts": """
# the same ingest, each of its parts timed (wall and process thread-seconds) by wrapping the functions that
# do it; the background inflation of CSV.gz parts by its own thread's CPU time
import contextlib
from pipelines.config import load_config
from pipelines.warehouse import open_warehouse
from pipelines.ingest import ingest
from pipelines.ingest import ledger as L
from pipelines.ingest.billing import decompress as Z, focus as F, reader as R
from pipelines.ingest.modes import deliveries as D
breakdown = {}
def _add(name, wall, cpu):
    got = breakdown.setdefault(name, [0, 0.0, 0.0])
    got[0] += 1; got[1] += wall; got[2] += cpu
def _timed(name, fn, own_thread=False):
    def wrapper(*a, **k):
        t0, c0 = time.perf_counter(), (time.thread_time() if own_thread else sum(os.times()[:2]))
        try:
            return fn(*a, **k)
        finally:
            c1 = time.thread_time() if own_thread else sum(os.times()[:2])
            _add(name, time.perf_counter() - t0, c1 - c0)
    return wrapper
PARTS = [
    (R.BillingReader, "probe", "probe: each file opened, its header checked"),
    (D, "_checksums", "checksums of the files"),
    (Z.Prepared, "get", "waiting for a CSV.gz part to inflate"),
    (Z, "_gunzip_to_memory", "inflate: a CSV.gz part into memory (background thread)"),
    (Z, "_gunzip", "inflate: a CSV.gz part to disk (background thread)"),
    (R, "nul_problem", "NUL byte scan of the inflated text"),
    (R.BillingReader, "_extra_repeats", "x_extra sample (first 10,000 lines)"),
    (F.FocusReader, "_lookups", "lookups filled from a file's first lines (FOCUS)"),
    (R, "sets_and_sums", "the pass before the insert (x_extra sets, file sums)"),
    (R, "insert_lines", "the insert (casts, tag set id, x_extra, write)"),
    (R, "file_sums", "the pass after the insert (file sums)"),
    (R, "store_file_tag_sets", "tag sets: a file's new ones read again and stored"),
    (R, "check_landed", "checks on what landed (periods, duplicates, sums)"),
    (L, "record", "ledger rows"),
]
for obj, attr, name in PARTS:
    if hasattr(obj, attr):  # an older commit may lack a part (an A/B runs this code over both)
        setattr(obj, attr, _timed(name, getattr(obj, attr), own_thread=name.startswith("inflate")))
@contextlib.contextmanager
def _tx(con):
    con.execute("begin transaction")
    try:
        yield con
    except BaseException:
        con.execute("rollback")
        raise
    t0, c0 = time.perf_counter(), sum(os.times()[:2])
    con.execute("commit")
    _add("commit", time.perf_counter() - t0, sum(os.times()[:2]) - c0)
D.transaction = _tx
cfg = load_config(f"{work}/wastewatch.yaml")
warehouse = open_warehouse(cfg)
con = warehouse.__enter__()
report = ingest(con, cfg)
assert not report.rejected, report.summary()
n = report.rows_into("billing_line_items")
t0, c0 = time.perf_counter(), sum(os.times()[:2])
warehouse.__exit__(None, None, None)
_add("closing the warehouse (checkpoint)", time.perf_counter() - t0, sum(os.times()[:2]) - c0)
""",
    "tags_as_map": """
import duckdb, glob
from pipelines.warehouse import _configure
files = sorted(glob.glob(f"{export}/data/*/*.parquet"))[:1]  # one file (1 M lines): per-line variants are slow
con = duckdb.connect(f"{work}/tags.duckdb")
_configure(con)
con.execute("set memory_limit = '1GB'; set threads = 2")
con.execute("create or replace table t as select normalize_tags(to_json(resource_tags)::varchar) as tags from read_parquet($f)", {"f": files})
n = con.execute("select count(*) from t").fetchall()[0][0]
con.close()
""",
    "tags_as_json": """
import duckdb, glob
from pipelines.warehouse import _configure
files = sorted(glob.glob(f"{export}/data/*/*.parquet"))[:1]  # one file (1 M lines): per-line variants are slow
con = duckdb.connect(f"{work}/tags.duckdb")
_configure(con)
con.execute("set memory_limit = '1GB'; set threads = 2")
con.execute("create or replace table t as select to_json(normalize_tags(to_json(resource_tags)::varchar))::varchar as tags from read_parquet($f)", {"f": files})
n = con.execute("select count(*) from t").fetchall()[0][0]
con.close()
""",
    "tags_map_deduplicated": """
import duckdb, glob
from pipelines.warehouse import _configure
files = sorted(glob.glob(f"{export}/data/*/*.parquet"))[:1]  # one file (1 M lines): per-line variants are slow
con = duckdb.connect(f"{work}/tags.duckdb")
_configure(con)
con.execute("set memory_limit = '1GB'; set threads = 2")
con.execute('''create or replace table t as
    with src as (select to_json(resource_tags)::varchar as raw from read_parquet($f)),
    d as (select raw, normalize_tags(raw) as tags from (select distinct raw from src))
    select d.tags from src left join d on d.raw is not distinct from src.raw''', {"f": files})
n = con.execute("select count(*) from t").fetchall()[0][0]
con.close()
""",
}

# thread-seconds (user + system CPU of every thread of the phase process, the watcher's included): on a
# machine other work shares, they move far less than wall time does, and their ratio is printed too.
# peak RSS from the phase process's VmHWM: ru_maxrss is inherited from the parent across fork + exec, so
# after this script generated the files in-process (~0.6 GB) every phase reported at least that much
# and the peak of the memory files (memfd) holding inflated CSV.gz parts, which RSS does not count
RUNNER = """
import json, os, re, sys, threading, time
export, work = sys.argv[1], sys.argv[2]
held = [0]
def _watch():
    while True:
        files = {{}}  # by inode: DuckDB holds its own descriptors of the same memory file
        for fd in os.listdir("/proc/self/fd"):
            try:  # fstat first: a descriptor closed and reused in between fails the readlink check
                st = os.fstat(int(fd))
                if st.st_nlink == 0 and os.readlink(f"/proc/self/fd/{{fd}}").startswith("/memfd:"):
                    files[st.st_ino] = st.st_size
            except OSError:
                pass
        held[0] = max(held[0], sum(files.values()))
        time.sleep(0.05)
threading.Thread(target=_watch, daemon=True).start()
t, cpu = time.perf_counter(), os.times()
{body}
hwm = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())
end = os.times()
print(json.dumps({{"seconds": time.perf_counter() - t, "rows": n, "peak_rss_mb": int(hwm.group(1)) / 1024,
                  "memfd_mb": held[0] / 2**20, "cpu_s": end.user + end.system - cpu.user - cpu.system,
                  "parts": globals().get("breakdown")}}))
"""


def run_phase(name: str, export: Path, work: Path) -> dict[str, float]:
    code = RUNNER.format(body=PHASES[name])
    return run_code(f"phase {name}", code, str(export), str(work))


def _config(work: Path, export: Path, kind: str) -> None:
    work.mkdir(parents=True, exist_ok=True)
    for p in work.glob("*.duckdb*"):
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()
    (work / "wastewatch.yaml").write_text(
        "warehouse: warehouse.duckdb\n"
        "duckdb: {memory_limit: 1GB, threads: 2}\n"
        f"sources:\n  - {{name: bill, kind: {kind}, uri: '{export}'}}\n",
        encoding="utf-8",
    )


def _cpu_ratio(rounds: Rounds, phase: str, ref: str) -> str:
    """The phase's thread-seconds over its reference's, round by round: median (min-max)."""
    got = [
        r[phase]["cpu_s"] / r[ref]["cpu_s"]
        for r in rounds.results
        if phase in r and ref in r and r[ref]["cpu_s"]
    ]
    return Spread.of(got).show(".2f", "x") if got else ""


def parts_table(rounds: Rounds, bare: str) -> str:
    """The timed ingest's parts (`wastewatch_parts`): calls, wall and thread-seconds as median (min-max)
    over the rounds, and each median's share of the bare load's; `rest` is the ingest's wall time that no
    timed part covers (listing, planning, opening the warehouse). Inflation runs in background threads:
    its wall time overlaps the loads and is left out of the rest."""
    runs = [r for r in rounds.results if "wastewatch_parts" in r and bare in r]
    names: list[str] = []
    for r in runs:
        names += [n for n in r["wastewatch_parts"]["parts"] if n not in names]
    lines = []
    bare_wall = Spread.of(r[bare]["seconds"] for r in runs).median
    bare_cpu = Spread.of(r[bare]["cpu_s"] for r in runs).median
    lines.append(("DuckDB bare load (reference)", "1", f"{bare_wall:.2f}", f"{bare_cpu:.2f}", "100%", "100%"))

    def part(r: dict[str, Any], n: str, i: int) -> float:
        return float(r["wastewatch_parts"]["parts"].get(n, [0, 0.0, 0.0])[i])

    for n in names:
        wall = Spread.of(part(r, n, 1) for r in runs)
        cpu = Spread.of(part(r, n, 2) for r in runs)
        calls = int(Spread.of(part(r, n, 0) for r in runs).median)
        lines.append(
            (n, str(calls), wall.show(".2f"), cpu.show(".2f"),
             f"{wall.median / bare_wall:.0%}", f"{cpu.median / bare_cpu:.0%}")
        )  # fmt: skip

    def rest(r: dict[str, Any]) -> float:
        timed = sum(v[1] for k, v in r["wastewatch_parts"]["parts"].items() if not k.startswith("inflate"))
        return float(r["wastewatch_parts"]["seconds"]) - timed

    rest_s = Spread.of(rest(r) for r in runs)
    total = Spread.of(r["wastewatch_parts"]["seconds"] for r in runs)
    total_cpu = Spread.of(r["wastewatch_parts"]["cpu_s"] for r in runs)
    lines.append(
        (
            "rest (listing, planning, opening)",
            "",
            rest_s.show(".2f"),
            "",
            f"{rest_s.median / bare_wall:.0%}",
            "",
        )
    )
    lines.append(
        ("**the ingest, all of it**", "", total.show(".2f"), total_cpu.show(".2f"),
         f"{total.median / bare_wall:.0%}", f"{total_cpu.median / bare_cpu:.0%}")
    )  # fmt: skip
    return markdown(("part", "calls", "wall s", "thread-s", "wall vs bare", "thread-s vs bare"), lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--dir", type=Path, default=Path("bench/out/billing"))
    parser.add_argument("--keep", action="store_true", help="keep the generated inputs")
    parser.add_argument("--only", choices=("parquet", "csv"), help="one format only")
    parser.add_argument(
        "--shape",
        choices=tuple(SHAPES),
        default="cur2",
        help="cur2: the wide CUR 2.0 export (59 columns, the default); focus: a narrow FOCUS 1.2 bill (24)",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="reuse inputs generated by an earlier --keep run"
    )
    parser.add_argument(
        "--parts",
        action="store_true",
        help="also run the ingest with each of its parts timed and print them beside the bare load",
    )
    add_repeat(parser)  # the bare load varies by about 10 % from run to run on a small VM
    args = parser.parse_args()
    root = args.dir.resolve()
    export_name, _, kind, _ = SHAPES[args.shape]
    t = time.perf_counter()
    if args.reuse and all((root / fmt / export_name).is_dir() for fmt in ("parquet", "csv")):
        exports = {fmt: root / fmt / export_name for fmt in ("parquet", "csv")}
    else:
        exports = generate(root, args.rows, args.files, args.shape)
        print(
            f"generated {args.rows:,} line items x 2 formats in {time.perf_counter() - t:.1f} s under {root}"
        )
    table: list[tuple[str, ...]] = []
    part_tables: list[tuple[str, str]] = []
    for fmt, export in exports.items():
        if args.only and fmt != args.only:
            continue
        size = sum(p.stat().st_size for p in (export / "data").rglob("*") if p.is_file())
        work = root / f"work-{args.shape}-{fmt}"
        bare = "bare_parquet" if fmt == "parquet" else "bare_csv_gz"
        phases = {  # phase -> (label, its reference), in the order a round runs them
            bare: ("DuckDB bare load into a table (reference)", bare),
            "wastewatch_ingest": (f"wastewatch ingest ({kind})", bare),
            "wastewatch_rerun": ("wastewatch ingest again, files unchanged", bare),
        }
        if args.parts:
            phases["wastewatch_parts"] = ("wastewatch ingest, its parts timed (below)", bare)
        if fmt == "parquet" and args.shape == "cur2":  # the tag comparison reads CUR's resource_tags
            phases |= {
                "tags_as_map": ("tags (first file): normalise every line into a MAP", "tags_as_map"),
                "tags_as_json": ("tags (first file): normalise every line into JSON text", "tags_as_map"),
                "tags_map_deduplicated": (
                    "tags (first file): each distinct tag set once into a MAP, joined back",
                    "tags_as_map",
                ),
            }
        rounds = Rounds(args.repeat, ref=bare, label=f"[{fmt}] ")
        for _ in rounds:  # alternating, so a slow spell of the machine hits both
            _config(work, export, kind)
            for phase, (_, ref) in phases.items():
                if phase == "wastewatch_parts":  # a first load again, on a new warehouse
                    _config(work, export, kind)
                got = rounds.record(phase, run_phase(phase, export, work), ref=ref)
                print(f"{'':>40}thread-s {got['cpu_s']:8.2f}", flush=True)
        print(f"{fmt}: {size / 1e6:,.0f} MB in {args.files} files; {rounds.legend()}")
        if args.parts:
            part_tables.append((fmt, parts_table(rounds, bare)))
        table += [
            (
                fmt,
                label,
                rounds.time(phase),
                rounds.ratio(phase, ref),
                _cpu_ratio(rounds, phase, ref),
                rounds.peak(phase),
                rounds.peak(phase, "memfd_mb"),
            )
            for phase, (label, ref) in phases.items()
        ]
    print()
    print(
        markdown(
            (
                "format",
                "phase",
                "time",
                "vs reference",
                "thread-s vs reference",
                "peak RSS",
                "+ parts in memory",
            ),
            table,
            left=2,
        )
    )
    for fmt, text in part_tables:
        print(
            f"\n{fmt}: the ingest part by part (wall s and process thread-s, median (min-max) over the rounds)"
        )
        print(text)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
