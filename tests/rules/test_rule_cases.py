"""Run every rule's YAML cases (`tests/fixtures/rules/<ID>.yml`) against a real DuckDB warehouse file.

One parametrized test per case, with ids like `GPU001::test_flags_idle_overnight` (sqlfluff's
yaml_test_cases_test.py shape). Each case gets a fresh warehouse: a copy of one made by
`pipelines.warehouse.connect()` and `build_marts` on an empty warehouse (the `empty_marts` fixture), so the
mart tables have the columns the mart SQL produces; the marts holding rows are emptied (their columns and which hold rows are read once, `layout`), and the case's rows are inserted. The marts built from other marts only
(pipelines.marts.registry.SHARED_GPU_MARTS: gpu_billed_hours, gpu_job_spans, gpu_claims, ...) that the rule
reads, directly or through the marts it reads (its `requires` and their `-- depends_on:` headers), are then
rebuilt from those rows, as a real run rebuilds them from their inputs, unless the case gives their rows itself. The copy is
attached to one connection the module prepared as `connect` prepares one (settings, macros, temporary catalogues), not
opened anew per case (`attached_copy`, tests/helpers/empty_warehouse.py; tests/warehouse/test_empty_copy.py proves
the two alike).

File shape:

    rule: GPU001                        # the rule every case of the file runs
    defaults:                           # optional: column defaults for this file, per mart table
      cost_hourly: {effective_cost: 98.32}
    test_flags_idle_overnight:          # a case; its name starts with test_
      params: {min_idle_hours: 1}       # optional overrides of the rule's Params (validated, typos fail)
      rules: {GPU001: {max_util_pct: 90}}  # optional: other rules' overrides, as wastewatch.yaml `rules:`
                                        # gives them (a GPU rule's claims in gpu_claims are judged by them)
      window: {week: 2026-W48}          # or {start: 2026-11-23, end: 2026-11-30}; default 2026-W48
      given:                            # rows per mart table (pipelines.transform.MARTS)
        resources:   [{resource_id: i-1, gpu_count: 8}]
        cost_hourly: [{resource_id: i-1, from: 2026-11-23T00:00, to: 2026-11-23T08:00, effective_cost: 98.32}]
        gpu_job_hours: [{resource_id: i-1, from: 2026-11-23T00:00, to: 2026-11-23T08:00, gpus: 8, util_mean: 0.4}]
      expect:                           # ALL the findings, each matched by resource_id
        - resource_id: i-1
          status: waste
          estimated_waste: 786.56       # within 0.005 (to the cent) unless the entry sets `tolerance:`
          reason: [idle for 8 of 8]     # one substring or a list of substrings of `reason`
          evidence: {idle_hours: 8}     # a subset of the evidence JSON (see "Comparing" below)
          evidence_keys: [stretches]    # keys that must be present, whatever their value
          params: {min_idle_hours: 1}   # a subset of the effective params written into the finding
          # any other finding column (team, currency, resource_type, ...) compares for equality
    test_busy_is_not_flagged:
      given: {...}
      expect_none: true                 # the rule returns no finding at all

Row expansion (every other key of a row is a column of its table; unknown keys are errors):
    at: T                   one row for the hour starting at T
    from: T, to: U          one row per hour in [T, U) — `to` is exclusive, like the rule window
    gpus: N | [i, j, ...]   gpu_hours / gpu_job_hours only: one row per GPU, indices 0..N-1 or the ones
                            listed; sets gpu_index, and gpu_id = "<resource_id>/gpu<i>" unless the row
                            gives one (so the same GPU reported under two host names keeps one gpu_id)
    `from`/`to`/`at` and `gpus` combine: one row per hour and per GPU.
    gpu_job_hours rows may instead give `slice_start` (and `slice_end`, default the hour's end): one part
    of an hour, for captures shorter than an hour (the hour is the slice's).
    resources and jobs_enriched rows take no generators (jobs give `started_at` / `ended_at`).
Times are naive UTC: ISO strings (`2026-11-23T18:00`) or YAML dates (midnight); hours must be whole.
A table without an entry in DEFAULTS (another mart) takes its rows as written.

Defaults for columns a row leaves out (DEFAULTS in tests/helpers/mart_rows.py, then the file's
`defaults`, then the row):
    resources:   an 8×H100 p5.48xlarge in AWS us-east-1 billed in USD; resource_name and host = resource_id.
    cost_hourly: effective_cost is required; billed_cost and list_cost = effective_cost; billing_currency,
                 provider, account, region, instance type and tags come from the case's resource row.
    gpu_hours, gpu_job_hours: util_mean is required (write `util_mean: null` for "reported, but no
                 utilisation"); coverage 1.0, 60 samples; util_p95/util_max = util_mean, util_stddev 0;
                 mem_used_max = mem_used_mean; power_max = power_mean, a 700 W power limit; host from the
                 resource row; an 80 GB H100's memory. gpu_job_hours: slice = the whole hour; the row's
                 `job_id` gives job_key "<scheduler>/<job_id>" and job_state from the case's
                 jobs_enriched row (scheduler slurm, state COMPLETED); the exact sums (util_samples,
                 util_sum, util_sumsq, observed_seconds) follow from samples, mean, stddev and coverage.
    jobs_enriched: job_id is required; scheduler slurm, state COMPLETED, job_key "<scheduler>/<job_id>",
                 runtime from started_at/ended_at; provider, account, region and currency from the first
                 of its `resource_ids` in the case's resources.

Comparing: numbers within 1e-9 (estimated_waste: the tolerance above); dicts as subsets; lists as
multisets (the same elements in any order: DuckDB's list(distinct ...) has no order); anything else by
equality (dates also by their ISO text).

Every case also checks the contract's invariants: columns == FINDING_COLUMNS, known statuses, unique
finding ids, the rule id and week on every row, `waste` findings priced > 0, `insufficient_data` findings
priced 0, per currency total waste <= the window's total effective cost (money never invented), and
the frame inserts into the warehouse's `findings` table (pipelines.evaluate.write_findings).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from pipelines.config import parse_config
from pipelines.evaluate import write_findings
from pipelines.warehouse import rows, scalar
from rules import ALL_RULES, FINDING_COLUMNS, STATUSES, Rule, Window, get_rule
from tests.helpers.empty_warehouse import attached_copy, shared_connection
from tests.helpers.mart_rows import (
    MartLayout,
    complete,
    expand,
    load_case_file,
    load_given,
    mart_layout,
    when,
)
from tests.helpers.marts import marts_needed

CASES_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "rules"
DEFAULT_WEEK = "2026-W48"
DETECTED_AT = datetime(2026, 12, 7, 6, 0)
WASTE_TOLERANCE = 0.005
FILE_KEYS = {"rule", "defaults"}
CASE_KEYS = {"params", "rules", "window", "given", "expect", "expect_none"}
EXPECT_EXTRA_KEYS = {"tolerance", "evidence_keys"}


# ---------------------------------------------------------------------------------------------- loading


def _case_files() -> list[Path]:
    return sorted(CASES_DIR.glob("*.yml"))


@functools.cache
def _parse(path: Path) -> dict[str, Any]:
    return load_case_file(path)


def _load(path: Path) -> dict[str, Any]:
    """The case file as a mapping: parsed once per process (every case reads its file), a copy each time
    so a case cannot change another's."""
    return copy.deepcopy(_parse(path))


