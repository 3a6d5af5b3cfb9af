"""Publishing by what changed (pipelines/transform/publish.py): two private copies used in turn, the one
the readers do not hold brought up to date table by table and file by file, then renamed over the twin. The
twin always equals the warehouse, table for table; a reader holding a twin is never blocked; a publish
killed while it updates a copy leaves the previous twin as it was, and the next publish is complete."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from pipelines.config import Config, load_config
from pipelines.failpoints import ENV
from pipelines.ingest import ingest
from pipelines.transform.publish import private_copies, publish
from pipelines.warehouse import open_for_queries
from tests.helpers.billing_exports import csv_bytes, hours
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_current
from tests.helpers.marts import build_only
from tests.helpers.paths import REPO, put_back


def _project(tmp_path: Path) -> Config:
    (tmp_path / "landing").mkdir(exist_ok=True)
    # publish_update_above_mb 0: these warehouses are small, and a small one is otherwise copied whole
    write_config(
        tmp_path,
        "duckdb: {publish_update_above_mb: 0}\nsources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n",
    )
    return load_config(tmp_path / "wastewatch.yaml")


def _night(config: Config, name: str, first: datetime, cost: str) -> None:
    """A delivery of file `name`, ingested, `resources` built: what a night writes before it publishes."""
    (config.warehouse_path.parent.parent / "landing" / name).write_bytes(
        csv_bytes(hours("i-gpu", first, 4, cost, tags={"team": name}))
    )
    con = open_current(config.warehouse_path)
    try:
        assert not ingest(con, config).rejected
        build_only(con, "resources")
    finally:
        con.close()


@pytest.fixture(scope="module")
def september(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A project (`_project`) after its first night (September's file ingested, `resources` built), made
    once for the module: its folder, and a pristine copy that each test puts back there before it starts
    (at the place it was ingested: the ledger records absolute uris, so a copy elsewhere would be a moved
    project, whose next ingest records every file again)."""
    place = tmp_path_factory.mktemp("project")
    _night(_project(place), "sep.csv.gz", datetime(2026, 9, 1), "1.00")
    pristine = tmp_path_factory.mktemp("september") / "project"
    shutil.copytree(place, pristine)
    return place, pristine


def _after_september(september: tuple[Path, Path]) -> Config:
    """The module's project as its first night left it, put back in its place."""
    place, pristine = september
    put_back(pristine, place)
    return load_config(place / "wastewatch.yaml")


