"""A run that builds several marts on one connection (`prepare_marts`, `finish_marts`) works its fingerprints
and COMMENTs out once, and leaves what building each mart on its own leaves: the same fingerprints, tables
and comments."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from pipelines.config import Config, load_config
from pipelines.ingest import ingest
from pipelines.marts.registry import MARTS
from pipelines.transform.build import (
    _layers,
    _mart_digest,
    build_mart_with_rollup,
    build_marts,
    finish_marts,
    prepare_marts,
)
from pipelines.transform.fingerprints import Memo, inputs_fingerprint, table_fingerprint
from pipelines.warehouse import connect, rows
from tests.helpers.billing_exports import csv_bytes, hours
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse

NOV = datetime(2026, 11, 2, 0, 0)


def _project(root: Path) -> Config:
    (root / "landing").mkdir(parents=True)
    write_config(root, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    (root / "landing" / "a.csv.gz").write_bytes(csv_bytes(hours("i-a", NOV, 6, "1.50")))
    (root / "landing" / "b.csv.gz").write_bytes(csv_bytes(hours("i-b", NOV, 3, "4.00")))
    return load_config(root / "wastewatch.yaml")


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Config, Path]:
    """The two bill files ingested once for the module: (config, a closed copy of the warehouse file)."""
    config = _project(tmp_path_factory.mktemp("ingested"))
    con = new_warehouse(config.warehouse_path)
    assert not ingest(con, config).rejected
    con.close()
    return config, config.warehouse_path


@pytest.fixture(scope="module")
def built(ingested: tuple[Config, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`ingested` with every mart built by `build_marts` (each mart on its own), closed."""
    config, source = ingested
    path = tmp_path_factory.mktemp("built") / "wastewatch.duckdb"
    shutil.copyfile(source, path)
    con = connect(path)
    build_marts(con, config)
    con.close()
    return path


def _opened(source: Path, path: Path) -> duckdb.DuckDBPyConnection:
    """A copy of a module fixture's warehouse, opened by `connect` (the test writes to its own copy)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, path)
    return connect(path)


def _comments(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str | None]]:
    return [
        (r["table_name"], r["column_name"], r["comment"])
        for r in rows(
            con,
            "select table_name, column_name, comment from duckdb_columns() where schema_name = 'main' "
            "and list_contains($m, table_name) union all "
            "select table_name, '', comment from duckdb_tables() where list_contains($m, table_name) order by all",
            {"m": list(MARTS)},
        )
    ]


def _state(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    out: dict[str, object] = {"inputs": rows(con, "select mart from int_mart_inputs order by all")}
    for name in MARTS:
        out[name] = con.execute(f"select count(*) from {name}").fetchall()  # noqa: S608 - our constants
    out["cost"] = con.execute("select sum(effective_cost) from cost_hourly").fetchall()
    return out


def _built_at(con: duckdb.DuckDBPyConnection) -> list[dict[str, object]]:
    return rows(con, "select mart, fingerprint, built_at from int_mart_inputs order by all")


def test_the_runs_fingerprints_are_each_marts_own(tmp_path: Path, built: Path) -> None:
    con = _opened(built, tmp_path / "w.duckdb")
    memo = Memo()
    layers = _layers()
    for name in MARTS:
        alone = inputs_fingerprint(con, name, layers, _mart_digest(name))
        assert inputs_fingerprint(con, name, layers, _mart_digest(name), memo=memo) == alone, name
    modelled = inputs_fingerprint(con, "int_cost_modelled", layers, "d", layer="intermediate")
    assert modelled is not None
    assert (
        inputs_fingerprint(con, "int_cost_modelled", layers, "d", layer="intermediate", memo=memo) == modelled
    )
    # the memo holds the bill as the run found it: a fingerprint of a table with rows, not of an empty one
    assert memo.tables["billing_line_items"] == table_fingerprint(con, "billing_line_items") is not None
    con.execute("delete from billing_lines where resource_id = 'i-b'")
    assert table_fingerprint(con, "billing_line_items") != memo.tables["billing_line_items"]
    con.close()


def test_a_run_of_every_mart_leaves_what_building_each_alone_leaves(
    tmp_path: Path, ingested: tuple[Config, Path], built: Path
) -> None:
    config = ingested[0]
    alone = _opened(built, tmp_path / "alone" / "w.duckdb")  # the same bill, each mart built on its own
    con = _opened(ingested[1], tmp_path / "run" / "w.duckdb")
    run = prepare_marts(con, config)
    for name in MARTS:
        build_mart_with_rollup(con, name, config, prepared=run)
    assert run.rolled_up
    finish_marts(con)
    assert _state(con) == _state(alone)
    assert _comments(con) == _comments(alone)
    assert any(comment for _, column, comment in _comments(con) if column == "effective_cost")
    # each mart built on its own finds the fingerprint the run stored: every one kept, nothing rewritten
    built = _built_at(con)
    assert len(built) == len(_built_at(alone)) > 10
    build_marts(con, config)
    assert _built_at(con) == built
    # and a second run over unchanged inputs keeps them too
    run = prepare_marts(con, config)
    for name in MARTS:
        build_mart_with_rollup(con, name, config, prepared=run)
    finish_marts(con)
    assert _built_at(con) == built
    alone.close()
    con.close()
