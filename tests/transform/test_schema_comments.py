"""Marts and intermediate objects carry their SQL header's notes as DuckDB comments, rebuild after rebuild."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from pipelines.marts.registry import INTERMEDIATE, MARTS
from pipelines.transform.build import build_mart
from pipelines.warehouse import apply_comments, connect, sql_notes

LAYERS = [("intermediate", n) for n in INTERMEDIATE] + [("marts", n) for n in MARTS]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, empty_marts: Path) -> Path:
    """A new warehouse with every mart built: a copy of the process's `empty_marts` (tests/conftest.py)."""
    path = tmp_path_factory.mktemp("comments") / "wastewatch.duckdb"
    shutil.copyfile(empty_marts, path)
    return path


def _object_comment(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    rows = con.execute(
        "select comment from duckdb_tables() where table_name = $n "
        "union all select comment from duckdb_views() where view_name = $n",
        {"n": name},
    ).fetchall()
    assert len(rows) == 1, name
    return rows[0][0]


def _column_comments(con: duckdb.DuckDBPyConnection, name: str) -> dict[str, str | None]:
    return dict(
        con.execute(
            "select column_name, comment from duckdb_columns() where table_name = $n", {"n": name}
        ).fetchall()
    )


@pytest.mark.parametrize(("layer", "name"), LAYERS, ids=[n for _, n in LAYERS])
def test_every_mart_and_view_holds_its_header_notes(built: Path, layer: str, name: str) -> None:
    notes = sql_notes(layer, name)
    con = connect(built, read_only=True)
    try:
        comment = _object_comment(con, name)
        assert comment == notes.table_comment and comment.startswith("Grain: "), name
        columns = _column_comments(con, name)
        # a header note naming no column is a typo or a stale note
        assert set(notes.columns) <= set(columns), f"{name}: notes for missing columns"
        assert {c: v for c, v in columns.items() if v is not None} == notes.columns
    finally:
        con.close()


def test_marts_document_the_columns_rules_and_reports_read(built: Path) -> None:
    con = connect(built, read_only=True)
    try:
        cost = _column_comments(con, "cost_hourly")
        assert "what the rules price from" in cost["effective_cost"]
        assert cost["allocation"].startswith("how the row's cost reached the hour: 'hourly'")
        assert _column_comments(con, "gpu_hours")["coverage"].startswith("share of the hour the samples")
        assert _column_comments(con, "jobs_enriched")["team_source"].startswith("record | host billing tags")
        commented = con.execute(
            "select count(*) from duckdb_columns() where comment is not null and list_contains($m, table_name)",
            {"m": list(MARTS)},
        ).fetchall()[0][0]
        assert commented >= 40
    finally:
        con.close()


def test_rebuilding_keeps_the_comments_and_has_nothing_left_to_write(built: Path) -> None:
    con = connect(built)
    try:
        before = {name: (_object_comment(con, name), _column_comments(con, name)) for _, name in LAYERS}
        for name in ("cost_hourly", "gpu_hours", "storage_prices"):  # full rebuild, day-incremental, full
            build_mart(con, name)
        after = {name: (_object_comment(con, name), _column_comments(con, name)) for _, name in LAYERS}
        assert after == before
        assert apply_comments(con, {name: sql_notes(layer, name) for layer, name in LAYERS}) == 0
    finally:
        con.close()
