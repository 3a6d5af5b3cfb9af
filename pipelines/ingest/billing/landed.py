"""Checks on the lines a file landed, in the load's transaction: no charge period ends before it starts,
no line item key is repeated (which would count its cost twice), the billing periods are plausible by the
wall clock (none before 2006, none after next month), and each line is charged within the bound its kind
of charge allows around its billing period (CHARGE_KINDS). The rows of a CSV file too large to number on
insert are numbered only when a check fails, to name the offending data rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.billing.lines import LINES, Check, Spec
from pipelines.ingest.billing.relation import Relation
from pipelines.ingest.billing.sql_expr import file_params, src_cte
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import quote_ident
from pipelines.warehouse import one, sql_text, utcnow
from pipelines.warehouse import rows as fetch_rows


@dataclass(frozen=True)
class ChargeKind:
    """A kind of charge and how far from its billing period it may be charged: its charge period must start
    no more than `back` billing periods (months) before its billing period and end no more than `ahead`
    after it; None is options.max_period_skew. A line takes the first kind whose `column` holds one of
    `values` (a kind without a column takes every line left)."""

    name: str
    column: str | None  # charge_class | charge_category | charge_frequency (as landed, FOCUS spellings)
    values: tuple[str, ...]
    back: int | None
    ahead: int | None
    why: str  # what such charges are, for docs/billing.md
    native: str  # the native values each reader's staging SQL lands as this kind, for docs/billing.md


SKEW = "`max_period_skew`"
# The one table of bounds (docs/billing.md "Charges outside their billing period" is rendered from it by
# bounds_table() and compared in tests/ingest/billing/test_charge_periods.py). First match wins.
CHARGE_KINDS: tuple[ChargeKind, ...] = (
    ChargeKind(
        "correction", "charge_class", ("Correction",), 24, None,
        "corrects an earlier billing period, a late-arriving Usage line too",
        "FOCUS `ChargeClass` `Correction`",
    ),
    ChargeKind(
        "credit", "charge_category", ("Credit",), 24, 12,
        "a credit or refund for past months, or one granted for the year ahead",
        "FOCUS `Credit`; CUR `Credit`; Azure `ChargeType` `Refund`, `Credit`",
    ),
    ChargeKind(
        "adjustment", "charge_category", ("Adjustment",), 24, 12,
        "refunds, rounding and other adjustments of past months",
        "FOCUS `Adjustment`; CUR `Refund`; Azure `RoundingAdjustment`; Google `cost_type` `adjustment`, "
        "`rounding_error`",
    ),
    ChargeKind(
        "tax", "charge_category", ("Tax",), 60, 60,
        "tax follows what it taxes, a purchase's term too",
        "FOCUS `Tax`; CUR `Tax`; Azure `Tax`; Google `tax`",
    ),
    ChargeKind(
        "purchase", "charge_category", ("Purchase",), 60, 60,
        "a commitment or contract term of up to 5 years, bought upfront (its period runs ahead) or billed "
        "at its end (its period runs back)",
        "FOCUS `Purchase`; CUR `Fee`, `RIFee`, `SavingsPlanUpfrontFee`, `SavingsPlanRecurringFee`; "
        "Azure `Purchase`",
    ),
    ChargeKind(
        "one-time fee", "charge_frequency", ("One-Time",), 60, 60,
        "a one-time charge for a term, such as an end-of-contract unused fee (a Usage line)",
        "FOCUS `ChargeFrequency` `One-Time`; CUR lines of a `Purchase` or `Refund` bill; Azure `Frequency` "
        "`OneTime`",
    ),
    ChargeKind(
        "recurring fee", "charge_frequency", ("Recurring",), 12, 12,
        "a subscription or support fee billed up to a year in advance or in arrears",
        "FOCUS `ChargeFrequency` `Recurring`; Azure `Frequency` `Recurring`",
    ),
    ChargeKind(
        "usage", None, (), None, None,
        "everything else: metered usage is billed in its own period or the next",
        "FOCUS `Usage`; CUR `Usage`, `DiscountedUsage`, `SavingsPlanCoveredUsage`, `SavingsPlanNegation`, "
        "`BundledDiscount`, `EdpDiscount`, ...; Azure `Usage`, `UnusedReservation`, `UnusedSavingsPlan` "
        "(unless their `Frequency` says `OneTime` or `Recurring`); Google `regular`",
    ),
)  # fmt: skip

FIRST_PERIOD = "2006-01"  # the first public cloud bill (Amazon S3, March 2006): no billing period is earlier


def bounds_table() -> str:
    """CHARGE_KINDS as the Markdown table docs/billing.md shows."""
    out = [
        "| kind | a line is this kind when | periods before | periods after | what it is | native values |",
        "|---|---|---|---|---|---|",
    ]
    for k in CHARGE_KINDS:
        when = "no kind above matches" if k.column is None else f"`{k.column}` = " + ", ".join(k.values)
        back = SKEW if k.back is None else str(k.back)
        ahead = SKEW if k.ahead is None else str(k.ahead)
        out.append(f"| {k.name} | {when} | {back} | {ahead} | {k.why} | {k.native} |")
    return "\n".join(out)


def _kinds_params(skew: int) -> dict[str, list[Any]]:
    """CHARGE_KINDS as the parallel lists sql/checks/billing_far_from_period.sql unnests (a row per value)."""
    rows = [
        (rank, k.name, k.column, v, skew if k.back is None else k.back, skew if k.ahead is None else k.ahead)
        for rank, k in enumerate(CHARGE_KINDS)
        for v in (k.values or (None,))
    ]
    names = ("kind_rank", "kind_name", "kind_column", "kind_value", "kind_back", "kind_ahead")
    return {n: [r[i] for r in rows] for i, n in enumerate(names)}


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
    now: datetime | None = None,
) -> Landed:
    """What the file landed, once its lines pass the checks (else RejectedFile). `staged` is the staging
    SQL over the numbered file and its parameters, run only to name rows the insert did not number.
    `max_skew`: how many periods usage may be charged away from its billing period
    (options.max_period_skew); `now`: the wall clock the billing periods are checked against (utcnow)."""
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
    _far_from_period(con, rel, spec, file, file_id, max_skew)
    if period is not None and last_period is not None:
        _implausible_periods(con, rel, file, file_id, (period, last_period), now or utcnow())
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


def _implausible_periods(
    con: duckdb.DuckDBPyConnection,
    rel: Relation,
    file: SourceFile,
    file_id: str,
    seen: tuple[str, str],
    now: datetime,
) -> None:
    """Reject the file when a line's billing period is before FIRST_PERIOD or after the month after `now`'s:
    the periods come from the file's own dates, so a bill dated 2999 (or 1900) throughout agrees with
    itself, and only the calendar outside the file shows it wrong."""
    latest = f"{now.year + now.month // 12}-{now.month % 12 + 1:02d}"
    if seen[0] >= FIRST_PERIOD and seen[1] <= latest:
        return
    found = fetch_rows(
        con,
        sql_text("checks", "billing_implausible_periods"),
        {"f": file_id, "earliest": FIRST_PERIOD, "latest": latest},
    )
    first = min(found, key=lambda p: (p["first_row"] is None, p["first_row"] or 0))
    late = first["period"] > latest
    limit = (
        f"after {latest}, the month after today's ({now:%Y-%m-%d} UTC)"
        if late
        else f"before {FIRST_PERIOD}, the first public cloud bill"
    )
    bad_row = first["first_row"]
    where = f"data row {bad_row}: " if bad_row else ""
    listed = ", ".join(p["period"] for p in found[:5]) + (", ..." if len(found) > 5 else "")
    raise RejectedFile(
        file.uri,
        f"{sum(p['n'] for p in found)} line(s) billed in implausible periods ({where}billing period "
        f"{first['period']}, charge period {first['example']}): billing period(s) {listed} {limit}; the "
        f"file's billing periods run {seen[0]} to {seen[1]}, so its dates were written or read wrongly "
        "(check the export, or options.date_format)",
        line=bad_row + rel.header_line if bad_row and rel.fmt == "csv" else None,
    )


# the `_src` columns that hold a line's charge start and end in each format's staging SQL (FOCUS, CUR 2.0
# and legacy CUR, Azure, Google), to name the file's own column in a message
_STARTS = ("charge_period_start", "line_item_usage_start_date", "usage_date", "usage_start_time")
_ENDS = ("charge_period_end", "line_item_usage_end_date", "usage_date", "usage_end_time")


def _column(spec: Spec, names: tuple[str, ...]) -> Check | None:
    return next((c for c in spec.checks if c.column in names and c.kind in ("timestamp", "date")), None)


def _raw_value(
    con: duckdb.DuckDBPyConnection, rel: Relation, spec: Spec, column: str, row: int
) -> str | None:
    """The text the file holds in `column` (a `_src` column) on data row `row`, read again from the file."""
    cte = src_cte(rel.numbered_from, "_n", spec.columns)
    sql = f"{cte}select {quote_ident(column)}::varchar from _src where _row = $row"  # noqa: S608 - identifiers only
    try:
        found = one(con, sql, {**file_params(rel, spec, sql), "row": row})
    except duckdb.Error:
        return None
    return found[0] if found else None


def _far_from_period(
    con: duckdb.DuckDBPyConnection, rel: Relation, spec: Spec, file: SourceFile, file_id: str, max_skew: int
) -> None:
    """Reject the file when a line is charged further from its billing period than its kind of charge
    allows (CHARGE_KINDS: usage `max_skew` periods, a correction or credit 24 back, a purchase's term 5
    years), or when some of its lines fall in billing periods detached from the rest of the file by more
    than `max_skew` periods (a 2999-11 line among 2026-11 ones, or a file without billing period columns).
    A date read or written wrongly (the year 0003 from `4/1/25`, 1900, 2999) is caught here instead of
    being spread over a resource's hours."""
    params = {"f": file_id, **_kinds_params(max_skew)}
    periods = fetch_rows(con, sql_text("checks", "billing_far_from_period"), params)
    far = [p for p in periods if p["far_n"]]
    if not far:
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
    first = min(far, key=lambda p: (p["far_row"] is None, p["far_row"] or 0))
    bad, bad_row = sum(p["far_n"] for p in far), first["far_row"]
    kind = next(k for k in CHARGE_KINDS if k.name == first["far_kind"])
    column = _column(spec, _STARTS if first["far_start"] else _ENDS)
    where = f"data row {bad_row}: " if bad_row else ""
    shown = f", column {column.shown!r}" if column else ""
    raw = _raw_value(con, rel, spec, column.column, bad_row) if column and bad_row else None
    shown += f" {raw!r}" if raw is not None else ""
    back = max_skew if kind.back is None else kind.back
    ahead = max_skew if kind.ahead is None else kind.ahead
    allows = (
        f"more than {max_skew} period(s) away, so a date was written or read wrongly (options.max_period_skew "
        "allows more for real late charges)"
        if kind.back is None and kind.ahead is None
        else f"a line of kind {kind.name} may start up to {back} period(s) before its billing period and end "
        f"up to {ahead} after it, so a date was written or read wrongly"
    )
    raise RejectedFile(
        file.uri,
        f"{bad} line(s) charged far outside their billing period ({where}{kind.name}, "
        f"{first['far_example']}{shown}): {allows}",
        line=bad_row + rel.header_line if bad_row and rel.fmt == "csv" else None,
    )


def _detached(periods: list[dict[str, Any]], max_skew: int) -> tuple[int, int | None, str] | None:
    """(lines, first data row, what they say) of the billing periods that lie more than `max_skew` periods
    from the file's largest run of periods, further than the kinds of their lines allow (a period holding
    only an end-of-contract fee may lie a year from the usage it follows; a usage line may not), else None."""
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
    low, high = main[0][0], main[-1][0]
    others = [
        p for r in runs if r is not main for m, p in r if max(low - m, m - high) > (p["reach"] or max_skew)
    ]
    if not others:
        return None
    first = min(others, key=lambda p: (p["first_row"] is None, p["first_row"] or 0))
    span = f"{main[0][1]['period']} to {main[-1][1]['period']}"
    return (
        sum(p["n"] for p in others),
        first["first_row"],
        f"billing period {first['period']}, while the file's other lines are in {span}",
    )
