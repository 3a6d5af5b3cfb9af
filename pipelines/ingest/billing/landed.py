"""Checks on the lines a file landed, in the load's transaction: no charge period ends before it starts,
and no line item key is repeated (which would count its cost twice). The rows of a CSV file too large to
number on insert are numbered only when a check fails, to name the offending data rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.billing.lines import LINES, Spec
from pipelines.ingest.billing.relation import Relation
from pipelines.ingest.files import SourceFile
from pipelines.warehouse import one


@dataclass
class Landed:
    """What a file landed: its lines, their billed and effective sums, currencies and billing period."""

    rows: int
    billed: Decimal | None
    effective: Decimal | None
    currencies: str | None  # comma-separated
    period: str | None  # the one billing period of its lines, else None


def check_landed(
    con: duckdb.DuckDBPyConnection,
    rel: Relation,
    spec: Spec,
    file: SourceFile,
    file_id: str,
    staged: tuple[str, dict[str, Any]] | None = None,
) -> Landed:
    """What the file landed, once its lines pass the checks (else RejectedFile). `staged` is the staging
    SQL over the numbered file and its parameters, run only to name rows the insert did not number."""
    key = spec.line_item_key or "null"
    first_key = key.split(",")[0]
    landed = one(
        con,
        f"""
        select count(*), sum(billed_cost), sum(effective_cost),
               string_agg(distinct billing_currency, ',' order by billing_currency),
               count(distinct x_billing_period), min(x_billing_period),
               min(x_source_row) filter (where charge_period_end < charge_period_start),
               count(*) filter (where {first_key} is not null)
                   - count(distinct hash({key})) filter (where {first_key} is not null),
               count(*) filter (where charge_period_end < charge_period_start)
        from {LINES} where x_file_id = $f
        """,  # noqa: S608 - identifiers only, values are bound
        {"f": file_id},
    )
    assert landed is not None
    rows, billed, effective, currencies, n_periods, period, bad_end_row, dups, bad_ends = landed
    if bad_ends:
        if bad_end_row is None and staged is not None:
            sql, params = staged
            found = one(
                con,
                f"select min(x_source_row) from ({sql}) where charge_period_end < charge_period_start",  # noqa: S608 - identifiers only, values are bound
                params,
            )
            bad_end_row = found[0] if found else None
        where = f" (data row {bad_end_row})" if bad_end_row else ""
        raise RejectedFile(
            file.uri,
            f"{bad_ends} line(s) end before they start{where}: the charge period's end must not be "
            "before its start",
            line=bad_end_row + 1 if bad_end_row and rel.fmt == "csv" else None,
        )
    if dups and spec.line_item_key:
        _duplicates(con, spec.line_item_key, file, file_id, staged)
    return Landed(rows, billed, effective, currencies, period if n_periods == 1 else None)


def _duplicates(
    con: duckdb.DuckDBPyConnection,
    key: str,
    file: SourceFile,
    file_id: str,
    staged: tuple[str, dict[str, Any]] | None,
) -> None:
    """Reject the file for the first value of `key` (SQL over landed columns) its lines repeat; a hash
    collision is not one."""
    first_key = key.split(",")[0]
    got = con.execute(
        f"""
        select {first_key} as k, count(*) as n, list(x_source_row order by x_source_row)[1:3] as at
        from {LINES} where x_file_id = $f and {first_key} is not null
        group by {key} having count(*) > 1 order by min(x_source_row) nulls last limit 1
        """,  # noqa: S608 - identifiers only, values are bound
        {"f": file_id},
    ).fetchall()
    if not got:
        return  # a hash collision, not a duplicate
    k, n, at = got[0]
    total = one(
        con,
        f"select count(*) - count(distinct hash({key})) from {LINES} "  # noqa: S608 - identifiers only
        f"where x_file_id = $f and {first_key} is not null",
        {"f": file_id},
    )
    if all(r is None for r in at) and staged is not None:
        # the file's rows were not numbered on insert: number them now to say where the repeats are
        sql, params = staged
        found = one(
            con,
            f"select list(x_source_row order by x_source_row)[1:3] from ({sql}) "  # noqa: S608 - identifiers only, values are bound
            f"where {first_key} = $k group by {key} having count(*) > 1 order by min(x_source_row) limit 1",
            {**params, "k": k},
        )
        at = found[0] if found else at
    rows_at = ", ".join(str(r) for r in at if r is not None)
    raise RejectedFile(
        file.uri,
        f"duplicate line items: {k!r} appears {n} times"
        + (f" (data rows {rows_at})" if rows_at else "")
        + (f"; {total[0]} duplicate line(s) in all" if total and total[0] > n - 1 else "")
        + ": the export repeats line items, which would count their cost twice",
    )
