"""A query rule whose marts are all empty is not run (rules/_contract.py `Rule.evaluate`): what it returns
then is what its query returns on those empty marts, and a rule with one row in one of its marts runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from rules import ALL_RULES, FINDING_COLUMNS, Rule, Window
from rules._contract import all_empty, no_findings, polars_types
from tests.helpers.empty_warehouse import open_copy

QUERY_RULES = [r for r in ALL_RULES if r.query is not None]
WEEK = Window.iso_week("2026-W48")


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory, empty_marts: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = open_copy(empty_marts, tmp_path_factory.mktemp("empty") / "wastewatch.duckdb")
    yield con
    con.close()


@pytest.mark.parametrize("rule", QUERY_RULES, ids=lambda r: r.id)
def test_skipped_rule_returns_what_its_query_returns_on_empty_marts(
    rule: Rule, empty: duckdb.DuckDBPyConnection
) -> None:
    assert all_empty(empty, rule.requires)
    ran = rule.evaluate(empty, WEEK, run_on_empty=True)
    skipped = rule.evaluate(empty, WEEK)
    assert skipped.schema == ran.schema
    assert skipped.height == ran.height == 0


def test_no_findings_has_the_contract_columns_and_types() -> None:
    frame = no_findings()
    assert frame.height == 0
    assert dict(frame.schema) == {name: polars_types()[kind] for name, kind in FINDING_COLUMNS.items()}


def test_one_row_in_one_mart_is_not_empty(tmp_path: Path, empty_marts: Path) -> None:
    con = open_copy(empty_marts, tmp_path / "wastewatch.duckdb")
    try:
        rule = QUERY_RULES[0]
        assert all_empty(con, rule.requires)
        last = rule.requires[-1]
        con.execute(f"insert into {last} by name (select null as {_first_column(con, last)})")
        assert not all_empty(con, rule.requires)
        assert all_empty(con, rule.requires[:-1]) == (last not in rule.requires[:-1])
    finally:
        con.close()


def test_all_empty_takes_table_names_only(empty: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(ValueError, match="not a table name"):
        all_empty(empty, ("resources; drop table resources",))


def _first_column(con: duckdb.DuckDBPyConnection, table: str) -> str:
    (name,) = con.execute(
        "select column_name from information_schema.columns where table_name = $t order by ordinal_position limit 1",
        {"t": table},
    ).fetchone() or ("",)
    return str(name)


def test_a_rule_that_names_no_mart_is_run() -> None:
    con = duckdb.connect()
    try:
        con.execute("create table t (x int)")
        assert all_empty(con, ("t",)) and not all_empty(con, ())
    finally:
        con.close()
