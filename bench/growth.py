"""Growth curves: bench/fleet_week.py over a grid of fleet sizes and weeks of history, resumable, with a chart.

    .venv/bin/python bench/growth.py [--gpus 500,1000,2000,4000,8000] [--weeks 1,4,12] [--weeks-gpus 1000]
                                     [--bill-lines N] [--objects N] [--memory-limit 4GB]
                                     [--results bench/out/growth.jsonl] [--dir bench/out/growth]
                                     [--svg docs/img/fleet_growth.svg] [--title TEXT] [--chart-only]
                                     [--window-hours 6] [--machine-gb 24] [--resume]

Two axes of points, each in a fresh `bench/fleet_week.py ... --json RESULTS` process:
- fleet size: one week landed whole (`--landing whole`) at each of `--gpus`, as bench/README's
  4,000-GPU runs;
- weeks of history: `--weeks-gpus` GPUs landed night by night (`--landing nightly --delete-landed`) for
  each of `--weeks`: every night's ingest and every week's `run --week` timed.
A point whose arguments already have a line in `--results` is skipped, so the grid can be resumed in a
later session (delete its line to measure it again; `--gpus ''` or `--weeks ''` leaves an axis out); a point
that fails is reported and the grid goes on. The chart and tables take every line of the results file
with this sizing (`--bill-lines`, `--objects`, `--memory-limit`), not only the points of this invocation.
A nightly point that is cut short (the 12-week one takes hours) is carried on from its last
finished night with `--resume` (fleet_week.py's: the same arguments and the same clean commit).
Each point's output is kept in `--dir`/<point>.log. `--bill-lines` and `--objects` are passed through
(default: fleet_week.py's, 2,500 a GPU, so they grow with the fleet).

Then, from every line of the results file, it writes the chart (`--svg`, an SVG written by hand: seconds
of each phase against GPUs on log-log axes with a linear reference line, and nightly ingest seconds
against weeks of history) and prints Markdown tables: each phase's cost per GPU-day (seconds / (GPUs x
days)), the log-log slope between successive points (flagged when above 1.15: faster than linear), and
how large a fleet one machine carries in a `--window-hours` window (a power law fitted to the points;
extrapolated beyond the largest point). Set `WASTEWATCH_RUN_HISTORY=off` to measure without Dagster's
run history, as the smoke runs do; the results record which.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from html import escape
from pathlib import Path
from statistics import median

from _stats import markdown
from fleet_week import PER_GPU

HERE = Path(__file__).resolve().parent
SUPERLINEAR = 1.15

# the fleet-size panel's series: (label, colour, seconds of a whole-landing record)
PHASES = [
    ("run --week (whole)", "#000000", lambda r: r["runs"][0]["seconds"]),
    ("  ingest", "#1f77b4", lambda r: r["runs"][0]["steps"]["ingest"]),
    ("  marts", "#2ca02c", lambda r: r["runs"][0]["steps"]["marts"]),
    (
        "  rules + report",
        "#9467bd",
        lambda r: r["runs"][0]["steps"]["rules"] + r["runs"][0]["steps"]["report"],
    ),
    ("  the rest", "#8c564b", lambda r: r["runs"][0]["rest"]),
    ("no-op ingest", "#d62728", lambda r: r["noop"]["seconds"]),
    ("bare load (reference)", "#7f7f7f", lambda r: r["reference"]["seconds"]),
    ("generation", "#bcbd22", lambda r: r["generate_s"]),
]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def sizing(args: argparse.Namespace, gpus: int) -> tuple[int, int]:
    """Bill lines a week and inventory objects at `gpus` GPUs."""
    return (
        args.bill_lines if args.bill_lines is not None else PER_GPU * gpus,
        args.objects if args.objects is not None else PER_GPU * gpus,
    )


def points(args: argparse.Namespace) -> list[dict]:
    """The grid: each point's name and fleet_week.py arguments."""
    out = []
    for gpus in args.gpus:
        out.append({"landing": "whole", "gpus": gpus, "weeks": 1})
    for weeks in args.weeks:
        out.append({"landing": "nightly", "gpus": args.weeks_gpus, "weeks": weeks})
    for p in out:
        p["bill_lines"], p["objects"] = sizing(args, p["gpus"])
        p["name"] = f"{p['landing']}-{p['gpus']}gpus-{p['weeks']}w"
    return out


def _key(landing: str, gpus: int, weeks: int, bill_lines: int, objects: int, memory_limit: str) -> tuple:
    return (landing, gpus, weeks, bill_lines, objects, memory_limit)


