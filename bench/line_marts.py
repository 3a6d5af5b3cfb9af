"""Benchmark: a night's bill line marts (the restated file's rows built again) against the whole bill.

    .venv/bin/python bench/line_marts.py --warehouse PATH [--memory-limit 4GB] [--repeat 3]

Measures a warehouse that holds a bill already (one bench/fleet_week.py kept with --keep, for instance: its
`warehouse/wastewatch.duckdb`), on a copy of it (so check `df -h`), timing `--repeat` rounds of, each in a
fresh process and in this order:

- `history`: `commitment_lines`, `transfer_lines` and `log_storage_lines` built from every line (their
  `int_mart_inputs` rows deleted: how a user forces a rebuild; what every night did before they were kept
  by file): the reference;
- `night`: what a night whose delivery restated the newest billing file builds: that file's rows (its
  `int_incremental_files` rows deleted), with the files' fingerprints computed as a night does.

Prints each phase's seconds, its ratio to the reference, its peak RSS and the files it built, and fails
unless both leave the three marts with the same rows (count and cost sums). Not a test: nothing asserts a
time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import duckdb
from _stats import Rounds, add_repeat, markdown, run_code

MARTS = ("commitment_lines", "transfer_lines", "log_storage_lines")

RUNNER = """
import json, re, sys, time
from pipelines.transform import build_mart_with_rollup
from pipelines.warehouse import connect
path, limit, forget = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
settings = {"memory_limit": limit, "threads": 2}
con = connect(path, settings=settings)
for statement, params in forget:
    con.execute(statement, params)
con.close()
t = time.perf_counter()
con = connect(path, settings=settings)
built, seconds = [], {}
for name in ("commitment_lines", "transfer_lines", "log_storage_lines"):
    s = time.perf_counter()
    _, stats = build_mart_with_rollup(con, name)
    seconds[name] = time.perf_counter() - s
    built += [f for st in stats for f in st.days_rebuilt]
total = time.perf_counter() - t
sums = [con.execute(f"select count(*), sum(effective_cost)::varchar from {n}").fetchall()[0] for n in
        ("commitment_lines", "transfer_lines", "log_storage_lines")]
con.close()
hwm = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())
print(json.dumps({"seconds": total, "marts": seconds, "sums": sums, "files": len(set(built)),
                  "peak_rss_mb": int(hwm.group(1)) / 1024}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", type=Path, required=True, help="a warehouse holding a bill (copied)")
    parser.add_argument("--memory-limit", default="4GB", help="DuckDB's, as the growth curves ran")
    add_repeat(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.warehouse.resolve().parent) as tmp:
        path = Path(tmp) / "warehouse.duckdb"
        shutil.copyfile(args.warehouse, path)
        con = duckdb.connect(str(path), read_only=True)
        newest, lines, files = con.execute(
            "select arg_max(x_file_id, charge_period_start), count(*), count(distinct x_file_id) "
            "from billing_lines"
        ).fetchall()[0]
        con.close()
        history = [("delete from int_mart_inputs where list_contains($m, mart)", {"m": list(MARTS)})]
        night = [("delete from int_incremental_files where file_id = $f", {"f": newest})]
        # the first build after an upgrade is a full one (the tables gain x_file_id): not measured
        run_code("the first build", RUNNER, str(path), args.memory_limit, json.dumps([]))
        rounds = Rounds(args.repeat, ref="history")
        for _ in rounds:
            whole = rounds.record(
                "history", run_code("history", RUNNER, str(path), args.memory_limit, json.dumps(history))
            )
            one = rounds.record(
                "night", run_code("night", RUNNER, str(path), args.memory_limit, json.dumps(night))
            )
            if whole["sums"] != one["sums"]:
                raise SystemExit(f"history and night left different tables: {whole['sums']} {one['sums']}")
    print(f"\n{lines:,} bill lines in {files} files; the night restates the newest")
    print(rounds.legend())
    print(
        markdown(
            (
                "phase",
                "time",
                "x history",
                "peak RSS",
                "files built",
                "commitment / transfer / log (last round)",
            ),
            [
                (
                    phase,
                    rounds.time(phase),
                    rounds.ratio(phase, "history") if phase == "night" else "1.00x",
                    rounds.peak(phase),
                    str(rounds.last(phase)["files"]),
                    " / ".join(f"{rounds.last(phase)['marts'][m]:.1f} s" for m in MARTS),
                )
                for phase in ("history", "night")
            ],
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
