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
from pipelines.warehouse import one, sql_text
from pipelines.warehouse import rows as fetch_rows


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
    max_skew: int = 1,
) -> Landed:
    """What the file landed, once its lines pass the checks (else RejectedFile). `staged` is the staging
    SQL over the numbered file and its parameters, run only to name rows the insert did not number.
    `max_skew`: how many periods a charge may start away from its billing period (options.max_period_skew)."""
    key = spec.line_item_key or "null"
    first_key = key.split(",")[0]
    # currencies and billing periods by min and max: a distinct aggregate over every line costs more, and
    # a file almost always has one of each (the rare file with more lists its currencies in a second query)
    landed = one(
        con,
        f"""
        select count(*), sum(billed_cost), sum(effective_cost),
               min(billing_currency), max(billing_currency),
               min(x_billing_period), max(x_billing_period),
               min(x_source_row) filter (where charge_period_end < charge_period_start),
               count(*) filter (where {first_key} is not null)
                   - count(distinct hash({key})) filter (where {first_key} is not null),
               count(*) filter (where charge_period_end < charge_period_start)
        from {LINES} where x_file_id = $f
        """,  # noqa: S608 - identifiers only, values are bound
        {"f": file_id},
    )
    assert landed is not None
    rows, billed, effective, currency, last_currency, period, last_period, bad_end_row, dups, bad_ends = (
        landed
    )
    currencies = currency
    if currency != last_currency:
        listed = one(
            con,
            f"select string_agg(distinct billing_currency, ',' order by billing_currency) from {LINES} "  # noqa: S608 - our constant
            "where x_file_id = $f",
            {"f": file_id},
        )
        currencies = listed[0] if listed else None
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
            line=bad_end_row + rel.header_line if bad_end_row and rel.fmt == "csv" else None,
        )
    if dups and spec.line_item_key:
        _duplicates(con, spec.line_item_key, file, file_id, staged)
    _far_from_period(con, rel, file, file_id, max_skew)
    return Landed(rows, billed, effective, currencies, period if period == last_period else None)


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


def _far_from_period(
    con: duckdb.DuckDBPyConnection, rel: Relation, file: SourceFile, file_id: str, max_skew: int
) -> None:
    """Reject the file when a line's charge starts more than `max_skew` periods before or after its
    billing period, or when some of its lines fall in billing periods detached from the rest of the file
    by more than `max_skew` periods (a 2999-11 line among 2026-11 ones, or a file without billing period
    columns). A date read or written wrongly (the year 0003 from `4/1/25`, 1900, 2999) is caught here
    instead of being spread over a resource's hours."""
    periods = fetch_rows(con, sql_text("checks", "billing_far_from_period"), {"f": file_id, "skew": max_skew})
    far = [p for p in periods if p["far_n"]]
    if far:
        first = min(far, key=lambda p: (p["far_row"] is None, p["far_row"] or 0))
        bad, bad_row, example = sum(p["far_n"] for p in far), first["far_row"], first["far_example"]
    else:
        detached = _detached(periods, max_skew)
        if detached is None:
            return
        bad, bad_row, example = detached
    where = f"data row {bad_row}: " if bad_row else ""
    raise RejectedFile(
        file.uri,
        f"{bad} line(s) charged far outside their billing period ({where}{example}): more than "
        f"{max_skew} period(s) away, so a date was written or read wrongly (options.max_period_skew "
        "allows more for real late charges)",
        line=bad_row + rel.header_line if bad_row and rel.fmt == "csv" else None,
    )


def _detached(periods: list[dict[str, Any]], max_skew: int) -> tuple[int, int | None, str] | None:
    """(lines, first data row, what they say) of the billing periods that lie more than `max_skew`
    periods from the file's largest run of periods, else None."""
    if len(periods) < 2:
        return None
    months = [(int(p["period"][:4]) * 12 + int(p["period"][5:7]), p) for p in periods]
    runs: list[list[tuple[int, dict[str, Any]]]] = [[months[0]]]
    for m in months[1:]:
        if m[0] - runs[-1][-1][0] > max_skew + 1:
            runs.append([m])
        else:
            runs[-1].append(m)
    if len(runs) == 1:
        return None
    main = max(runs, key=lambda r: sum(p["n"] for _, p in r))
    others = [p for r in runs if r is not main for _, p in r]
    first = min(others, key=lambda p: (p["first_row"] is None, p["first_row"] or 0))
    span = f"{main[0][1]['period']} to {main[-1][1]['period']}"
    return (
        sum(p["n"] for p in others),
        first["first_row"],
        f"billing period {first['period']}, while the file's other lines are in {span}",
    )
