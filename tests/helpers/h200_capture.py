"""The H200 capture as a warehouse for the GPU rules: its week, its short-window params, its bill.

tests/rules/test_gpu_h200.py describes the capture and what each rule finds in it; the `h200` fixture
(tests/rules/conftest.py) loads it through the real readers.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import duckdb

from rules import Window, get_rule
from tests.helpers.gpu_precedence import gpu_params

WEEK = Window.iso_week("2026-W49")  # Mon 2026-11-30
SHORT = {
    "GPU001": {"min_idle_hours": 0.005},
    "GPU002": {"min_runtime_minutes": 0.5},
    "GPU003": {"min_runtime_minutes": 0.5},
    "GPU004": {},
    "GPU005": {"min_low_minutes": 0.5},
}
BILLING = """
select * from (values
    (10.60, 10.60, 'USD', '2026-11-30 01:00'::timestamp, '2026-11-30 02:00'::timestamp, 'i-h200', 'Instance', 'AWS',
     'Compute', 'h200-lab', 1, 'research', 'test'),
    (31.80, 31.80, 'USD', '2026-11-30 01:00'::timestamp, '2026-11-30 04:00'::timestamp, 'i-h200-spare', 'Instance',
     'AWS', 'Compute', 'h200-spare', 1, 'research', 'test')
) as t(billed_cost, effective_cost, billing_currency, charge_period_start, charge_period_end, resource_id,
    resource_type, provider_name, service_category, x_host, x_gpu_count, team, x_file_id)
"""


def findings(
    con: duckdb.DuckDBPyConnection,
    rule_id: str,
    overrides: dict[str, Any],
    others: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The rule's findings with `overrides`, the other GPU rules configured with `others` (default: SHORT),
    as a run's config gives them (their thresholds judge the claims in gpu_claims)."""
    rule = get_rule(rule_id)
    params = gpu_params({**(SHORT if others is None else others), rule_id: overrides})[rule_id]
    frame = rule.evaluate(con, WEEK, params, detected_at=datetime(2026, 12, 7))
    return [{**f, "evidence": json.loads(f["evidence"])} for f in frame.to_dicts()]


def jobs_flagged(found: list[dict[str, Any]]) -> set[str]:
    out = set()
    for f in found:
        if f["status"] != "waste":
            continue
        out |= set(f["evidence"].get("idle_jobs") or [])
        if f["job_id"] and f["resource_id"].startswith("csv/"):
            out.add(f["job_id"])
    return out
