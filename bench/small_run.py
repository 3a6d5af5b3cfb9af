"""Benchmark: a small run (the 1,000-line FOCUS sample bill) against what it cannot go below.

    .venv/bin/python bench/small_run.py [--repeat 5] [--dir bench/out/small_run] [--keep]

Times, in `--repeat` rounds, each phase in a fresh process and in this order:

- the floors: `python -c "import duckdb"` (`import_duckdb`), `python -c "import dagster"`
  (`import_dagster`), importing Dagster and building wastewatch's definitions for the project's config
  (`definitions`: the floor while Dagster orchestrates), and DuckDB reading the sample bill itself,
  `count(*)` and sums over `read_csv` of the same file (`duckdb_read`, the reference of the ratios);
- `wastewatch --help` and `--version`;
- `wastewatch ingest` on a fresh warehouse and `wastewatch run --week W` on a fresh warehouse (W the last
  full ISO week of the bill), with run history as the CLI's default (the config's Dagster instance,
  SQLite, made afresh each time), then both again with WASTEWATCH_RUN_HISTORY=off (`_off`).

A phase's time is the wall clock of its whole process, interpreter start-up included, as a user waits
for it. Prints each phase's time (median, min-max), its ratio to `duckdb_read` and to `definitions`,
the seconds it takes above `definitions` (median of the rounds' differences), its CPU time (user +
system: what a loaded machine does not inflate as it does the wall clock) and its peak RSS. Not a
test: nothing asserts a time. Delete bench/out/ afterwards (done unless --keep).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import duckdb
from _stats import Result, Rounds, Spread, add_repeat, markdown, phase_result

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "tests" / "fixtures" / "billing" / "focus_sample_1.0.csv"
REFERENCE = "duckdb_read"
FLOOR = "definitions"

# what every phase's process prints last: its peak RSS (VmHWM), as JSON on its own line
PEAK = """
import json, re
hwm = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())
print(); print(json.dumps({"peak_rss_mb": int(hwm.group(1)) / 1024, "exit": globals().get("code") or 0}))
"""

CODE = {
    "import_duckdb": "import duckdb",
    "import_dagster": "import dagster",
    "definitions": """
import sys
from pathlib import Path
import dagster
from pipelines.definitions import defs
from pipelines.defs.partitions import definitions_for
with definitions_for(Path(sys.argv[1])):
    defs().resolve_job_def("nightly_ingest")
""",
    "duckdb_read": """
import sys, duckdb
con = duckdb.connect()
con.execute("select count(*), sum(BilledCost), sum(EffectiveCost) from read_csv($f)", {"f": sys.argv[2]}).fetchall()
""",
    # the CLI as `wastewatch ...` runs it; its exit code is kept for the check below
    "cli": """
import runpy, sys
sys.argv = ["wastewatch", *sys.argv[1:]]
try:
    runpy.run_module("pipelines.cli", run_name="__main__")
except SystemExit as exc:
    code = exc.code
""",
}


def run_phase(what: str, code: str, args: list[str], env: dict[str, str]) -> Result:
    """Run `code` in a fresh interpreter; its wall time and CPU time (user + system, its threads' and
    children's) measured here, and its peak RSS (its own)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code + PEAK, *args], capture_output=True, text=True, env=env, check=False
    )
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{what} failed:\n{out.stderr[-4000:]}")
    result = phase_result(out.stdout)
    result["seconds"] = seconds
    result["cpu"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    result["stdout"] = out.stdout
    return result


def fresh_project(root: Path) -> Path:
    """A project holding the sample bill, with no warehouse and no Dagster instance yet; its config."""
    shutil.rmtree(root, ignore_errors=True)
    (root / "landing" / "billing").mkdir(parents=True)
    shutil.copy(SAMPLE, root / "landing" / "billing" / SAMPLE.name)
    config = root / "wastewatch.yaml"
    config.write_text("sources:\n  - {name: focus, kind: focus, uri: landing/billing/}\n", encoding="utf-8")
    return config


def last_full_week() -> str:
    """The last ISO week the sample bill covers from Monday to Sunday."""
    con = duckdb.connect()
    (last,) = con.execute("select max(ChargePeriodStart) from read_csv($f)", {"f": str(SAMPLE)}).fetchall()[0]
    con.close()
    year, week, _ = (last.date() - timedelta(days=last.isoweekday())).isocalendar()
    return f"{year}-W{week:02d}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("bench/out/small_run"))
    parser.add_argument("--keep", action="store_true", help="keep the last round's project folders")
    add_repeat(parser)
    parser.set_defaults(repeat=5)
    args = parser.parse_args()
    root = args.dir.resolve()
    week = last_full_week()
    base = {k: v for k, v in os.environ.items() if k not in ("WASTEWATCH_CONFIG", "DAGSTER_HOME")}
    base["PYTHONPATH"] = os.pathsep.join([str(REPO), base.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    base.pop("WASTEWATCH_RUN_HISTORY", None)
    off = {**base, "WASTEWATCH_RUN_HISTORY": "off"}
    runs = {
        "ingest": (["ingest"], base),
        "run_week": (["run", "--week", week], base),
        "ingest_off": (["ingest"], off),
        "run_week_off": (["run", "--week", week], off),
    }
    rounds = Rounds(args.repeat, ref=REFERENCE)
    for _ in rounds:
        config = fresh_project(root / "floor")
        for phase in ("import_duckdb", "import_dagster", REFERENCE, FLOOR):
            rounds.record(phase, run_phase(phase, CODE[phase], [str(config), str(SAMPLE)], base))
        rounds.record("help", run_phase("help", CODE["cli"], ["--help"], base))
        rounds.record("version", run_phase("version", CODE["cli"], ["--version"], base))
        for phase, (command, env) in runs.items():
            config = fresh_project(root / phase)
            result = rounds.record(
                phase, run_phase(phase, CODE["cli"], ["-q", "--config", str(config), *command], env)
            )
            if result["exit"] != 0 or "1,000 rows in the table" not in result["stdout"]:
                raise SystemExit(
                    f"{phase} exited {result['exit']} or did not load the sample's 1,000 lines:\n{result['stdout'][-2000:]}"
                )
            history = (config.parent / ".dagster").is_dir()
            if history != (env is base):
                raise SystemExit(
                    f"{phase}: run history {'kept' if history else 'missing'} against its setting"
                )
    print()
    print(f"{SAMPLE.relative_to(REPO)}: 1,000 FOCUS lines; run --week {week}; {rounds.legend()}")
    phases = ["import_duckdb", "import_dagster", REFERENCE, FLOOR, "help", "version", *runs]

    def above_floor(phase: str) -> str:
        diffs = [r[phase]["seconds"] - r[FLOOR]["seconds"] for r in rounds.results]
        return f"{statistics.median(diffs):+.2f} s"

    print(
        markdown(
            ("phase", "time", f"x {REFERENCE}", f"x {FLOOR}", f"- {FLOOR}", "CPU", "peak RSS"),
            [
                (
                    p,
                    rounds.time(p, ".2f"),
                    rounds.ratio(p, REFERENCE, ".1f"),
                    rounds.ratio(p, FLOOR),
                    above_floor(p),
                    Spread.of(rounds.values(p, "cpu")).show(".2f", " s"),
                    rounds.peak(p),
                )
                for p in phases
            ],
        )
    )
    print(
        json.dumps({p: [rounds.seconds(p).median, Spread.of(rounds.values(p, "cpu")).median] for p in phases})
    )
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
