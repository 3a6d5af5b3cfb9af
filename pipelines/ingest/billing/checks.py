"""Checks on billing_line_items (run after every ingestion; Dagster shows them as asset checks); their
queries are sql/checks/billing_*.sql.

- reconciliation: for every billing file the ledger holds as loaded, the rows and billed/effective sums
  counted from the file itself (ledger `file_*` columns) equal what the ledger recorded landing and what
  is in billing_line_items now (read from billing_lines, the table under the view); no line belongs to a
  file the ledger does not hold as loaded. Per billing period the same sums are compared. Any difference
  is a failure (the load already refuses a file that does not reconcile, so a failure here means the
  table was changed behind the ledger's back).
- tag coverage: the share of effective cost (positive lines) that carries a `team`, per currency.
- FOCUS conformance: per source, the lines (and the spend they carry) that break a FOCUS 1.2 rule that
  matters for money (sql/checks/billing_focus_conformance.sql lists them). Providers' own exports often
  break some: the check warns and says where, it never blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import duckdb

from pipelines.ingest.billing.reconcile import quantized
from pipelines.sources.registry import kinds_of
from pipelines.warehouse import CATALOG_DIR, rows, sql_text

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


def focus_conformance_rows(
    con: duckdb.DuckDBPyConnection, window_start: datetime | None = None, window_end: datetime | None = None
) -> list[dict[str, Any]]:
    """Per source, currency and broken FOCUS rule: the lines and spend touched, and the source's totals
    (every line, or those whose charge period overlaps [window_start, window_end))."""
    params = {
        "subcategories_csv": str(CATALOG_DIR / "focus_service_subcategories.csv"),
        "window_start": window_start,
        "window_end": window_end,
    }
    return rows(con, sql_text("checks", "billing_focus_conformance"), params)


def focus_conformance(con: duckdb.DuckDBPyConnection) -> CheckOutcome:
    """The FOCUS 1.2 conformance of every line: one metadata entry per source and currency, listing each
    broken rule with its lines and spend (a share of the source's). Fails (a warning) when any rule is broken."""
    found = focus_conformance_rows(con)
    metadata: dict[str, object] = {}
    problems: list[str] = []
    for r in found:
        key = f"{r['source']} ({r['currency']})"
        share = r["spend"] / r["source_spend"] * 100 if r["source_spend"] else Decimal(0)
        text = (
            f"{r['rule']}: {r['lines']:,} of {r['source_lines']:,} lines, "
            f"{r['spend']:,.2f} of {r['source_spend']:,.2f} spend ({share:.1f}%)"
        )
        metadata[key] = f"{metadata[key]}; {text}" if key in metadata else text
        problems.append(f"{key} {text}")
    metadata["rules_broken"] = len(found)
    return CheckOutcome(passed=not found, metadata=metadata, problems=problems)
