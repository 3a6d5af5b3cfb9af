"""Ad-hoc SQL for `wastewatch sql`: a script of one or more statements, run with named parameters.

A script comes from the command line, a file or stdin; it may hold several statements and `--` comments
(the shipped questions in `sql/reports/questions/` start with a `-- question:` header). Each statement is
run on its own with the named parameters it uses (`$name`), bound as values and never formatted into the
text. A week given as `week` (an ISO week such as 2026-W48) also provides `week_start` (its Monday) and
`week_end` (the Monday after, exclusive), as dates. An error names the source and the line in it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from rules import Window

WEEK_PARAMS = ("week", "week_start", "week_end")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# DuckDB's parser and binder errors point into the statement: "LINE 3: ..." (1-based, in the text given)
_LINE = re.compile(r"^LINE (\d+):", re.MULTILINE)
_LEADING = re.compile(r"(?:\s+|--[^\n]*)*")


class ScriptError(Exception):
    """The script cannot run: the message names the source and line (or the parameter) and the problem."""


class Refused(ScriptError):
    """DuckDB refused a statement that would write, reach a file, load an extension or change a setting."""


# how DuckDB words a refusal by the switches `warehouse.open_for_queries` sets
_REFUSALS = (
    "disabled by configuration",
    "configuration has been locked",
    "in read-only mode",
    "Persistent secrets are disabled",
    "Cannot attach",
    "Cannot detach",
    "belongs to an attached database",
)
REFUSED_HINT = (
    "refused: `wastewatch sql` only reads the warehouse (no writes, files, attachments, extensions or "
    "settings; docs/reliability.md)"
)


@dataclass(frozen=True)
class Result:
    line: int  # the line of the script where the statement's SQL starts
    columns: list[str]
    rows: list[tuple[Any, ...]]


def week_params(label: str) -> dict[str, Any]:
    """`week`, `week_start` (Monday) and `week_end` (the Monday after, exclusive) of an ISO week."""
    try:
        window = Window.iso_week(label)
    except ValueError as exc:
        raise ScriptError(f"--param week={label}: {exc}") from None
    return {"week": window.label, "week_start": window.start.date(), "week_end": window.end.date()}


def parse_params(pairs: Sequence[str], week: str | None = None) -> dict[str, Any]:
    """`NAME=VALUE` pairs (and `--week`) as named parameters; values stay strings except the week's dates."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip().lstrip("$")
        if not sep or not _NAME.fullmatch(name):
            raise ScriptError(f"--param {pair!r}: expected NAME=VALUE, e.g. --param week=2026-W48")
        if name in out:
            raise ScriptError(f"--param {name}: given twice")
        out[name] = value
    if week is not None:
        if "week" in out and out["week"] != week:
            raise ScriptError(f"--week {week} and --param week={out['week']} disagree")
        out["week"] = week
    if "week" in out:
        derived = week_params(str(out["week"]))
        for name in ("week_start", "week_end"):
            if name in out:
                raise ScriptError(f"--param {name}: follows from the week; give either the week or {name}")
        out.update(derived)
    return out


def _line_of(sql: str, offset: int) -> int:
    return sql.count("\n", 0, offset) + 1


def _where(source: str | None, line: int) -> str:
    return f"{source}:{line}" if source else f"line {line}"


def _problem(exc: duckdb.Error) -> tuple[str, int | None]:
    """DuckDB's message (its first line) and the line it points at in the statement, if it says."""
    text = str(exc)
    m = _LINE.search(text)
    return (text.strip().splitlines() or ["no message"])[0], int(m.group(1)) if m else None


def statements(sql: str, source: str | None = None) -> list[tuple[int, int, duckdb.Statement]]:
    """The script's statements with where each starts: (offset, line of its first SQL, statement)."""
    try:
        found = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        message, line = _problem(exc)
        raise ScriptError(f"{_where(source, line or 1)}: {message}") from None
    out = []
    pos = 0
    for stmt in found:
        start = sql.find(stmt.query, pos)
        start = pos if start < 0 else start
        pos = start + len(stmt.query)
        first = start + _LEADING.match(stmt.query).end()  # type: ignore[union-attr]  # matches ""
        out.append((start, _line_of(sql, first), stmt))
    if not out:
        raise ScriptError(f"{source or 'the query'}: no SQL statement in it")
    return out


def used_params(sql: str) -> set[str]:
    """The named parameters the script's statements use (an unparsable script uses none)."""
    try:
        return {name for stmt in duckdb.extract_statements(sql) for name in stmt.named_parameters}
    except duckdb.Error:
        return set()


def run_script(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any], source: str | None = None
) -> list[Result]:
    """Run every statement in order; the results of those that return rows, in order."""
    results = []
    for start, line, stmt in statements(sql, source):
        needed = set(stmt.named_parameters)
        missing = sorted(needed - params.keys())
        if missing:
            names = ", ".join(f"${m}" for m in missing)
            hint = (
                " (--week 2026-W48 gives $week, $week_start and $week_end)"
                if set(missing) & set(WEEK_PARAMS)
                else ""
            )
            raise ScriptError(
                f"{_where(source, line)}: the query needs {names}: give --param NAME=VALUE{hint}"
            )
        try:
            cur = con.execute(stmt.query, {k: params[k] for k in needed} if needed else None)
            returns_rows = stmt.expected_result_type == [duckdb.ExpectedResultType.QUERY_RESULT]
            if cur.description is not None and returns_rows:
                results.append(Result(line, [d[0] for d in cur.description], cur.fetchall()))
        except duckdb.Error as exc:
            message, relative = _problem(exc)
            at = _line_of(sql, start) + relative - 1 if relative else line
            if isinstance(exc, duckdb.PermissionException) or any(r in message for r in _REFUSALS):
                raise Refused(f"{_where(source, at)}: {REFUSED_HINT}: {message}") from None
            raise ScriptError(f"{_where(source, at)}: {message}") from None
    return results
