"""Checks on billing_line_items (run after every ingestion; Dagster shows them as asset checks).

- reconciliation: for every billing file the ledger holds as loaded, the rows and billed/effective sums
  counted from the file itself (ledger `file_*` columns) equal what the ledger recorded landing and what
  is in billing_line_items now (read from billing_lines, the table under the view); no line belongs to a file the ledger does not hold as loaded. Per billing
  period the same sums are compared. Any difference is a failure (the load already refuses a file that
  does not reconcile, so a failure here means the table was changed behind the ledger's back).
- tag coverage: the share of effective cost (positive lines) that carries a `team`, per currency.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

import duckdb

from pipelines.sources.registry import kinds_of
from pipelines.warehouse import rows

TAG_COVERAGE_TARGET = Decimal("0.80")  # the check warns below this share of spend with a team


@dataclass
class CheckOutcome:
    passed: bool
    metadata: dict[str, object]
    problems: list[str] = field(default_factory=list)


def reconciliation(con: duckdb.DuckDBPyConnection) -> CheckOutcome:
    problems: list[str] = []
    files = rows(
        con,
        """
        with landed as (
            select x_file_id, count(*) as n, sum(billed_cost) as billed, sum(effective_cost) as effective
            from billing_lines
            group by 1
        )

        select
            i.uri, i.source, i.billing_period, i.rows, i.file_rows, i.billed_cost_sum, i.file_billed_cost_sum,
            i.effective_cost_sum, i.file_effective_cost_sum,
            coalesce(l.n, 0) as landed_rows, coalesce(l.billed, 0) as landed_billed,
            coalesce(l.effective, 0) as landed_effective
        from ingest_files as i
        left join landed as l on l.x_file_id = i.file_id
        where i.status = 'loaded' and i.kind in (select unnest($kinds)) and coalesce(i.rows, 0) > 0
        order by i.uri
        """,
        {"kinds": list(kinds_of("billing"))},
    )
    for f in files:
        want = (f["rows"], _z(f["billed_cost_sum"]), _z(f["effective_cost_sum"]))
        have = (f["landed_rows"], _z(f["landed_billed"]), _z(f["landed_effective"]))
        if have != want:
            problems.append(
                f"{f['uri']}: the ledger recorded {want[0]:,} rows, billed {want[1]}, effective {want[2]}; "
                f"the table holds {have[0]:,} rows, billed {have[1]}, effective {have[2]}"
            )
        if (
            f["file_rows"] is not None
            and (f["file_rows"], _z(f["file_billed_cost_sum"]), _z(f["file_effective_cost_sum"])) != want
        ):
            problems.append(
                f"{f['uri']}: the file holds {f['file_rows']:,} rows, billed {_z(f['file_billed_cost_sum'])}, "
                f"effective {_z(f['file_effective_cost_sum'])}; {want[0]:,} rows, billed {want[1]}, "
                f"effective {want[2]} landed"
            )
    orphans = rows(
        con,
        """
        select coalesce(any_value(i.uri), 'file id ' || l.x_file_id) as file, any_value(i.status) as status,
               count(*) as n
        from billing_lines as l
        left join ingest_files as i on i.file_id = l.x_file_id
        where l.x_file_id not in (select file_id from ingest_files where status = 'loaded')
        group by l.x_file_id order by 1
        """,
    )
    problems += [
        f"{o['file']}: {o['n']:,} line(s) belong to no loaded file of the ledger"
        + (f" (its ledger status: {o['status']})" if o["status"] else " (the ledger does not know it)")
        for o in orphans
    ]
    periods = rows(
        con,
        """
        select i.source, i.billing_period, sum(i.file_billed_cost_sum) as file_billed,
               sum(i.billed_cost_sum) as billed, sum(i.file_rows) as file_rows, sum(i.rows) as n
        from ingest_files as i
        where i.status = 'loaded' and i.kind in (select unnest($kinds)) and i.billing_period is not null
              and coalesce(i.rows, 0) > 0
        group by all order by all
        """,
        {"kinds": list(kinds_of("billing"))},
    )
    for p in periods:
        if p["file_rows"] is not None and (p["file_rows"], _z(p["file_billed"])) != (p["n"], _z(p["billed"])):
            problems.append(
                f"source {p['source']!r} period {p['billing_period']}: files hold {p['file_rows']:,} rows billed "
                f"{_z(p['file_billed'])}, {p['n']:,} rows billed {_z(p['billed'])} landed"
            )
    return CheckOutcome(
        passed=not problems,
        metadata={"files_checked": len(files), "periods_checked": len(periods), "mismatches": len(problems)},
        problems=problems,
    )


def tag_coverage(con: duckdb.DuckDBPyConnection, target: Decimal = TAG_COVERAGE_TARGET) -> CheckOutcome:
    per_currency = rows(
        con,
        """
        select
            billing_currency as currency,
            sum(effective_cost) filter (where effective_cost > 0) as spend,
            sum(effective_cost) filter (where effective_cost > 0 and team is not null) as with_team
        from billing_line_items
        group by 1 order by 1
        """,
    )
    metadata: dict[str, object] = {}
    passed = True
    for r in per_currency:
        spend, tagged = _z(r["spend"]), _z(r["with_team"])
        share = (tagged / spend) if spend > 0 else Decimal(1)
        metadata[r["currency"]] = f"{share * 100:.1f}% of {spend:,.2f} has a team"
        passed = passed and share >= target
    return CheckOutcome(passed=passed, metadata=metadata)


def _z(v: Decimal | None) -> Decimal:
    return (v if v is not None else Decimal(0)).quantize(Decimal("0.000001"))