def record_key(r: dict) -> tuple:
    """A result's grid point: the GPUs asked for (fleet_week rounds them down to whole hosts of 8)."""
    a = r["args"]
    return _key(r["landing"], a["gpus"], r["weeks"], a["bill_lines"], a["objects"], a["memory_limit"])


def load(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_point(p: dict, args: argparse.Namespace) -> int:
    """fleet_week.py for one point, its output shown and kept in --dir/<name>.log; its exit code."""
    cmd = [
        sys.executable,
        str(HERE / "fleet_week.py"),
        "--gpus", str(p["gpus"]),
        "--weeks", str(p["weeks"]),
        "--landing", p["landing"],
        "--bill-lines", str(p["bill_lines"]),
        "--objects", str(p["objects"]),
        "--memory-limit", args.memory_limit,
        "--dir", str(args.dir / p["name"]),
        "--json", str(args.results),
        *(["--delete-landed"] if p["landing"] == "nightly" else []),
        *(["--resume"] if p["landing"] == "nightly" and args.resume else []),
    ]  # fmt: skip
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"== {p['name']}: {' '.join(cmd[1:])}", flush=True)
    with (args.dir / f"{p['name']}.log").open("w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if (
                not line.startswith("  ") and "dagster -" not in line
            ):  # the CLI's progress lines go to the log
                sys.stdout.write(line)
                sys.stdout.flush()
        return proc.wait()


# ---------------------------------------------------------------------------------------------- chart


def _log_ticks(lo: float, hi: float) -> list[float]:
    ticks = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0**e
            if lo <= v <= hi:
                ticks.append(v)
    return ticks


def _nice(v: float) -> str:
    return f"{v:,.0f}" if v == int(v) else f"{v:g}"


def _lin_ticks(hi: float, n: int = 5) -> list[float]:
    step = 10 ** math.floor(math.log10(hi / n)) if hi > 0 else 1
    for m in (1, 2, 5, 10):
        if hi / (step * m) <= n:
            step *= m
            break
    return [i * step for i in range(int(hi / step) + 2) if i * step <= hi * 1.0001]


class Panel:
    """A plotting area at (x0, y0) of w x h pixels with log or linear axes."""

    def __init__(self, x0: float, y0: float, w: float, h: float, xr, yr, xlog: bool, ylog: bool) -> None:
        self.x0, self.y0, self.w, self.h = x0, y0, w, h
        self.xr, self.yr, self.xlog, self.ylog = xr, yr, xlog, ylog

    def _f(self, v: float, r: tuple[float, float], log: bool) -> float:
        lo, hi = r
        if log:
            return (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        return (v - lo) / (hi - lo)

    def x(self, v: float) -> float:
        return self.x0 + self.w * self._f(v, self.xr, self.xlog)

    def y(self, v: float) -> float:
        return self.y0 + self.h * (1 - self._f(v, self.yr, self.ylog))

    def axes(
        self, xticks: list[float], yticks: list[float], xlabel: str, ylabel: str, title: str
    ) -> list[str]:
        out = [
            f'<rect x="{self.x0}" y="{self.y0}" width="{self.w}" height="{self.h}" fill="none" stroke="#444"/>',
            f'<text x="{self.x0 + self.w / 2}" y="{self.y0 - 12}" text-anchor="middle" font-weight="bold">'
            f"{escape(title)}</text>",
            f'<text x="{self.x0 + self.w / 2}" y="{self.y0 + self.h + 36}" text-anchor="middle">{escape(xlabel)}</text>',
            f'<text transform="translate({self.x0 - 48},{self.y0 + self.h / 2}) rotate(-90)" '
            f'text-anchor="middle">{escape(ylabel)}</text>',
        ]
        for t in xticks:
            x = self.x(t)
            out.append(
                f'<line x1="{x:.1f}" y1="{self.y0}" x2="{x:.1f}" y2="{self.y0 + self.h}" stroke="#eee"/>'
            )
            out.append(
                f'<text x="{x:.1f}" y="{self.y0 + self.h + 16}" text-anchor="middle">{_nice(t)}</text>'
            )
        for t in yticks:
            y = self.y(t)
            out.append(
                f'<line x1="{self.x0}" y1="{y:.1f}" x2="{self.x0 + self.w}" y2="{y:.1f}" stroke="#eee"/>'
            )
            out.append(f'<text x="{self.x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{_nice(t)}</text>')
        return out

    def series(
        self, xs: list[float], ys: list[float], colour: str, dash: str = "", marker: bool = True
    ) -> list[str]:
        pts = " ".join(f"{self.x(a):.1f},{self.y(b):.1f}" for a, b in zip(xs, ys, strict=True))
        out = []
        if len(xs) > 1:
            style = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.6"{style}/>')
        if marker:
            out += [
                f'<circle cx="{self.x(a):.1f}" cy="{self.y(b):.1f}" r="2.8" fill="{colour}"/>'
                for a, b in zip(xs, ys, strict=True)
            ]
        return out


def _legend(x: float, y: float, items: list[tuple[str, str, str]]) -> list[str]:
    out = []
    for i, (label, colour, dash) in enumerate(items):
        yy = y + 15 * i
        style = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<line x1="{x}" y1="{yy}" x2="{x + 18}" y2="{yy}" stroke="{colour}" stroke-width="2"{style}/>'
        )
        out.append(f'<text x="{x + 24}" y="{yy + 4}">{escape(label.strip())}</text>')
    return out