def _collect() -> Iterator[Any]:
    for path in _case_files():
        doc = _load(path)
        for name in doc:
            if name not in FILE_KEYS:
                yield pytest.param(path, name, id=f"{doc.get('rule', path.stem)}::{name}")


def make_window(spec: dict[str, Any] | None) -> Window:
    spec = spec or {"week": DEFAULT_WEEK}
    if set(spec) == {"week"}:
        return Window.iso_week(str(spec["week"]))
    if set(spec) == {"start", "end"}:
        return Window(when(spec["start"]), when(spec["end"]))
    raise ValueError(f"window takes {{week: 2026-W48}} or {{start: ..., end: ...}}, not {spec}")


# ---------------------------------------------------------------------------------------------- checks


def same(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and same(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return False
        left = list(actual)
        for e in expected:
            hit = next((i for i, a in enumerate(left) if same(e, a)), None)
            if hit is None:
                return False
            left.pop(hit)
        return True
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        return (
            isinstance(actual, int | float | Decimal)
            and not isinstance(actual, bool)
            and float(actual) == pytest.approx(float(expected), rel=1e-9, abs=1e-9)
        )
    if expected == actual:
        return True
    return isinstance(expected, date) and isinstance(actual, str) and expected.isoformat() == actual


def check_invariants(con: duckdb.DuckDBPyConnection, rule: Rule, window: Window, frame: pl.DataFrame) -> None:
    assert frame.columns == list(FINDING_COLUMNS)
    assert set(frame.get_column("status").to_list()) <= set(STATUSES)
    assert frame.get_column("finding_id").n_unique() == frame.height
    for f in frame.iter_rows(named=True):
        assert f["rule_id"] == rule.id and f["rule_name"] == rule.name
        assert f["week_start"] == window.start.date()
        assert f["week_end"] == (window.end - timedelta(days=1)).date()
        assert f["detected_at"] == DETECTED_AT
        assert isinstance(json.loads(f["evidence"]), dict)
        assert f["reason"], f"{f['resource_id']}: empty reason"
        if f["status"] == "insufficient_data":
            assert f["estimated_waste"] == 0, f"{f['resource_id']}: insufficient_data must not be priced"
        if f["status"] == "waste":
            assert f["estimated_waste"] > 0, f"{f['resource_id']}: waste with no dollars"
    spend = {
        r["currency"]: r["spend"]
        for r in rows(
            con,
            "select billing_currency as currency, sum(effective_cost) as spend from cost_hourly "
            "where hour >= $s and hour < $e group by all",
            {"s": window.start, "e": window.end},
        )
    }
    waste = frame.group_by("currency").agg(pl.col("estimated_waste").sum())
    for currency, total in waste.iter_rows():
        assert total <= spend.get(currency, 0), (
            f"{currency} {total} of waste exceeds the window's {currency} spend {spend.get(currency, 0)}"
        )
    # the frame fits the warehouse's findings table (types, NOT NULLs, the primary key)
    write_findings(con, rule.id, window, frame)
    assert scalar(con, "select count(*) from findings where rule_id = $r", {"r": rule.id}) == frame.height


def check_expected(expected: dict[str, Any], finding: dict[str, Any]) -> list[str]:
    """The ways `finding` differs from the partial `expected` finding (empty: it matches)."""
    unknown = set(expected) - set(FINDING_COLUMNS) - EXPECT_EXTRA_KEYS
    if unknown:
        raise ValueError(f"expect: unknown key(s) {sorted(unknown)}")
    problems = []
    tolerance = float(expected.get("tolerance", WASTE_TOLERANCE))
    evidence = json.loads(finding["evidence"])
    for key, want in expected.items():
        got = finding.get(key)
        if key == "tolerance":
            continue
        if key == "estimated_waste":
            if abs(float(got) - float(want)) > tolerance:
                problems.append(f"estimated_waste {got} != {want} (± {tolerance})")
        elif key == "reason":
            for part in [want] if isinstance(want, str) else want:
                if str(part) not in got:
                    problems.append(f"reason lacks {part!r}")
        elif key == "evidence":
            for k, v in want.items():
                if k not in evidence:
                    problems.append(f"evidence has no {k!r}")
                elif not same(v, evidence[k]):
                    problems.append(f"evidence[{k!r}] = {evidence[k]!r}, expected {v!r}")
        elif key == "evidence_keys":
            problems += [f"evidence has no {k!r}" for k in want if k not in evidence]
        elif key == "params":
            effective = json.loads(finding["params"])
            if not same(want, effective):
                problems.append(f"params {effective} do not include {want}")
        elif not same(want, got):
            problems.append(f"{key} = {got!r}, expected {want!r}")
    return problems


# ---------------------------------------------------------------------------------------------- tests


def test_case_files_are_well_formed() -> None:
    files = _case_files()
    assert files, f"no rule cases in {CASES_DIR}"
    registered = {r.id for r in ALL_RULES}
    for path in files:
        doc = _load(path)
        assert doc.get("rule") in registered, f"{path.name}: rule {doc.get('rule')!r} is not registered"
        assert path.stem == doc["rule"], (
            f"{path.name} holds cases of {doc['rule']}; name it {doc['rule']}.yml"
        )
        cases = {k: v for k, v in doc.items() if k not in FILE_KEYS}
        assert cases, f"{path.name}: no cases"
        for name, case in cases.items():
            assert name.startswith("test_"), f"{path.name}: case {name!r} must start with test_"
            assert isinstance(case, dict), f"{path.name}::{name} is not a mapping"
            assert not set(case) - CASE_KEYS, f"{path.name}::{name}: unknown key(s) {set(case) - CASE_KEYS}"
            assert ("expect" in case) != bool(case.get("expect_none")), (
                f"{path.name}::{name}: give either a non-empty `expect` or `expect_none: true`"
            )
            if "expect" in case:
                assert case["expect"], f"{path.name}::{name}: empty expect; write expect_none: true"


def test_expansion_syntax() -> None:
    """The generator helpers themselves: ranges are half-open, GPUs multiply hours, typos fail."""
    got = expand(
        "gpu_hours", {"resource_id": "i-1", "from": "2026-11-23T22:00", "to": "2026-11-24", "gpus": 2}
    )
    assert [(r["hour"], r["gpu_index"]) for r in got] == [
        (datetime(2026, 11, 23, 22), 0),
        (datetime(2026, 11, 23, 22), 1),
        (datetime(2026, 11, 23, 23), 0),
        (datetime(2026, 11, 23, 23), 1),
    ]
    assert [r["gpu_index"] for r in expand("gpu_hours", {"at": "2026-11-23T05:00", "gpus": [3, 7]})] == [3, 7]
    with pytest.raises(ValueError, match="whole hours"):
        expand("cost_hourly", {"at": "2026-11-23T05:30"})
    with pytest.raises(ValueError, match="gpu_hours"):
        expand("cost_hourly", {"at": "2026-11-23T05:00", "gpus": 8})
    with pytest.raises(ValueError, match="no column"):
        complete(
            "gpu_hours",
            {"resource_id": "i-1", "hour": datetime(2026, 11, 23), "util": 1},
            ["resource_id", "hour"],
            {},
            {},
        )


@pytest.fixture(scope="module")
def case_con() -> Iterator[duckdb.DuckDBPyConnection]:
    """One prepared connection for every case: each case attaches its own copy of `empty_marts` to it."""
    con = shared_connection()
    yield con
    con.close()


@pytest.fixture(scope="module")
def case_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where each case's copy of `empty_marts` is made: one path for all, each copy replacing the last (the
    run writes one file of 3.6 MB, not one per case)."""
    return tmp_path_factory.mktemp("rule_case") / "wastewatch.duckdb"


@pytest.fixture(scope="module")
def layout(case_con: duckdb.DuckDBPyConnection, empty_marts: Path, case_path: Path) -> MartLayout:
    """The marts' columns and which hold rows in `empty_marts`, read once: every case's copy is that file."""
    with attached_copy(case_con, empty_marts, case_path) as con:
        return mart_layout(con)


@functools.cache
def _marts_read(rule_id: str) -> list[str]:
    """The marts the rule reads, directly or through the marts it reads (once per rule, not per case)."""
    return marts_needed(*get_rule(rule_id).requires)


@pytest.mark.parametrize(("path", "name"), list(_collect()))
def test_rule_case(
    path: Path,
    name: str,
    case_path: Path,
    empty_marts: Path,
    case_con: duckdb.DuckDBPyConnection,
    layout: MartLayout,
) -> None:
    doc = _load(path)
    case = doc[name]
    rule = get_rule(doc["rule"])
    window = make_window(case.get("window"))
    # other rules' overrides reach the rule as a run's config gives them (rules/_claims.py)
    config = (
        parse_config(json.dumps({"sources": [], "rules": case["rules"]}), path) if "rules" in case else None
    )
    params = rule.make_params(case.get("params"), config)

    with attached_copy(case_con, empty_marts, case_path) as con:
        load_given(con, case.get("given") or {}, doc.get("defaults") or {}, _marts_read(rule.id), layout)
        frame = rule.evaluate(con, window, params, detected_at=DETECTED_AT)
        check_invariants(con, rule, window, frame)

    findings = frame.to_dicts()
    shown = "\n".join(
        f"  {f['resource_id']} {f['status']} {f['estimated_waste']}: {f['reason']}" for f in findings
    )
    if case.get("expect_none"):
        assert not findings, f"expected no findings, got:\n{shown}"
        return
    expected = case["expect"]
    assert all("resource_id" in e for e in expected), "each expected finding names its resource_id"
    assert sorted(e["resource_id"] for e in expected) == sorted(f["resource_id"] for f in findings), (
        f"expected findings for {sorted(e['resource_id'] for e in expected)}, got:\n{shown}"
    )
    by_resource = {f["resource_id"]: f for f in findings}
    problems = [
        f"{e['resource_id']}: {p}" for e in expected for p in check_expected(e, by_resource[e["resource_id"]])
    ]
    assert not problems, "\n".join(problems) + f"\nfindings:\n{shown}"
