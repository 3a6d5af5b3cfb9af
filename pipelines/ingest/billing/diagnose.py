"""A failed insert explained. The staging SQL casts strictly, so a bad value fails the insert in one pass;
only then, after the rollback, does this slower diagnosis find the first bad data row and column for the
message (a load that succeeds never pays for it).
"""

from __future__ import annotations

import re

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.billing.lines import Spec
from pipelines.ingest.billing.relation import Relation, worded
from pipelines.ingest.billing.sql_expr import file_params, src_cte
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import duckdb_problem, quote_ident
from pipelines.ingest.sniff import encoding_problem
from pipelines.warehouse import one

# Check.kind -> (SQL true for a value the staging SQL cannot cast, what the message says was expected)
CHECK_SQL = {
    "money": ("{c} is not null and try_cast({c} as decimal(38, 12)) is null", "a decimal number"),
    "price": ("{c} is not null and try_cast({c} as decimal(28, 12)) is null", "a decimal number"),
    "number": ("{c} is not null and try_cast({c} as double) is null", "a number"),
    "timestamp": (
        "{c} is not null and try_billing_ts({c}, $date_format) is null",
        "an ISO 8601 date/time (UTC)",
    ),
    "date": (
        "{c} is not null and try_billing_date({c}, $date_format) is null",
        "a date (YYYY-MM-DD or MM/DD/YYYY)",
    ),
    "json": (
        "{c} is not null and trim({c}::varchar) <> '' and not json_valid({c}::varchar)",
        "a JSON object",
    ),
    "required": ("{c} is null", "a value (it is required)"),
}


# a date in a form of none of the format's own (`4/1/25`, `31.12.2025`), not an impossible one in the right
# form (`2023-02-01T30:00:00Z`): the producer's form can be named
DATE_REMEDY = (
    "for dates written in another form, set options.date_format (strptime: '%m/%d/%y', '%d.%m.%Y %H:%M')"
)
_ISO_START = re.compile(r"\s*\d{4}-\d{2}-\d{2}")


def _another_form(value: str | None) -> bool:
    return value is not None and value.strip() != "" and _ISO_START.match(value) is None


class LoadFailed(Exception):
    """The insert of a billing file failed; `explain` (after the rollback) finds the row and column."""

    def __init__(self, rel: Relation, spec: Spec, file: SourceFile, exc: duckdb.Error) -> None:
        self.rel, self.spec, self.file, self.exc = rel, spec, file, exc
        super().__init__(f"{file.uri}: {duckdb_problem(exc)}")

    def explain(self, con: duckdb.DuckDBPyConnection) -> RejectedFile:
        con.execute("reset preserve_insertion_order")
        con.execute("reset enable_profiling")  # set when the failed insert was observed (insert_lines)
        return diagnose(con, self.rel, self.spec, self.file, self.exc)


def diagnose(
    con: duckdb.DuckDBPyConnection, rel: Relation, spec: Spec, file: SourceFile, exc: duckdb.Error
) -> RejectedFile:
    """The insert failed (and was rolled back): the rejection naming the first data row and column with a
    bad value, else DuckDB's error."""
    base = worded(duckdb_problem(exc))
    if rel.fmt == "csv" and "Invalid unicode" in str(exc):
        # DuckDB sniffs a sample; a byte in another encoding past it surfaces here: name its offset and line
        found = encoding_problem(rel.path)
        if found is not None:
            return RejectedFile(file.uri, found[0], line=found[1])
    if not spec.checks:
        return RejectedFile(file.uri, f"cannot load: {base}")
    cte = src_cte(rel.numbered_from, "_n", spec.columns)
    conds = []
    for check in spec.checks:
        template, _ = CHECK_SQL[check.kind]
        conds.append(template.format(c=quote_ident(check.column)))
    selects = ", ".join(f"min(_row) filter (where {c})" for c in conds)
    sql = f"{cte}select {selects} from _src"  # noqa: S608 - identifiers only, values are bound
    try:
        first = one(con, sql, file_params(rel, spec, sql))
    except duckdb.Error as exc2:
        return RejectedFile(file.uri, f"cannot read: {worded(duckdb_problem(exc2))}")
    assert first is not None
    bad = [(row, check) for row, check in zip(first, spec.checks, strict=True) if row is not None]
    if not bad:
        return RejectedFile(file.uri, f"cannot load: {base}")
    row, check = min(bad, key=lambda b: b[0])
    value = one(
        con,
        f"{cte}select {quote_ident(check.column)}::varchar from _src where _row = $row",  # noqa: S608 - identifiers only
        {**rel.params, "row": row},
    )
    shown = value[0] if value else None
    expected = check.expected or CHECK_SQL[check.kind][1]
    problem = (
        f"expected {expected}, found {shown!r} (data row {row})"
        if shown is not None
        else (f"expected {expected}, found nothing (data row {row})")
    )
    others = len({c.column for _, c in bad}) - 1
    if others:
        problem += f"; {others} other column(s) also have bad values"
    if check.kind in ("timestamp", "date") and not spec.bind.get("date_format") and _another_form(shown):
        problem += f"; {DATE_REMEDY}"
    return RejectedFile(
        file.uri, problem, line=row + rel.header_line if rel.fmt == "csv" else None, column=check.shown
    )
