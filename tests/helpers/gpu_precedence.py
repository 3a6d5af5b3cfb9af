"""The GPU rules' shared invariant: a GPU-hour is priced by at most one GPU rule.

The GPU rules are the registry's claiming rules (those that read `gpu_claims`, rules/_claims.py), so a new
GPU rule is checked as soon as it is registered. `check_no_double_counting` runs every GPU rule's
`priced_units` CTE and its findings over a window and asserts the invariants
tests/rules/test_gpu_precedence.py describes: each rule prices only GPU-slices `gpu_claims` gives it,
no two rules price the same part of an hour of a GPU, and within GPU004 each failed job's money is in
exactly one finding (its crash loop's or its own). `SETTINGS` are the threshold settings it runs under, as
`rules:` lines of wastewatch.yaml, and `WEEK` the week of its scenario; `gpu_params` makes every GPU rule's
params from such settings, as a run does.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import parse_config
from pipelines.warehouse import rows
from rules import Rule, RuleParams, Window
from rules._claims import claiming_rules


def gpu_rules() -> tuple[str, ...]:
    """The ids of the GPU rules: every registered rule that reads `gpu_claims`."""
    return tuple(r.id for r in claiming_rules())


GPU_RULES = gpu_rules()
WEEK = Window.iso_week("2026-W48")


UNIT_COLUMNS = "resource_id, hour, slice_start, slice_end, gpu_id, currency, cost"


def priced_units(
    con: duckdb.DuckDBPyConnection,
    rule: Rule,
    window: Window,
    params: RuleParams,
    columns: str = UNIT_COLUMNS,
) -> list[dict[str, Any]]:
    """The rows of the rule's `priced_units` CTE: its query with the final select swapped for that CTE."""
    assert rule.query is not None
    sql = rule.query.read_text(encoding="utf-8")
    lines = sql.splitlines()
    final = max(i for i, line in enumerate(lines) if line.startswith("select"))
    body = "\n".join(lines[:final]) + f"\nselect {columns} from priced_units where cost > 0"
    return rows(con, body, rule.sql_params(window, params, body))


def gpu_params(
    overrides: dict[str, dict[str, Any]], rules: tuple[Rule, ...] | None = None
) -> dict[str, RuleParams]:
    """Every GPU rule's params made as a run makes them: from a config whose `rules:` holds `overrides`."""
    config = parse_config(
        json.dumps({"sources": [], "rules": {k: v for k, v in overrides.items() if v}}), Path("test.yaml")
    )
    return {r.id: r.make_params(config.rule_overrides(r.id), config) for r in rules or claiming_rules()}


def claims_of(
    con: duckdb.DuckDBPyConnection, rule: Rule, window: Window, params: RuleParams
) -> list[dict[str, Any]]:
    """Every GPU-slice of the window in gpu_claims with the rule that wins it under `rule`'s thresholds."""
    sql = (
        "select resource_id, slice_start, slice_end, gpu_id, job_key, claimed_by(claims, $claim_thresholds) "
        "as claimed_by from gpu_claims where hour >= $window_start and hour < $window_end"
    )
    return rows(con, sql, rule.sql_params(window, params, sql))


def check_priced_within_claims(
    rule_id: str, units: list[dict[str, Any]], claims: list[dict[str, Any]]
) -> None:
    """Each priced unit is a GPU-slice gpu_claims gives the rule, or (gpu_id NULL, the whole instance) a part
    of an hour whose every GPU-slice (or its hour without telemetry) the rule claims."""
    exact = {(c["resource_id"], c["slice_start"], c["gpu_id"], c["job_key"]): c["claimed_by"] for c in claims}
    by_resource: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in claims:
        by_resource[c["resource_id"]].append(c)
    for u in units:
        if u["gpu_id"] is not None:
            key = (u["resource_id"], u["slice_start"], u["gpu_id"], u["job_key"])
            assert exact.get(key) == rule_id, (
                f"{rule_id} prices {key}, which gpu_claims gives {exact.get(key)}"
            )
            continue
        under = [
            c
            for c in by_resource[u["resource_id"]]
            if c["slice_start"] < u["slice_end"] and u["slice_start"] < c["slice_end"]
        ]
        assert under and all(c["claimed_by"] == rule_id for c in under), (
            f"{rule_id} prices the whole of {u['resource_id']} at {u['slice_start']}, which gpu_claims gives "
            f"{sorted({str(c['claimed_by']) for c in under})}"
        )