def _contents(path: Path) -> dict[str, object]:
    """Every table's rows and every view's SQL of a warehouse file."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [
            r[0] for r in con.execute("select table_name from duckdb_tables() where not temporary").fetchall()
        ]
        out: dict[str, object] = {
            t: con.execute(f'select * from "{t}" order by all').fetchall() for t in tables
        }
        out["views"] = con.execute(
            "select view_name, sql from duckdb_views() where not internal order by 1"
        ).fetchall()
        return out
    finally:
        con.close()


def test_the_twin_is_updated_by_what_changed_and_equals_the_warehouse(
    september: tuple[Path, Path],
) -> None:
    config = _after_september(september)
    a, b = private_copies(config.published_path)
    publish(config)  # a: made whole (there was none)
    _night(config, "oct.csv.gz", datetime(2026, 10, 1), "2.00")
    publish(config)  # b: made whole
    inode = a.stat().st_ino
    assert config.published_path.stat().st_ino == b.stat().st_ino

    # October restated and November new: a is updated where it is, by the changed tables and files
    _night(config, "oct.csv.gz", datetime(2026, 10, 1), "3.00")
    _night(config, "nov.csv.gz", datetime(2026, 11, 1), "4.00")
    publish(config)
    assert a.stat().st_ino == inode
    assert config.published_path.stat().st_ino == inode
    assert _contents(config.published_path) == _contents(config.warehouse_path)
    with open_for_queries(config.published_path) as con:
        assert con.execute("select sum(billed_cost), count(*) from billing_line_items").fetchall() == [
            (32, 12)
        ]
        assert con.execute("select team from resources").fetchall() == [("nov.csv.gz",)]


def test_a_reader_holding_the_twin_is_never_blocked_and_keeps_what_it_opened(
    september: tuple[Path, Path],
) -> None:
    config = _after_september(september)
    publish(config)
    reader = duckdb.connect(str(config.published_path), read_only=True)
    try:
        _night(config, "oct.csv.gz", datetime(2026, 10, 1), "2.00")
        publish(config)  # b, beside the twin the reader holds
        _night(config, "nov.csv.gz", datetime(2026, 11, 1), "3.00")
        publish(config)  # a is still held by the reader: made again whole, under the reader's feet
        assert reader.execute("select count(*) from billing_lines").fetchall() == [(4,)]
    finally:
        reader.close()
    assert _contents(config.published_path) == _contents(config.warehouse_path)


def test_a_publish_killed_while_it_updates_a_copy_leaves_the_twin_as_it_was(
    september: tuple[Path, Path],
) -> None:
    config = _after_september(september)
    publish(config)
    _night(config, "oct.csv.gz", datetime(2026, 10, 1), "2.00")
    publish(config)
    before = _contents(config.published_path)
    _night(config, "nov.csv.gz", datetime(2026, 11, 1), "3.00")
    script = (
        "from pipelines.config import load_config; from pipelines.transform.publish import publish; "
        f"publish(load_config({str(september[0] / 'wastewatch.yaml')!r}))"
    )
    killed = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, ENV: "publish.updated", "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr
    assert _contents(config.published_path) == before
    publish(config)  # the half-updated copy is not trusted: made again whole
    assert _contents(config.published_path) == _contents(config.warehouse_path)
    leftovers = [
        p.name for p in config.published_path.parent.iterdir() if p.name.endswith((".publishing", ".wal"))
    ]
    assert leftovers == []


def test_a_day_table_is_updated_by_its_recorded_days_and_a_landed_table_by_its_files(
    september: tuple[Path, Path],
) -> None:
    """Only what the records say changed is copied: a row changed behind the records' back (which no
    wastewatch step does) stays as it was in the twin, which shows the rest was not copied again."""
    config = _after_september(september)
    con = open_current(config.warehouse_path)
    con.execute("create table gpu_hours (hour timestamp, util double)")  # a table kept up to date by day
    con.execute("insert into gpu_hours values ('2026-09-01 01:00', 10), ('2026-09-02 01:00', 20)")
    con.execute(
        "insert into int_incremental_days values ('gpu_hours', '2026-09-01', 1, now()), "
        "('gpu_hours', '2026-09-02', 2, now())"
    )
    con.close()
    publish(config)
    publish(config)  # both copies made; the next publish updates a
    inode = private_copies(config.published_path)[0].stat().st_ino
    con = open_current(config.warehouse_path)
    # 2 September built again (its record rewritten); 1 September's row changed behind the records' back
    con.execute("update gpu_hours set util = 21 where hour = '2026-09-02 01:00'")
    con.execute("update int_incremental_days set built_at = now() + interval 1 hour where day = '2026-09-02'")
    con.execute("update gpu_hours set util = 11 where hour = '2026-09-01 01:00'")
    # October's file landed; a September line changed behind the ledger's back
    con.close()
    _night(config, "oct.csv.gz", datetime(2026, 10, 1), "2.00")
    con = open_current(config.warehouse_path)
    sep = con.execute("select min(x_file_id) from billing_lines").fetchall()[0][0]
    con.execute("update billing_lines set billed_cost = 99 where x_file_id = $f", {"f": sep})
    con.close()
    publish(config)
    assert config.published_path.stat().st_ino == inode
    ro = duckdb.connect(str(config.published_path), read_only=True)
    try:
        assert ro.execute("select util from gpu_hours order by hour").fetchall() == [(10,), (21,)]
        assert ro.execute(
            "select billed_cost, count(*) from billing_lines group by 1 order by 1"
        ).fetchall() == [
            (1, 4),
            (2, 4),
        ]
    finally:
        ro.close()


def test_a_spark_mart_is_a_table_in_the_twin_updated_by_what_changed(
    september: tuple[Path, Path],
) -> None:
    """The Spark engine's marts are views over Parquet in the warehouse: the twin holds them as tables (no
    file access for `sql`), taken again from the marts folder at every publish."""
    config = _after_september(september)
    marts = september[0] / "marts"  # in the project, where the twin's readers may read files
    marts.mkdir()
    duckdb.sql(f"copy (select 1 as a) to '{marts / 'part-0.parquet'}'")
    con = open_current(config.warehouse_path)
    con.execute(f"create view spark_mart as select * from read_parquet('{marts}/*.parquet')")
    con.close()
    publish(config)
    publish(config)
    a = private_copies(config.published_path)[0]
    inode = a.stat().st_ino
    duckdb.sql(f"copy (select 2 as a) to '{marts / 'part-0.parquet'}'")  # Spark built it again
    publish(config)  # a updated by what changed
    assert config.published_path.stat().st_ino == a.stat().st_ino == inode
    with open_for_queries(config.published_path) as con:
        assert con.execute("select a from spark_mart").fetchall() == [(2,)]
        kind = con.execute("select count(*) from duckdb_tables() where table_name = 'spark_mart'").fetchall()
    assert kind == [(1,)]


def test_a_small_warehouse_is_copied_whole_at_every_publish_and_no_record_is_kept(tmp_path: Path) -> None:
    """Below `duckdb.publish_update_above_mb` (1 GB by default) a whole-file copy is cheaper than finding
    and writing what changed, so no private copy keeps a record to be updated from."""
    (tmp_path / "landing").mkdir()
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    assert config.duckdb.publish_update_above_mb == 1024
    a, b = private_copies(config.published_path)
    for name, first, cost in (
        ("sep.csv.gz", datetime(2026, 9, 1), "1.00"),
        ("oct.csv.gz", datetime(2026, 10, 1), "2.00"),
        ("nov.csv.gz", datetime(2026, 11, 1), "4.00"),
    ):
        _night(config, name, first, cost)
        publish(config)
        assert _contents(config.published_path) == _contents(config.warehouse_path)
    assert config.published_path.stat().st_ino in {a.stat().st_ino, b.stat().st_ino}
    assert not [p for p in tmp_path.rglob("*.json") if p.name.startswith(config.published_path.name)]
