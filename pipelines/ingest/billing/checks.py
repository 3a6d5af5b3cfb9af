"""Checks on billing_line_items (run after every ingestion; Dagster shows them as asset checks); their
queries are sql/checks/billing_*.sql.

- reconciliation: for every billing file the ledger holds as loaded, the rows and billed/effective sums
  counted from the file itself (ledger `file_*` columns) equal what the ledger recorded landing and what
  is in billing_line_items now (read from billing_lines, the table under the view); no line belongs to a
  file the ledger does not hold as loaded. Per billing period the same sums are compared. Any difference
  is a failure (the load already refuses a file that does not reconcile, so a failure here means the
  table was changed behind the ledger's back).
- tag coverage: the share of effective cost (positive lines) that carries a `team`, per currency.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

import duckdb

from pipelines.ingest.billing.reconcile import quantized
from pipelines.sources.registry import kinds_of
from pipelines.warehouse import rows, sql_text

TAG_COVERAGE_TARGET = Decimal("0.80")  # the check warns below this share of spend with a team


@dataclass
class CheckOutcome:
    passed: bool
    metadata: dict[str, object]
    problems: list[str] = field(default_factory=list)


def reconciliation(con: duckdb.DuckDBPyConnection) -> CheckOutcome:
    problems: list[str] = []
    kinds = {"kinds": list(kinds_of("billing"))}
    files = rows(con, sql_text("checks", "billing_reconciliation_files"), kinds)
    for f in files:
        want = (f["rows"], quantized(f["billed_cost_sum"]), quantized(f["effective_cost_sum"]))
        have = (f["landed_rows"], quantized(f["landed_billed"]), quantized(f["landed_effective"]))
        if have != want:
            problems.append(
                f"{f['uri']}: the ledger recorded {want[0]:,} rows, billed {want[1]}, effective {want[2]}; "
                f"the table holds {have[0]:,} rows, billed {have[1]}, effective {have[2]}"
            )
        held = (f["file_rows"], quantized(f["file_billed_cost_sum"]), quantized(f["file_effective_cost_sum"]))
        if f["file_rows"] is not None and held != want:
            problems.append(
                f"{f['uri']}: the file holds {held[0]:,} rows, billed {held[1]}, effective {held[2]}; "
                f"{want[0]:,} rows, billed {want[1]}, effective {want[2]} landed"
            )
    orphans = rows(con, sql_text("checks", "billing_orphan_lines"))
    problems += [
        f"{o['file']}: {o['n']:,} line(s) belong to no loaded file of the ledger"
        + (f" (its ledger status: {o['status']})" if o["status"] else " (the ledger does not know it)")
        for o in orphans
    ]
    periods = rows(con, sql_text("checks", "billing_reconciliation_periods"), kinds)
    for p in periods:
        held, landed = (p["file_rows"], quantized(p["file_billed"])), (p["n"], quantized(p["billed"]))
        if p["file_rows"] is not None and held != landed:
            problems.append(
                f"source {p['source']!r} period {p['billing_period']}: files hold {held[0]:,} rows billed "
                f"{held[1]}, {landed[0]:,} rows billed {landed[1]} landed"
            )
    return CheckOutcome(
        passed=not problems,
        metadata={"files_checked": len(files), "periods_checked": len(periods), "mismatches": len(problems)},
        problems=problems,
    )


def tag_coverage(con: duckdb.DuckDBPyConnection, target: Decimal = TAG_COVERAGE_TARGET) -> CheckOutcome:
    per_currency = rows(con, sql_text("checks", "billing_tag_coverage"))
    metadata: dict[str, object] = {}
    passed = True
    for r in per_currency:
        spend, tagged = quantized(r["spend"]), quantized(r["with_team"])
        share = (tagged / spend) if spend > 0 else Decimal(1)
        metadata[r["currency"]] = f"{share * 100:.1f}% of {spend:,.2f} has a team"
        passed = passed and share >= target
    return CheckOutcome(passed=passed, metadata=metadata)