def chart(whole: list[dict], nightly: list[dict], title: str) -> str:
    """The SVG: seconds per phase against GPUs (log-log), nightly ingest seconds against weeks of history."""
    width, height = 1100, 500
    body = [
        f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{escape(title)}</text>'
    ]
    # fleet size, log-log
    if whole:
        gpus = [r["gpus"] for r in whole]
        values = [f(r) for r in whole for _, _, f in PHASES if f(r) > 0]
        xr = (min(gpus) / 1.25, max(gpus) * 1.25)
        yr = (min(values) / 1.5, max(values) * 2.5)
        p = Panel(80, 60, 420, 330, xr, yr, True, True)
        body += p.axes(
            gpus, _log_ticks(*yr), "GPUs (one week, landed whole)", "seconds", "Time per phase vs fleet size"
        )
        legend = []
        for label, colour, f in PHASES:
            xs = [r["gpus"] for r in whole if f(r) > 0]
            ys = [f(r) for r in whole if f(r) > 0]
            body += p.series(xs, ys, colour)
            legend.append((label, colour, ""))
        # linear growth through the whole run's smallest point
        g0, t0 = whole[0]["gpus"], PHASES[0][2](whole[0])
        body += p.series([g0, max(gpus)], [t0, t0 * max(gpus) / g0], "#000000", "5,4", marker=False)
        legend.append(("linear (slope 1) from run --week", "#000000", "5,4"))
        body += _legend(515, 70, legend)
    # weeks of history
    if nightly:
        longest = max(r["weeks"] for r in nightly)
        ys = [n["seconds"] for r in nightly for n in r["nights"]] + [
            w["seconds"] for r in nightly for w in r["runs"]
        ]
        yr = (0.0, max(ys) * 1.1)
        p = Panel(780, 60, 300, 330, (0.0, float(longest)), yr, False, False)
        gpus = nightly[0]["gpus"]
        body += p.axes(
            _lin_ticks(longest), _lin_ticks(yr[1]), "weeks of history", "seconds",
            f"Nightly ingest vs history ({gpus:,} GPUs)",
        )  # fmt: skip
        shades = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
        legend = []
        for i, r in enumerate(sorted(nightly, key=lambda r: -r["weeks"])):
            colour = shades[i % len(shades)]
            xs = [(k + 1) / 7 for k in range(len(r["nights"]))]
            body += p.series(xs, [n["seconds"] for n in r["nights"]], colour, marker=False)
            body += p.series(
                [k + 1 for k in range(len(r["runs"]))], [w["seconds"] for w in r["runs"]], colour, "2,3"
            )
            legend.append((f"{r['weeks']} wk: nightly ingest", colour, ""))
            legend.append((f"{r['weeks']} wk: run --week", colour, "2,3"))
        body += _legend(780, 445, legend[:4])
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">\n'
        f'<rect width="{width}" height="{height}" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n"
    )


# ---------------------------------------------------------------------------------------------- tables


