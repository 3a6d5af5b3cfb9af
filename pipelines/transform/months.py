"""cost_hourly kept up to date by month: a bill delivery rebuilds the months its files reach.

Providers deliver the month to date again every night (CUR 2.0, FOCUS, Azure and GCP exports alike), so
each night brings a new version of the current month's files and nothing else. Spreading every line of
the history again would grow with the history; instead the billed rows are rebuilt for the months whose
fingerprint changed (sql/intermediate/incremental/bill_months.sql: the files with a line in the month's
reach), consecutive months in one statement, and a month no line reaches any more is dropped. The
modelled hosts' rows (int_cost_modelled) span the whole extent of the data, so they are rebuilt as one
part when their own inputs changed.

The months' fingerprints live in int_incremental_days (object `cost_hourly`, day = the month's first);
the modelled part's in int_mart_inputs (`cost_hourly/modelled`); the marts that read cost_hourly see one
fingerprint of both (int_mart_inputs `cost_hourly`). A missing `cost_hourly` fingerprint (deleted to force
a rebuild, or a build by Spark), a missing modelled part's (a table an earlier wastewatch built in full) or a
table of other columns rebuilds every month.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

import duckdb

from pipelines.transform.fingerprints import (
    MASK,
    SQL,
    STATE,
    Layers,
    Memo,
    combine,
    inputs_fingerprint,
    shape_hash,
    store_inputs,
    store_parts,
    stored_days,
    stored_inputs,
    table_fingerprint,
    text_hash,
)
from pipelines.warehouse import columns, drop_view, one, rows, sql_text, table_exists

NAME = "cost_hourly"
MODELLED = "cost_hourly/modelled"
# bounds that select no hour and no line (the modelled part's statement, the probe of the columns)
NOTHING = datetime(1, 1, 1)
NO_MONTHS = {"month_from": NOTHING, "month_to": NOTHING, "reach_from": NOTHING, "reach_to": NOTHING}


@dataclass(frozen=True)
class Month:
    """A month of billed hours: its first day, the reach of the lines its rows are spread from, and the
    fingerprint of the files in that reach."""

    month: date
    reach_from: datetime
    reach_to: datetime
    fingerprint: int


@dataclass
class MonthStats:
    """What one refresh did: months built again, months dropped, whether the modelled part was rebuilt."""

    months_rebuilt: list[date] = field(default_factory=list)
    months_removed: list[date] = field(default_factory=list)
    modelled: bool = False
    full: bool = False

    @property
    def kept(self) -> bool:
        return not (self.months_rebuilt or self.months_removed or self.modelled)


def refresh(
    con: duckdb.DuckDBPyConnection, digest: str, layers: Layers, full: bool = False, memo: Memo | None = None
) -> MonthStats:
    """Rebuild the months of cost_hourly whose bill changed, and the modelled part if its inputs did
    (inside the caller's transaction). `digest` is that of the mart's SQL; `memo` the run's fingerprints."""
    # a table built in full by an earlier wastewatch has a `cost_hourly` fingerprint but no modelled part's
    full = (
        _ensure_table(con) or full or stored_inputs(con, NAME) is None or stored_inputs(con, MODELLED) is None
    )
    stats = MonthStats(full=full)
    stored_columns = columns(con, "billing_lines")
    base = combine(
        text_hash(digest),
        text_hash(sql_text(SQL, "bill_months")),  # what decides which lines a month is spread from
        shape_hash(stored_columns),
        table_fingerprint(con, "billing_columns", memo=memo),
    )
    lines = "billing_lines" if any(c == "resource_id" for c, _ in stored_columns) else "billing_columns"
    months = {
        m.month: m for m in (Month(**r) for r in rows(con, sql_text(SQL, "bill_months"), {"lines": lines}))
    }
    current = {m: combine(base, int(v.fingerprint) & MASK) for m, v in months.items()}
    stored = {} if full else stored_days(con, NAME)
    stats.months_rebuilt = sorted(m for m, fp in current.items() if stored.get(m) != fp)
    stats.months_removed = sorted(m for m in stored if m not in current)
    if full:
        # every month and the modelled part in one statement, into a new table: what a mart built in full does
        bounds = _bounds(list(months.values())) if months else NO_MONTHS
        sql = f"create or replace table {NAME} as\n{sql_text('marts', NAME)}"
        con.execute(sql, {**bounds, "modelled": True})
        con.execute(f"delete from {STATE} where object = $o", {"o": NAME})  # noqa: S608 - our constant
    else:
        redo = stats.months_rebuilt + stats.months_removed
        for first, last in _runs(redo):
            con.execute(
                f"delete from {NAME} where pricing_basis = 'bill' and hour >= $from and hour < $to",  # noqa: S608
                {"from": first, "to": _next_month(last)},
            )
        con.execute(
            f"delete from {STATE} where object = $o and list_contains($days, day)",  # noqa: S608 - our constant
            {"o": NAME, "days": redo},
        )
        for first, last in _runs(stats.months_rebuilt):
            _insert(con, **_bounds([v for m, v in months.items() if first <= m <= last]), modelled=False)
    store_parts(con, STATE, NAME, {m: current[m] for m in stats.months_rebuilt})
    modelled = inputs_fingerprint(con, "int_cost_modelled", layers, digest, layer="intermediate", memo=memo)
    stats.modelled = full or modelled is None or stored_inputs(con, MODELLED) != modelled
    if stats.modelled:
        if not full:
            con.execute(f"delete from {NAME} where pricing_basis is distinct from 'bill'")  # noqa: S608
            _insert(con, **NO_MONTHS, modelled=True)
        store_inputs(con, MODELLED, modelled)
    if not stats.kept or stored_inputs(con, NAME) is None:
        months_state = int(one(con, sql_text(SQL, "day_state"), {"object": NAME})[0]) & MASK
        store_inputs(con, NAME, None if modelled is None else combine(months_state, modelled))
    return stats


def _bounds(run: list[Month]) -> dict[str, object]:
    """The statement's bounds for a run of consecutive months: their hours, and the lines of their reach."""
    first = min(m.month for m in run)
    last = max(m.month for m in run)
    return {
        "month_from": first,
        "month_to": _next_month(last),
        "reach_from": min(m.reach_from for m in run),
        "reach_to": max(m.reach_to for m in run),
    }


def _insert(con: duckdb.DuckDBPyConnection, **params: object) -> None:
    con.execute(f"insert into {NAME} by name\n{sql_text('marts', NAME)}", params)  # noqa: S608


def _ensure_table(con: duckdb.DuckDBPyConnection) -> bool:
    """Make cost_hourly again (empty) when it is a table of other columns than the query's; whether it must be
    built in full (it was missing or made again).

    A view of that name (the mart built by Spark before) is dropped first.
    """
    drop_view(con, NAME)
    if not table_exists(con, NAME):
        return True  # built in full from the query next: no need to probe its columns
    sql = f"create or replace temp table _cost_probe as\n{sql_text('marts', NAME)}\nlimit 0"
    con.execute(sql, {**NO_MONTHS, "modelled": False})
    created = not (table_exists(con, NAME) and columns(con, NAME) == columns(con, "_cost_probe"))
    if created:
        con.execute(f"drop table if exists {NAME}")  # noqa: S608 - our constant
        con.execute(f"create table {NAME} as from _cost_probe")  # noqa: S608 - our constant
    con.execute("drop table _cost_probe")
    return created


def _next_month(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


def _runs(months: list[date]) -> list[tuple[date, date]]:
    """Consecutive months grouped into (first, last) runs."""
    out: list[tuple[date, date]] = []
    for m in sorted(months):
        if out and m == _next_month(out[-1][1]):
            out[-1] = (out[-1][0], m)
        else:
            out.append((m, m))
    return out
