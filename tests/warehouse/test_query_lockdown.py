"""`wastewatch sql` cannot write or reach outside the warehouse: DuckDB itself refuses (issue 39, item 1).

Each statement kind runs on a real warehouse file opened as `sql` opens it (`open_for_queries`); every file
in the folder (the warehouse, the published copy, a file a statement names) must be byte-identical after.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pipelines.report.adhoc import Refused, run_script
from pipelines.warehouse import connect, open_for_queries
from tests.helpers.config import write_config


def _hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    folder = tmp_path / "warehouse"
    live = folder / "wastewatch.duckdb"
    con = connect(live)
    con.execute("create table mine as select 1 as a")
    con.close()
    (folder / "wastewatch.published.duckdb").write_bytes(live.read_bytes())
    (folder / "victim.csv").write_text("a\n1\n")
    return live


def _refusals(folder: Path) -> list[str]:
    live = folder / "wastewatch.duckdb"
    return [
        f"attach '{live}' as w (READ_ONLY false)",
        f"attach '{folder / 'new.duckdb'}' as n",
        "attach ':memory:' as m",
        f"copy (select 1 as a) to '{folder / 'out.csv'}'",
        f"copy (select 1 as a) to '{folder / 'victim.csv'}' (use_tmp_file false)",
        f"copy mine from '{folder / 'victim.csv'}'",
        f"export database '{folder / 'dump'}'",
        "select * from read_csv('/etc/passwd')",
        f"select * from read_text('{folder / 'victim.csv'}')",
        "select * from glob('/etc/*')",
        "install httpfs",
        "load httpfs",
        "set threads = 1",
        "set enable_external_access = true",
        "reset memory_limit",
        "pragma enable_profiling",
        f"set profiling_output = '{folder / 'profile.json'}'",
        "create persistent secret s (type http, bearer_token 'x')",
        "create table x as select 1 as a",
        "insert into mine values (2)",
        "update mine set a = 3",
        "delete from mine",
        "drop table mine",
        "create view v as select 1 as a",
        "create macro m() as 1",
        "insert into remediation_log select * from remediation_log",
        f"copy (select 1 as a) to '{live}'",
        "detach wastewatch",
    ]


def test_every_write_file_attach_extension_and_setting_statement_is_refused_and_nothing_changes(
    warehouse: Path,
) -> None:
    folder = warehouse.parent
    for target in (warehouse, folder / "wastewatch.published.duckdb"):
        for statement in _refusals(folder):
            before = _hashes(folder)
            with open_for_queries(target) as con, pytest.raises(Refused) as refused:
                run_script(con, statement, {})
            assert "refused: `wastewatch sql` only reads the warehouse" in str(refused.value), statement
            assert "\n" not in str(refused.value)
            assert _hashes(folder) == before, statement
            assert not (folder / "new.duckdb").exists() and not (folder / "out.csv").exists()


def test_temporary_objects_stay_allowed_and_leave_no_file(warehouse: Path, tmp_path: Path) -> None:
    folder = warehouse.parent
    before = _hashes(folder)
    with open_for_queries(warehouse) as con:
        results = run_script(
            con,
            "create temp table t as select range as i from range(1000);\n"
            "create temp macro twice(x) as 2 * x;\n"
            "select count(*), max(twice(i)) from t;\n"
            "select a from mine",
            {},
        )
        spill = con.execute("select current_setting('temp_directory')").fetchone()[0]
    assert [r.rows for r in results] == [[(1000, 1998)], [(1,)]]
    assert _hashes(folder) == before
    assert not Path(spill).is_relative_to(folder) and not Path(spill).exists()


def test_a_view_over_parquet_is_a_table_in_the_published_copy(tmp_path: Path) -> None:
    """The Spark engine's marts are views over Parquet in the warehouse; publish turns them into tables so
    that `sql` reads them without file access (no folder is ever whitelisted). Publishing reads the marts
    folder only: a view planted over another file is not materialised (its secret never reaches the copy)."""
    from pipelines.transform.publish import _materialise_file_views

    marts = tmp_path / "marts"
    marts.mkdir()
    duckdb.sql(f"copy (select 1 as a, 'x' as b) to '{marts / 'part-0.parquet'}'")
    copy = tmp_path / "copy.duckdb"
    con = duckdb.connect(str(copy))
    con.execute(f"create view spark_mart as select * from read_parquet('{marts}/*.parquet')")
    con.execute("comment on view spark_mart is 'one row per thing'")
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    con.execute(f"create view leak as select * from read_csv('{secret}', header = false)")  # planted
    con.close()
    assert _materialise_file_views(copy, str(marts)) == ["spark_mart"]
    (marts / "part-0.parquet").unlink()  # the copy no longer needs the files
    with open_for_queries(copy) as con:
        assert run_script(con, "select a, b from spark_mart", {})[0].rows == [(1, "x")]
        kind = con.execute("select comment from duckdb_tables() where table_name = 'spark_mart'").fetchall()
        with pytest.raises(Refused):
            run_script(con, "select * from leak", {})
    assert kind == [("one row per thing",)]
    assert b"s3cret" not in copy.read_bytes()


def test_sql_exits_1_with_one_line_for_a_refused_statement(tmp_path: Path, warehouse: Path) -> None:
    config = write_config(tmp_path, f"warehouse: {warehouse}\nsources: []\n")
    before = _hashes(warehouse.parent)
    done = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "--config", str(config), "-q", "sql",
         f"attach '{warehouse}' as w (READ_ONLY false); create table w.x as select 1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: line 1: refused:"), done.stderr
    assert _hashes(warehouse.parent) == before
