"""A mart built in full: its row count is what its `create table ... as` wrote (no count query after it), a
view of its name (left by `engine: spark`) is replaced by the table, and an unchanged mart is kept."""

from __future__ import annotations

from pathlib import Path

from pipelines.transform.build import build_mart_with_rollup, finish_marts, prepare_marts
from pipelines.warehouse import scalar
from tests.helpers.empty_warehouse import new_warehouse

# built in full from the bill's lines (empty here) and the config's pricing: cheap on a new warehouse
MART = "resources"


def test_the_count_is_the_tables_and_an_unchanged_mart_is_kept(tmp_path: Path) -> None:
    con = new_warehouse(tmp_path / "w.duckdb")
    try:
        run = prepare_marts(con)
        built, _ = build_mart_with_rollup(con, MART, prepared=run)
        assert built == scalar(con, f"select count(*) from {MART}")
        stamp = "select built_at from int_mart_inputs where mart = $m"
        first = scalar(con, stamp, {"m": MART})
        kept, _ = build_mart_with_rollup(con, MART, prepared=run)
        assert kept == built and scalar(con, stamp, {"m": MART}) == first  # not built again
        finish_marts(con)
    finally:
        con.close()


def test_a_view_of_the_marts_name_is_replaced_by_the_table(tmp_path: Path) -> None:
    con = new_warehouse(tmp_path / "w.duckdb")
    try:
        con.execute(f"create view {MART} as select 1 as stale")
        run = prepare_marts(con)
        n, _ = build_mart_with_rollup(con, MART, prepared=run)
        kind = scalar(
            con, "select table_type from information_schema.tables where table_name = $t", {"t": MART}
        )
        assert kind == "BASE TABLE"
        assert n == scalar(con, f"select count(*) from {MART}")
        assert "stale" not in {r[0] for r in con.execute(f"describe {MART}").fetchall()}
    finally:
        con.close()