def check_no_double_counting(
    con: duckdb.DuckDBPyConnection,
    window: Window,
    params: dict[str, RuleParams],
    rules: tuple[Rule, ...] | None = None,
) -> dict[str, Decimal]:
    """Run every GPU rule (`rules`, default the registry's); assert the invariants; return each rule's waste."""
    units: dict[str, list[dict[str, Any]]] = {}
    waste: dict[str, Decimal] = {}
    for rule in rules or claiming_rules():
        rule_id = rule.id
        units[rule_id] = priced_units(con, rule, window, params[rule_id], UNIT_COLUMNS + ", job_key")
        # a rule prices only what gpu_claims gives it
        check_priced_within_claims(rule_id, units[rule_id], claims_of(con, rule, window, params[rule_id]))
        frame = rule.evaluate(con, window, params[rule_id], detected_at=datetime(2026, 12, 7))
        priced = frame.filter(frame["status"] == "waste")["estimated_waste"].sum()
        waste[rule_id] = Decimal(str(priced or 0))
        # a rule's findings are exactly the money of its units
        assert float(waste[rule_id]) == pytest.approx(
            sum(float(u["cost"]) for u in units[rule_id]), abs=0.01
        ), rule_id
        if rule_id == "GPU004":
            check_failed_jobs_priced_once(units[rule_id], frame.to_dicts())

    # no (resource, part of an hour, GPU) priced by two rules; a whole-instance unit (gpu_id NULL)
    # collides with any unit of the same resource whose part of the hour overlaps it
    by_hour: dict[tuple[str, datetime], list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for rule_id, us in units.items():
        for u in us:
            by_hour[(u["resource_id"], u["hour"])].append((rule_id, u))
    for key, claims in by_hour.items():
        for i, (ra, a) in enumerate(claims):
            for rb, b in claims[i + 1 :]:
                overlap = a["slice_start"] < b["slice_end"] and b["slice_start"] < a["slice_end"]
                same_gpu = a["gpu_id"] is None or b["gpu_id"] is None or a["gpu_id"] == b["gpu_id"]
                assert not (overlap and same_gpu), f"{key} priced twice: {ra} {a} and {rb} {b}"

    # no resource-hour priced above its cost, and all GPU waste within the GPU spend
    hour_cost = {
        (r["resource_id"], r["hour"]): float(r["cost"])
        for r in rows(
            con,
            "select c.resource_id, c.hour, sum(c.effective_cost) as cost from cost_hourly as c "
            "inner join resources as r on r.resource_id = c.resource_id and r.gpu_count > 0 "
            "and c.billing_currency = r.currency group by all",
        )
    }
    priced_by_hour: dict[tuple[str, datetime], float] = defaultdict(float)
    for us in units.values():
        for u in us:
            priced_by_hour[(u["resource_id"], u["hour"])] += float(u["cost"])
    for key, total in priced_by_hour.items():
        assert total <= hour_cost[key] + 1e-6, f"{key}: priced {total} > cost {hour_cost[key]}"
    spend = sum(v for (rid, hour), v in hour_cost.items() if window.start <= hour < window.end)
    assert float(sum(waste.values())) <= spend + 1e-6
    return waste


def check_failed_jobs_priced_once(units: list[dict[str, Any]], findings: list[dict[str, Any]]) -> None:
    """GPU004: every failed job's units are in exactly one finding, its crash loop's or its own.

    A failed-job finding claims its job (resource_id = the job's key), a crash-loop finding the jobs of
    its `attempt_list`; each finding's waste is the money of the units of the jobs it claims.
    """
    claims: dict[str, list[str]] = defaultdict(list)
    for f in findings:
        evidence = json.loads(f["evidence"])
        if evidence["kind"] == "failed_job":
            jobs = [f["resource_id"]]
        elif evidence["kind"] == "crash_loop":
            assert len(evidence["attempt_list"]) == evidence["attempts"], f"{f['resource_id']}: attempts cut"
            jobs = [a["job_key"] for a in evidence["attempt_list"]]
        else:
            continue
        for job in jobs:
            claims[job].append(f["resource_id"])
        money = sum(
            float(u["cost"]) for u in units if u["job_key"] in jobs and u["currency"] == f["currency"]
        )
        assert float(f["estimated_waste"]) == pytest.approx(money, abs=0.01), f["resource_id"]
    for job in {u["job_key"] for u in units if u["job_key"] is not None}:
        assert len(claims[job]) == 1, (
            f"failed job {job} is in {len(claims[job])} GPU004 findings: {claims[job]}"
        )


SETTINGS = {
    "defaults": "",
    "gpu001 raised": "GPU001: {max_util_pct: 40}",
    "everything loosened": (
        "GPU001: {max_util_pct: 90, min_idle_hours: 1}\n"
        "  GPU002: {unused_util_pct: 10, max_peak_util_pct: 50, min_runtime_minutes: 1}\n"
        "  GPU003: {min_mean_util_pct: 0, max_mean_util_pct: 100, min_util_stddev: 0, min_peak_util_pct: 0, "
        "max_power_pct: 100, min_runtime_minutes: 1}\n"
        "  GPU004: {min_zombie_hours: 1}"
    ),
    "job rules loosened": (
        "GPU002: {unused_util_pct: 0, max_peak_util_pct: 10}\n"
        "  GPU003: {min_mean_util_pct: 0, min_util_stddev: 0, min_peak_util_pct: 0, max_power_pct: 100}"
    ),
}