def _slope(x0: float, y0: float, x1: float, y1: float) -> float | None:
    if min(x0, y0, x1, y1) <= 0 or x0 == x1:
        return None
    return math.log(y1 / y0) / math.log(x1 / x0)


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float] | None:
    """Least squares t = a x^k on log-log axes: (a, k)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx, my = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    if sxx == 0:
        return None
    k = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx
    return math.exp(my - k * mx), k


def fleet_table(whole: list[dict]) -> str:
    """Each phase's ms per GPU-day at each fleet size and the slope from the previous size."""
    header = ["phase", *[f"{r['gpus']:,} GPUs" for r in whole]]
    rows = []
    for label, _, f in PHASES:
        cells, flagged = [], False
        for i, r in enumerate(whole):
            cell = f"{1000 * f(r) / (r['gpus'] * 7):.2f}"
            if i:
                k = _slope(whole[i - 1]["gpus"], f(whole[i - 1]), r["gpus"], f(r))
                if k is not None:
                    cell += f" (k={k:.2f}{' **>1.15**' if k > SUPERLINEAR else ''})"
                    flagged |= k > SUPERLINEAR
            cells.append(cell)
        rows.append([label.strip() + (" ⚠" if flagged else ""), *cells])
    rows.append(["peak RSS of run --week, MB", *[f"{r['runs'][0]['peak_rss_mb']:,.0f}" for r in whole]])
    rows.append(["no-op ingest peak RSS, MB", *[f"{r['noop']['peak_rss_mb']:,.0f}" for r in whole]])
    rows.append(["landed files / warehouse, GB", *[f"{r['landed_mb_peak'] / 1e3:.1f} / {r['warehouse_mb'] / 1e3:.1f}" for r in whole]])  # fmt: skip
    return (
        "Cost per GPU-day (ms = 1000 x seconds / (GPUs x 7 days)); k = log-log slope of the phase's seconds "
        f"from the previous fleet size (above {SUPERLINEAR}: faster than linear)\n\n" + markdown(header, rows)
    )


def weeks_table(nightly: list[dict]) -> str:
    header = ["weeks", "nightly ingest, 1st week median", "last week median", "max night", "run --week median",
              "all nights + runs", "ms per GPU-day", "k vs weeks", "landed GB (max) / warehouse GB"]  # fmt: skip
    rows, prev = [], None
    for r in nightly:
        nights = [n["seconds"] for n in r["nights"]]
        total = sum(nights) + sum(w["seconds"] for w in r["runs"])
        k = _slope(prev[0], prev[1], r["weeks"], total) if prev else None
        rows.append(
            [
                str(r["weeks"]),
                f"{median(nights[:7]):.1f} s",
                f"{median(nights[-7:]):.1f} s",
                f"{max(nights):.1f} s",
                f"{median(w['seconds'] for w in r['runs']):.1f} s",
                f"{total:,.0f} s",
                f"{1000 * total / (r['gpus'] * 7 * r['weeks']):.2f}",
                "" if k is None else f"{k:.2f}" + (" **>1.15**" if k > SUPERLINEAR else ""),
                f"{r['landed_mb_peak'] / 1e3:.1f} / {r['warehouse_mb'] / 1e3:.1f}",
            ]
        )
        prev = (r["weeks"], total)
    return (
        f"Weeks of history at {nightly[0]['gpus']:,} GPUs, landed night by night (k: log-log slope of all "
        "nights and runs against weeks)\n\n" + markdown(header, rows)
    )


def _affine(xs: list[float], ys: list[float]) -> tuple[float, float] | None:
    """Least squares t = c + b x: (c, b)."""
    if len(xs) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - b * mx, b


def _limit(text: float) -> str:
    return "no limit (it does not grow)" if math.isinf(text) else f"about {text:,.0f} GPUs"


