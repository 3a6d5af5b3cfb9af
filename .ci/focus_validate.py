"""Run the FinOps Foundation's focus-validator over the FOCUS export of every billing fixture.

Each fixture in tests/fixtures/billing is ingested by its reader into a warehouse of its own, exported with
`export_focus` (Parquet, one file per billing period), and each file is checked by `focus-validator
--validate-version 1.2.0.1 --block-download` from its own virtual environment (make focus-validate builds it;
the validator opens its currency list by a path relative to its package folder, so it runs from there).

A failure is allowed only when the allow-list (.ci/focus_validator_allowlist.csv; docs/billing.md shows it)
names its rule for that fixture (a pattern: `aws/*`, or `*` for every fixture); a composite rule ("AND failed - failed child
rules: [...]") is allowed when every child it names is. Exit 1 on any other failure, and when the validator
does not run; exit 0 otherwise. Prints one summary line per file, then the failures.

    .venv/bin/python .ci/focus_validate.py --validator .focus-venv/bin/focus-validator
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipelines.config import load_config  # noqa: E402
from pipelines.export.focus import export_focus  # noqa: E402
from pipelines.ingest import ingest  # noqa: E402
from pipelines.warehouse import connect  # noqa: E402

BILLING = REPO / "tests" / "fixtures" / "billing"
ALLOWLIST = REPO / ".ci" / "focus_validator_allowlist.csv"
VERSION = "1.2.0.1"
SUMMARY = re.compile(r"Total: (\d+) \| Pass: (\d+) \| Fail: (\d+) \| Skipped: (\d+)")
FAILED = re.compile(
    r"^\S+ (?P<rule>[A-Za-z]+-[A-Z]-\d{3}-[A-Z]): FAIL\s+\(violations=(?P<n>\d+), msg=(?P<msg>.*)\)$"
)
CHILDREN = re.compile(r"failed child rules: \[([^\]]*)\]")
# rejected by their reader by design (impossible timestamps; tests/ingest/billing/test_samples.py): not exported
REJECTED_BY_DESIGN = {
    "commitment_discount_purchase_scenario_2.csv",
    "commitment_discount_purchase_scenario_3.csv",
}


@dataclass(frozen=True)
class Fixture:
    name: str  # as the allow-list names it: the path under tests/fixtures/billing
    kind: str
    paths: tuple[Path, ...]
    options: str = ""
    currency: str = ""


@dataclass
class Outcome:
    fixture: str
    file: str
    summary: str = ""
    failures: dict[str, tuple[int, str]] = field(default_factory=dict)  # rule -> (violations, message)
    problem: str = ""  # the validator did not run, or the fixture did not load


def fixtures() -> list[Fixture]:
    """Every billing fixture a reader loads (the OCI native report and the spec's two examples with impossible
    timestamps are rejected by design and tested so elsewhere; FocusCost_1.2-preview.json is metadata)."""
    out: list[Fixture] = [Fixture("focus_sample_1.0.csv", "focus", (BILLING / "focus_sample_1.0.csv",))]
    for p in sorted((BILLING / "focus-spec").glob("*.csv")):
        if p.name in REJECTED_BY_DESIGN:
            continue
        out.append(Fixture(f"focus-spec/{p.name}", "focus", (p,), currency="USD"))
    for p in sorted((BILLING / "aws").glob("*.csv")):
        out.append(Fixture(f"aws/{p.name}", "aws_cur", (p,)))
    out.append(
        Fixture("aws/legacy_cur_bucket_layout", "aws_cur", (BILLING / "aws" / "legacy_cur_bucket_layout",))
    )
    for p in sorted((BILLING / "azure").glob("*.csv")):
        options = ", options: {dataset: actual}" if "Actual" in p.name else ""
        out.append(Fixture(f"azure/{p.name}", "azure", (p,), options=options))
    for p in sorted((BILLING / "gcp").glob("*.csv")):
        out.append(Fixture(f"gcp/{p.name}", "gcp", (p,)))
    return out


def load_allowlist(path: Path) -> dict[tuple[str, str], str]:
    """(fixture or *, rule id) -> reason; a row without a reason is an error."""
    allowed: dict[tuple[str, str], str] = {}
    with path.open(newline="", encoding="utf-8") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            if not (row.get("rule_id") and row.get("fixture") and (row.get("reason") or "").strip()):
                raise SystemExit(f"error: {path}:{line}: every row needs fixture, rule_id and reason")
            allowed[(row["fixture"], row["rule_id"])] = row["reason"].strip()
    return allowed


def export_fixture(fx: Fixture, work: Path) -> tuple[list[Path], str]:
    """Ingest the fixture into a project under `work` and export it; the Parquet files, or a problem."""
    landing = work / "landing"
    landing.mkdir(parents=True)
    for p in fx.paths:
        if p.is_dir():
            shutil.copytree(p, landing / p.name)
        else:
            shutil.copyfile(p, landing / p.name)
    currency = f"currency: {fx.currency}\n" if fx.currency else ""
    (work / "wastewatch.yaml").write_text(
        f"{currency}sources:\n  - {{name: s, kind: {fx.kind}, uri: landing/{fx.options}}}\n", encoding="utf-8"
    )
    config = load_config(work / "wastewatch.yaml")
    con = connect(config.warehouse_path)
    try:
        report = ingest(con, config)
        if report.rejected:
            return [], "rejected by its reader: " + "; ".join(o.error or "" for o in report.rejected)
        result = export_focus(con, str(work / "focus"), fmt="parquet")
    finally:
        con.close()
    return [work / "focus" / f for p in result.periods for f in p.files], ""


def validate(validator: Path, data: Path) -> tuple[str, dict[str, tuple[int, str]], str]:
    """Run the validator over one file: (summary line, failures, problem)."""
    package_root = _package_root(validator)
    proc = subprocess.run(
        [str(validator), "--data-file", str(data), "--validate-version", VERSION, "--block-download"],
        cwd=package_root,
        capture_output=True,
        text=True,
        check=False,
    )
    summary = next((m.group(0) for m in map(SUMMARY.search, proc.stdout.splitlines()) if m), "")
    if proc.returncode != 0 or not summary:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return "", {}, f"the validator did not run (exit {proc.returncode}): {' | '.join(tail)}"
    failures = {}
    for line in proc.stdout.splitlines():
        m = FAILED.match(line.strip())
        if m:
            failures[m.group("rule")] = (int(m.group("n")), m.group("msg"))
    return summary, failures, ""


def _package_root(validator: Path) -> Path:
    """The site-packages folder holding focus_validator/ (the validator reads focus_validator/rules/... from
    the working directory)."""
    venv = validator.resolve().parent.parent
    found = sorted(venv.glob("lib/python3*/site-packages/focus_validator"))
    if not found:
        raise SystemExit(f"error: no focus_validator package in {venv}; run make focus-validate")
    return found[0].parent


def matching(fixture: str, rule: str, allow: dict[tuple[str, str], str]) -> list[tuple[str, str]]:
    """The allow-list entries for this rule whose fixture pattern (fnmatch: `aws/*`, `*`) matches."""
    return [(pattern, r) for pattern, r in allow if r == rule and fnmatch.fnmatchcase(fixture, pattern)]


def allowed_rule(
    fixture: str, rule: str, failures: dict[str, tuple[int, str]], allow: dict[tuple[str, str], str]
) -> str | None:
    """The reason a failure is allowed, or None."""
    for key in matching(fixture, rule, allow):
        return allow[key]
    m = CHILDREN.search(failures.get(rule, (0, ""))[1])
    if m:
        children = [c.strip() for c in m.group(1).split(",") if c.strip()]
        if children and all(c != rule and allowed_rule(fixture, c, failures, allow) for c in children):
            return "composite: every failed child rule is allowed"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--validator", type=Path, required=True, help="the focus-validator executable")
    parser.add_argument("--allowlist", type=Path, default=ALLOWLIST)
    parser.add_argument("--only", help="only fixtures whose name contains this")
    args = parser.parse_args()
    if not args.validator.exists():
        print(f"error: {args.validator}: no focus-validator there; run make focus-validate", file=sys.stderr)
        return 1
    validator = args.validator.absolute()  # it runs from its package folder, not from here
    allow = load_allowlist(args.allowlist)
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="focus-validate-") as tmp:
        # export every fixture first (in this process), then run the validator over the files side by side:
        # each run is its own process, most of it the validator's start-up
        jobs: list[tuple[str, Path]] = []
        for i, fx in enumerate(f for f in fixtures() if not args.only or args.only in f.name):
            files, problem = export_fixture(fx, Path(tmp) / str(i))
            if problem:
                outcomes.append(Outcome(fx.name, "-", problem=problem))
                print(f"{fx.name}: {problem}", flush=True)
            jobs += [(fx.name, data) for data in files]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            results = pool.map(lambda job: validate(validator, job[1]), jobs)
            for (name, data), (summary, failures, problem) in zip(jobs, results, strict=True):
                o = Outcome(name, data.parent.name, summary, failures, problem)
                outcomes.append(o)
                print(f"{name} [{o.file}]: {summary or problem}", flush=True)
    unexpected = 0
    used: set[tuple[str, str]] = set()
    for o in outcomes:
        if o.problem:
            unexpected += 1
            continue
        for rule, (n, msg) in sorted(o.failures.items()):
            reason = allowed_rule(o.fixture, rule, o.failures, allow)
            used.update(matching(o.fixture, rule, allow))
            if reason is None:
                unexpected += 1
                print(f"FAIL {o.fixture} [{o.file}] {rule} ({n} violation(s)): {msg}")
            else:
                print(f"  allowed {o.fixture} [{o.file}] {rule} ({n}): {reason}")
    if not args.only:
        for fixture, rule in sorted(set(allow) - used):
            print(f"note: allow-list entry no longer needed: {fixture} {rule}")
    if unexpected:
        print(
            f"focus-validate: {unexpected} failure(s) not in {args.allowlist.relative_to(REPO)}",
            file=sys.stderr,
        )
        return 1
    print(f"focus-validate: every failure of {len(outcomes)} export file(s) is listed in the allow-list")
    return 0


if __name__ == "__main__":
    sys.exit(main())
