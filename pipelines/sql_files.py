"""The project's SQL files: where they are, their text, their `-- key: value` headers and column notes, and
the COMMENTs those notes become on the warehouse's tables (split out of pipelines/warehouse.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import duckdb


def sql_root() -> Path:
    """`sql/` beside the packages in a checkout, or the copy shipped inside the wheel."""
    shipped = Path(__file__).parent / "_sql"
    return shipped if shipped.is_dir() else Path(__file__).resolve().parent.parent / "sql"


@cache
def sql_text(layer: str, name: str) -> str:
    path = sql_root() / layer / f"{name}.sql"
    return path.read_text(encoding="utf-8")


def header(sql: str) -> dict[str, str]:
    """The `-- key: value` comment header of a SQL file (grain, depends_on, ...)."""
    out: dict[str, str] = {}
    for line in sql.splitlines():
        m = re.match(r"--\s*([a-z_]+):\s*(.+)", line.strip())
        if m:
            out[m.group(1)] = m.group(2).strip()
        elif line.strip() and not line.strip().startswith("--"):
            break
    return out


# `-- key: value` header lines that describe the file (asset, check, blocking: an asset check's, in
# sql/checks/), continued by the indented (`--   `) lines right below; any other `-- name: note` header line
# documents the column `name` (the header lines after it continue the note, so column notes come last)
META_KEYS = ("grain", "depends_on", "params", "question", "columns_from", "asset", "check", "blocking")
_NOTE_LINE = re.compile(r"([a-z_][a-z0-9_]*):\s*(.+)")
# a DDL column line with a trailing note: `    name type ...,   -- note`
_DDL_COLUMN = re.compile(r"\s+([a-z_][a-z0-9_]*)\s+[^-]*?(--\s*)(.+)$")
_COMMENT_ONLY = re.compile(r"(\s*)--\s*(.*)$")


@dataclass(frozen=True)
class SqlNotes:
    """What a SQL file says about its object: header keys, the header's prose and column notes.

    Column notes come from `-- name: note` header lines, and in `sql/raw/` DDL from the trailing
    `-- note` of a column's line (a comment-only line whose `--` lines up under it continues it).
    """

    meta: dict[str, str]
    description: str
    columns: dict[str, str]

    @property
    def table_comment(self) -> str | None:
        """The object's COMMENT: its grain, then the header's prose."""
        parts = []
        if grain := self.meta.get("grain"):
            parts.append(f"Grain: {grain}" + ("" if grain[-1] in ".!?" else "."))
        if self.description:
            parts.append(self.description)
        return " ".join(parts) or None


def parse_notes(sql: str) -> SqlNotes:
    """The notes of one SQL file (see SqlNotes); a query's own `--` comments are never column notes."""
    meta: dict[str, str] = {}
    prose: list[str] = []
    columns: dict[str, str] = {}
    lines = sql.splitlines()
    current = None
    last_meta: str | None = None
    body = len(lines)
    for i, line in enumerate(lines):
        s = line.strip()
        if not s:
            continue
        if not s.startswith("--"):
            body = i
            break
        text = s[2:].strip()
        m = _NOTE_LINE.match(text)
        if last_meta and text and s[2:].startswith("  "):  # an indented line continues the header key above
            meta[last_meta] += " " + text
            continue
        last_meta = None
        if m and m.group(1) in META_KEYS:
            meta[m.group(1)] = m.group(2).strip()
            last_meta = m.group(1)
        elif m:
            current = m.group(1)
            columns[current] = m.group(2).strip()
        elif current and text:
            columns[current] += " " + text
        elif text:
            prose.append(text)
    if re.search(r"^\s*create\s+table", sql, re.IGNORECASE | re.MULTILINE):
        current, at = None, -1
        for line in lines[body:]:
            m = _DDL_COLUMN.match(line)
            c = _COMMENT_ONLY.match(line)
            if m:
                current, at = m.group(1), m.start(2)
                columns[current] = m.group(3).strip()
            elif c and current and len(c.group(1)) == at and c.group(2).strip():
                columns[current] += " " + c.group(2).strip()
            else:
                current = None
    return SqlNotes(meta, " ".join(prose), columns)


@cache
def sql_notes(layer: str, name: str) -> SqlNotes:
    return parse_notes(sql_text(layer, name))


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_text(text: str | None) -> str:
    return "null" if text is None else "'" + text.replace("'", "''") + "'"


def apply_comments(con: duckdb.DuckDBPyConnection, notes: dict[str, SqlNotes]) -> int:
    """Make DuckDB's COMMENTs on these tables/views and their columns say what their SQL files say.

    Idempotent: only comments that differ are (re)written (a note removed from the SQL clears its
    comment); notes naming no column of the object are skipped. Runs in the caller's transaction
    (COMMENT ON takes no parameters, so the text is quoted here; it comes from our own SQL files).
    Returns the number of COMMENT statements run.
    """
    names = list(notes)
    objects = {
        r["name"]: (r["kind"], r["comment"])
        for r in rows(
            con,
            "select table_name as name, 'table' as kind, comment from duckdb_tables() "
            "where database_name = current_database() and schema_name = 'main' and list_contains($n, table_name) "
            "union all "
            "select view_name, 'view', comment from duckdb_views() "
            "where database_name = current_database() and schema_name = 'main' and not internal "
            "and list_contains($n, view_name)",
            {"n": names},
        )
    }
    columns = rows(
        con,
        "select table_name, column_name, comment from duckdb_columns() "
        "where database_name = current_database() and schema_name = 'main' and list_contains($n, table_name)",
        {"n": names},
    )
    statements = []
    for name, (kind, comment) in objects.items():
        wanted = notes[name].table_comment
        if comment != wanted:
            statements.append(f"comment on {kind} {_quote_ident(name)} is {_quote_text(wanted)}")
    for c in columns:
        wanted = notes[c["table_name"]].columns.get(c["column_name"])
        if c["comment"] != wanted:
            target = f"{_quote_ident(c['table_name'])}.{_quote_ident(c['column_name'])}"
            statements.append(f"comment on column {target} is {_quote_text(wanted)}")
    if statements:
        con.execute(";\n".join(statements))  # one call: DuckDB runs them in order
    return len(statements)


def rows(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    cur = con.execute(sql, params or {})
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