def window_lines(whole: list[dict], nightly: list[dict], hours: float, machine_gb: float) -> list[str]:
    """Up to what fleet size a `hours` window holds each measured night's work: a fixed cost plus a cost per
    GPU fitted over every point, and the power law of the two largest points (which a phase growing faster
    than linearly makes the smaller); both extrapolated beyond the largest point."""
    out = []
    xs = [r["gpus"] for r in whole]
    window = hours * 3600
    for label, f in (
        ("a whole week's `run --week`", lambda r: r["runs"][0]["seconds"]),
        ("the no-op nightly ingest", lambda r: r["noop"]["seconds"]),
    ):
        ys = [f(r) for r in whole]
        line, law = _affine(xs, ys), _fit(xs[-2:], ys[-2:])
        if not line or not law:
            continue
        (c, b), (a, k) = line, law
        by_line = (window - c) / b if b > 0 else math.inf
        by_law = (window / a) ** (1 / k) if k > 0 else math.inf
        out.append(
            f"- {label}: {c:,.1f} s + {1000 * b:,.2f} ms a GPU over {len(xs)} points, or {a:.3g} x GPUs^{k:.2f} s "
            f"from the two largest; a {hours:g}-hour window holds it up to {_limit(min(by_line, by_law))}"
            + (" (extrapolated)" if max(xs) < min(by_line, by_law) < math.inf else "")
        )
    fit = _affine(xs, [r["runs"][0]["peak_rss_mb"] for r in whole])
    if fit:
        c, b = fit
        limit = (machine_gb * 1024 - c) / b if b > 0 else math.inf
        out.append(
            f"- peak RSS of `run --week`: {c:,.0f} MB + {b:,.2f} MB a GPU; {machine_gb:g} GB at "
            f"{_limit(limit)} (DuckDB spills beyond its memory_limit, so RSS flattens; extrapolated)"
        )
    if nightly:
        r = max(nightly, key=lambda r: r["weeks"])
        worst = max(r["nights"][7 * w + 6]["seconds"] + w_run["seconds"] for w, w_run in enumerate(r["runs"]))
        out.append(
            f"- at {r['gpus']:,} GPUs the heaviest Sunday night (ingest, then the week's run) took {worst:,.0f} s "
            f"over {r['weeks']} weeks; scaled linearly it fits {hours:g} h up to about "
            f"{r['gpus'] * window / worst:,.0f} GPUs"
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=_ints, default=_ints("500,1000,2000,4000,8000"))
    parser.add_argument("--weeks", type=_ints, default=_ints("1,4,12"))
    parser.add_argument("--weeks-gpus", type=int, default=1000)
    parser.add_argument("--bill-lines", type=int, default=None, help=f"a week (default {PER_GPU:,} x GPUs)")
    parser.add_argument("--objects", type=int, default=None, help=f"default {PER_GPU:,} x GPUs")
    parser.add_argument("--memory-limit", default="4GB")
    parser.add_argument("--results", type=Path, default=HERE / "out" / "growth.jsonl")
    parser.add_argument("--dir", type=Path, default=HERE / "out" / "growth")
    parser.add_argument("--svg", type=Path, default=HERE.parent / "docs" / "img" / "fleet_growth.svg")
    parser.add_argument("--title", default="wastewatch: growth with fleet size and history (2 cores)")
    parser.add_argument("--chart-only", action="store_true", help="measure nothing; chart the results file")
    parser.add_argument("--window-hours", type=float, default=6.0)
    parser.add_argument("--machine-gb", type=float, default=24.0)
    parser.add_argument(
        "--resume", action="store_true", help="carry on a nightly point cut short (fleet_week.py --resume)"
    )
    args = parser.parse_args()

    grid = points(args)
    failed = []
    if not args.chart_only:
        for p in grid:
            done = {record_key(r) for r in load(args.results)}
            key = _key(p["landing"], p["gpus"], p["weeks"], p["bill_lines"], p["objects"], args.memory_limit)
            if key in done:
                print(f"== {p['name']}: in {args.results}, skipped", flush=True)
                continue
            code = run_point(p, args)
            if code != 0:
                failed.append(f"{p['name']} (exit {code})")
                print(f"== {p['name']} exited {code}; see {args.dir / (p['name'] + '.log')}", flush=True)

    def charted(r: dict) -> bool:
        """A result of this sizing (whatever the grid lists: a session may measure one point and chart all)."""
        asked = r["args"]["gpus"]
        size = _key(r["landing"], asked, r["weeks"], *sizing(args, asked), args.memory_limit)
        axis = r["weeks"] == 1 if r["landing"] == "whole" else asked == args.weeks_gpus
        return axis and record_key(r) == size

    latest = {record_key(r): r for r in load(args.results) if charted(r)}  # the last line of a point wins
    whole = sorted((r for r in latest.values() if r["landing"] == "whole"), key=lambda r: r["gpus"])
    nightly = sorted((r for r in latest.values() if r["landing"] == "nightly"), key=lambda r: r["weeks"])
    if not whole and not nightly:
        print("no results to chart")
        return 1
    args.svg.parent.mkdir(parents=True, exist_ok=True)
    args.svg.write_text(chart(whole, nightly, args.title), encoding="utf-8")
    print(f"\nchart: {args.svg}")
    commits = sorted({r["commit"] for r in latest.values()})
    dates = sorted({r["date"][:10] for r in latest.values()})
    history = sorted({r.get("run_history", "on") for r in latest.values()})
    print(
        f"results of {', '.join(commits)}, {' to '.join(dict.fromkeys([dates[0], dates[-1]]))}, run history {'/'.join(history)}\n"
    )
    if whole:
        print(fleet_table(whole) + "\n")
    if nightly:
        print(weeks_table(nightly) + "\n")
    for line in window_lines(whole, nightly, args.window_hours, args.machine_gb):
        print(line)
    bad = [f"{r['landing']} {r['gpus']} GPUs {r['weeks']} wk" for r in latest.values() if not r["ok"]]
    if bad:
        print("planted waste not found exactly in: " + ", ".join(bad))
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
