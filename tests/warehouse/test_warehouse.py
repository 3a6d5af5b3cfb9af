"""The warehouse file: creation, reopening, upgrades (and failed ones), refusals, publishing."""

from __future__ import annotations

import csv
import stat
import subprocess
import sys
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipelines.config import Config
from pipelines.ingest import ingest
from pipelines.ingest.billing.lines import DERIVED
from pipelines.transform.publish import PUBLISH_SUFFIX, publish
from pipelines.warehouse import (
    CATALOG_DIR,
    RAW_TABLES,
    SCHEMA_VERSION,
    WarehouseError,
    apply_comments,
    connect,
    current_version,
    migrate,
    parse_notes,
    raw_notes,
    sql_text,
)
from tests.helpers.paths import FIXTURES, FOCUS_SAMPLE, REPO, copy_into

NEXT = SCHEMA_VERSION + 1


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {
        r[0]
        for r in con.execute(
            "select table_name from information_schema.tables where table_schema = 'main'"
        ).fetchall()
    }


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            "select column_name from information_schema.columns where table_name = $t order by ordinal_position",
            {"t": table},
        ).fetchall()
    ]


def _versions(con: duckdb.DuckDBPyConnection) -> list[tuple[int, str]]:
    return con.execute("select version, description from schema_version order by version").fetchall()


def _add_ledger_row(con: duckdb.DuckDBPyConnection, uri: str = "/landing/a.csv", rows: int = 42) -> None:
    con.execute(
        """insert into ingest_files (file_id, source, kind, uri, size_bytes, rows, status,
                                     first_seen_at, checked_at, loaded_at)
           values ($id, 'focus', 'focus', $uri, 123, $rows, 'loaded',
                   timestamp '2024-09-02 00:00:00', timestamp '2024-09-02 00:00:00',
                   timestamp '2024-09-02 00:00:00')""",
        {"id": f"id-{uri}", "uri": uri, "rows": rows},
    )


def _ledger(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute("select uri, rows, status from ingest_files order by uri").fetchall()


def _catalog_rows() -> int:
    with (CATALOG_DIR / "gpu_instance_types.csv").open(newline="", encoding="utf-8") as f:
        return sum(1 for _ in csv.DictReader(f))


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """A warehouse at the current schema version holding one ledger row; closed."""
    path = tmp_path / "wh" / "wastewatch.duckdb"
    con = connect(path)
    _add_ledger_row(con)
    con.close()
    return path


def _write_migrations(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "migrations"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


# --- creation and reopening -------------------------------------------------------------------------


def test_new_file_is_stamped_and_has_every_raw_table(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "wastewatch.duckdb"  # parent folders are created
    con = connect(path)
    try:
        assert path.is_file()
        assert set(RAW_TABLES) <= _tables(con)
        assert current_version(con) == SCHEMA_VERSION
        assert _versions(con) == [(SCHEMA_VERSION, "initial schema")]
        assert con.execute("select count(*) from gpu_instance_types").fetchall()[0][0] == _catalog_rows() > 0
        for table in ("ingest_files", "billing_line_items", "gpu_samples", "findings"):
            assert con.execute(f"select count(*) from {table}").fetchall()[0][0] == 0, table
        assert con.execute("select current_setting('TimeZone')").fetchall()[0][0] == "UTC"
    finally:
        con.close()


def test_reopening_is_a_no_op_that_keeps_the_data(warehouse: Path) -> None:
    for _ in range(2):
        con = connect(warehouse)
        try:
            assert _versions(con) == [(SCHEMA_VERSION, "initial schema")]
            assert _ledger(con) == [("/landing/a.csv", 42, "loaded")]
            # the instance-type catalogue is reloaded, never appended
            assert con.execute("select count(*) from gpu_instance_types").fetchall()[0][0] == _catalog_rows()
        finally:
            con.close()


def test_read_only_connection_on_a_missing_file_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "wastewatch.duckdb"
    with pytest.raises(WarehouseError) as err:
        connect(path, read_only=True)
    assert str(path) in str(err.value) and "no warehouse here yet" in str(err.value)
    assert not path.exists() and not path.parent.exists()


def test_read_only_connection_reads_but_cannot_write(warehouse: Path) -> None:
    con = connect(warehouse, read_only=True)
    try:
        assert _ledger(con) == [("/landing/a.csv", 42, "loaded")]
        with pytest.raises(duckdb.Error, match="read-only"):
            _add_ledger_row(con, "/landing/b.csv")
    finally:
        con.close()


# --- upgrades ------------------------------------------------------------------------------------------


def test_upgrade_applies_the_missing_migration_and_keeps_the_data(warehouse: Path, tmp_path: Path) -> None:
    folder = _write_migrations(
        tmp_path,
        {
            # already applied (<= the file's version): must not run again, or this bad SQL would fail
            f"{SCHEMA_VERSION:04d}_initial.sql": "this is not sql",
            f"{NEXT:04d}_add_note.sql": (
                "alter table ingest_files add column note varchar;\n"
                "update ingest_files set note = 'migrated';\n"
            ),
            "README.md": "not a migration",
            "notes.sql": "not numbered, so not a migration either",
        },
    )
    con = connect(warehouse)
    try:
        assert migrate(con, target=NEXT, migrations_dir=folder) == NEXT
        assert current_version(con) == NEXT
    finally:
        con.close()
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        assert _versions(con) == [(SCHEMA_VERSION, "initial schema"), (NEXT, f"{NEXT:04d}_add_note")]
        assert _columns(con, "ingest_files")[-1] == "note"
        assert con.execute("select uri, rows, status, note from ingest_files").fetchall() == [
            ("/landing/a.csv", 42, "loaded", "migrated")
        ]
    finally:
        con.close()


def test_several_migrations_run_in_number_order(warehouse: Path, tmp_path: Path) -> None:
    folder = _write_migrations(
        tmp_path,
        {
            f"{NEXT + 1:04d}_tag_note.sql": "update ingest_files set note = note || '+second';",
            f"{NEXT:04d}_add_note.sql": (
                "alter table ingest_files add column note varchar; update ingest_files set note = 'first';"
            ),
        },
    )
    con = connect(warehouse)
    try:
        assert migrate(con, target=NEXT + 1, migrations_dir=folder) == NEXT + 1
        assert [v for v, _ in _versions(con)] == [SCHEMA_VERSION, NEXT, NEXT + 1]
        assert con.execute("select note from ingest_files").fetchall() == [("first+second",)]
        # at the target already: nothing runs again
        assert migrate(con, target=NEXT + 1, migrations_dir=folder) == NEXT + 1
        assert con.execute("select note from ingest_files").fetchall() == [("first+second",)]
    finally:
        con.close()


def test_a_failing_migration_rolls_back_and_leaves_the_old_version(warehouse: Path, tmp_path: Path) -> None:
    folder = _write_migrations(
        tmp_path,
        {
            f"{NEXT:04d}_broken.sql": (
                "alter table ingest_files add column note varchar;\n"
                "delete from ingest_files;\n"
                "select * from no_such_table;\n"
            ),
        },
    )
    con = connect(warehouse)
    try:
        with pytest.raises(WarehouseError) as err:
            migrate(con, target=NEXT, migrations_dir=folder)
        assert f"{NEXT:04d}_broken.sql" in str(err.value) and "no_such_table" in str(err.value)
        # the same connection sees the rolled-back state ...
        assert current_version(con) == SCHEMA_VERSION
        assert "note" not in _columns(con, "ingest_files")
        assert _ledger(con) == [("/landing/a.csv", 42, "loaded")]
    finally:
        con.close()
    # ... and so does the file
    con = connect(warehouse)
    try:
        assert _versions(con) == [(SCHEMA_VERSION, "initial schema")]
        assert "note" not in _columns(con, "ingest_files")
        assert _ledger(con) == [("/landing/a.csv", 42, "loaded")]
    finally:
        con.close()


def test_an_upgrade_with_a_missing_migration_is_refused_before_anything_runs(
    warehouse: Path, tmp_path: Path
) -> None:
    folder = _write_migrations(
        tmp_path, {f"{NEXT:04d}_add_note.sql": "alter table ingest_files add column note varchar;"}
    )
    con = connect(warehouse)
    try:
        with pytest.raises(WarehouseError) as err:
            migrate(con, target=NEXT + 1, migrations_dir=folder)
        message = str(err.value)
        assert f"from schema version {SCHEMA_VERSION} to {NEXT + 1}" in message
        assert f"no migration for version(s) {NEXT + 1}" in message
        assert current_version(con) == SCHEMA_VERSION
        assert "note" not in _columns(con, "ingest_files")
    finally:
        con.close()


# --- refusals ----------------------------------------------------------------------------------------


def test_a_warehouse_newer_than_the_code_is_refused_and_left_alone(warehouse: Path) -> None:
    con = duckdb.connect(str(warehouse))
    con.execute(
        "insert into schema_version values ($v, 'from the future', timestamp '2030-01-01 00:00:00')",
        {"v": NEXT},
    )
    con.close()
    with pytest.raises(WarehouseError) as err:
        connect(warehouse)
    message = str(err.value)
    assert str(warehouse) in message
    assert f"schema version {NEXT}, newer than this wastewatch ({SCHEMA_VERSION})" in message
    # the refused file is not held open by this process, and nothing in it changed
    ro = duckdb.connect(str(warehouse), read_only=True)
    try:
        assert [v for v, _ in _versions(ro)] == [SCHEMA_VERSION, NEXT]
        assert _ledger(ro) == [("/landing/a.csv", 42, "loaded")]
    finally:
        ro.close()


def test_a_foreign_duckdb_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "theirs.duckdb"
    con = duckdb.connect(str(path))
    con.execute("create table invoices as select 7 as id, 'keep me' as note")
    con.close()
    with pytest.raises(WarehouseError) as err:
        connect(path)
    assert str(path) in str(err.value) and "no wastewatch schema_version" in str(err.value)
    ro = duckdb.connect(str(path), read_only=True)  # would fail if connect() had kept the file open
    try:
        assert _tables(ro) == {"invoices"}
        assert ro.execute("select * from invoices").fetchall() == [(7, "keep me")]
    finally:
        ro.close()


def test_an_empty_duckdb_file_becomes_a_warehouse(tmp_path: Path) -> None:
    path = tmp_path / "empty.duckdb"
    duckdb.connect(str(path)).close()
    con = connect(path)
    try:
        assert current_version(con) == SCHEMA_VERSION and set(RAW_TABLES) <= _tables(con)
    finally:
        con.close()


# --- comments (COMMENT ON from the notes in sql/raw/) ------------------------------------------------


def _comments(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str | None], str | None]:
    """(table, None) -> the table's comment, (table, column) -> the column's, for every landed table."""
    out: dict[tuple[str, str | None], str | None] = {
        (r[0], None): r[1]
        for r in con.execute(
            "select table_name, comment from duckdb_tables() where list_contains($t, table_name) "
            "union all select view_name, comment from duckdb_views() where list_contains($t, view_name)",
            {"t": list(RAW_TABLES)},
        ).fetchall()
    }
    for table, column, comment in con.execute(
        "select table_name, column_name, comment from duckdb_columns() where list_contains($t, table_name)",
        {"t": list(RAW_TABLES)},
    ).fetchall():
        out[(table, column)] = comment
    return out


def test_a_new_warehouse_keeps_the_ddl_notes_as_duckdb_comments(tmp_path: Path) -> None:
    con = connect(tmp_path / "wastewatch.duckdb")
    try:
        commented, total = con.execute(
            "select count(*) filter (where comment is not null), count(*) from duckdb_columns() "
            "where table_name = 'billing_line_items'"
        ).fetchall()[0]
        assert total >= 70 and commented >= 0.9 * total, (commented, total)
        notes = dict(
            con.execute(
                "select column_name, comment from duckdb_columns() where table_name = 'billing_line_items'"
            ).fetchall()
        )
        assert notes["effective_cost"].startswith("amortised, after all discounts and prepaid commitments")
        assert notes["x_billing_period"] == "YYYY-MM of billing_period_start (partition key)"
        view = con.execute("select comment from duckdb_views() where view_name = 'billing_line_items'")
        assert view.fetchall()[0][0].startswith("Grain: one row per source line item. Every billing source's")
        # the view's column notes come from billing_columns' DDL (`columns_from:`), the stored table's from its own
        assert notes == {
            c: n
            for c, n in con.execute(
                "select column_name, comment from duckdb_columns() where table_name = 'billing_columns'"
            ).fetchall()
        }
        # a note continued on the next line (its `--` lined up under the first) is one comment
        state = con.execute(
            "select comment from duckdb_columns() where table_name = 'jobs' and column_name = 'state'"
        ).fetchall()[0][0]
        assert state.startswith("normalised: COMPLETED") and state.endswith("BOOT_FAIL, DEADLINE")
        # every landed table says what one row is
        assert all(c and c.startswith("Grain: ") for (_, col), c in _comments(con).items() if col is None)
        # reopening has nothing left to write
        assert apply_comments(con, {t: raw_notes(t) for t in RAW_TABLES}) == 0
    finally:
        con.close()


def test_comments_are_restored_on_reopening_and_kept_by_the_published_copy(config: Config) -> None:
    con = connect(config.warehouse_path)
    wanted = _comments(con)
    # an older wastewatch wrote other notes (or none), and no digest of today's: the next writable connection
    # puts them right
    con.execute("update connect_digest set digest = 'an older wastewatch'")
    con.execute("comment on table billing_line_items is null")
    con.execute("comment on column billing_line_items.billed_cost is 'stale'")
    con.execute("comment on column jobs.\"user\" is 'not in the DDL'")
    con.close()
    con = connect(config.warehouse_path)
    assert _comments(con) == wanted
    con.close()
    ro = connect(publish(config), read_only=True)
    try:
        assert _comments(ro) == wanted
    finally:
        ro.close()


def test_notes_come_from_header_lines_and_ddl_line_ends() -> None:
    notes = parse_notes(
        "-- grain: one row per thing\n"
        "-- depends_on: a, b\n"
        "-- What it is,\n"
        "-- in two lines.\n"
        "-- size: bytes, of the\n"
        "-- whole thing\n"
        "create table if not exists things (\n"
        "    id varchar not null,     -- sha1(it)\n"
        "    state varchar,           -- one of A, B,\n"
        "                             -- C\n"
        "    plain integer,\n"
        "    -- a section comment, not a note\n"
        "    later varchar            -- it's quoted\n"
        ");\n"
    )
    assert notes.meta == {"grain": "one row per thing", "depends_on": "a, b"}
    assert notes.table_comment == "Grain: one row per thing. What it is, in two lines."
    assert notes.columns == {
        "size": "bytes, of the whole thing",
        "id": "sha1(it)",
        "state": "one of A, B, C",
        "later": "it's quoted",
    }
    # a query's `--` comments inside its body are not column notes
    assert parse_notes("-- grain: g\nselect 1 as a, -- not a note\n2 as b\n").columns == {}


# --- publishing --------------------------------------------------------------------------------------

# beside the twin: the private copy it is a hard link of (a small warehouse's copy keeps no record of what it
# holds: it is copied whole at every publish, tests/warehouse/test_publish_by_change.py)
PRIVATE = ["wastewatch.published.duckdb.a"]


def _counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return {t: con.execute(f"select count(*) from {t}").fetchall()[0][0] for t in RAW_TABLES}


def test_publish_writes_a_complete_read_only_twin_atomically(
    project: Path, config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    copy_into(FOCUS_SAMPLE, project / "landing" / "billing")
    assert [o.status for o in ingest(con, config).outcomes] == ["loaded"]
    live_counts = _counts(con)
    live_billed = con.execute("select sum(billed_cost) from billing_line_items").fetchall()[0][0]
    assert live_counts["billing_line_items"] == 1000
    con.close()  # publish() needs the writer closed

    published = publish(config)
    assert (
        published == config.published_path == config.warehouse_path.with_name("wastewatch.published.duckdb")
    )
    # no temporary copy is left behind, only the warehouse and its twin
    assert sorted(p.name for p in published.parent.iterdir()) == [
        "wastewatch.duckdb",
        "wastewatch.published.duckdb", *PRIVATE,
    ]  # fmt: skip
    # readable by whoever may read the warehouse (not the 0600 of a temp file)
    assert stat.S_IMODE(published.stat().st_mode) == stat.S_IMODE(config.warehouse_path.stat().st_mode)

    ro = connect(published, read_only=True)
    try:
        assert _counts(ro) == live_counts
        assert ro.execute("select sum(billed_cost) from billing_line_items").fetchall()[0][0] == live_billed
        with pytest.raises(duckdb.Error, match="read-only"):
            ro.execute("delete from billing_lines")
    finally:
        ro.close()


def test_publishing_again_replaces_the_twin_by_rename(config: Config, con: duckdb.DuckDBPyConnection) -> None:
    _add_ledger_row(con, "/landing/one.csv")
    con.close()
    first = publish(config)
    inode = first.stat().st_ino

    con2 = connect(config.warehouse_path)
    _add_ledger_row(con2, "/landing/two.csv")
    con2.close()
    second = publish(config)

    assert second == first
    assert second.stat().st_ino != inode  # a new file renamed over the old one, not rewritten in place
    ro = duckdb.connect(str(second), read_only=True)
    try:
        assert [r[0] for r in _ledger(ro)] == ["/landing/one.csv", "/landing/two.csv"]
    finally:
        ro.close()
    # the copies used in turn: the twin is now the second (b), the first (a) is what the next updates
    assert sorted(p.name for p in second.parent.iterdir()) == [
        "wastewatch.duckdb",
        "wastewatch.published.duckdb", *PRIVATE,
        "wastewatch.published.duckdb.b",
    ]  # fmt: skip
    assert second.stat().st_ino == (second.parent / "wastewatch.published.duckdb.b").stat().st_ino


def test_publish_without_a_warehouse_is_refused(config: Config) -> None:
    with pytest.raises(WarehouseError) as err:
        publish(config)
    assert str(config.warehouse_path) in str(err.value) and "nothing to publish" in str(err.value)
    assert not config.published_path.exists()


def test_schema_reference_is_generated_from_the_sql() -> None:
    """docs/schema.md must equal the generator's output (run `make docs` after changing sql/)."""
    from pipelines.cli.schema_docs import render

    docs = REPO / "docs" / "schema.md"
    assert docs.read_text(encoding="utf-8") == render()


SNAPSHOTS = FIXTURES / "schema"


def _schema(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Each landed base table's columns (views, such as billing_line_items, are rebuilt on connect)."""
    views = {r[0] for r in con.execute("select view_name from duckdb_views()").fetchall()}
    return {
        t: [
            f"{c} {ty}"
            for c, ty in con.execute(
                "select column_name, data_type from information_schema.columns where table_name = $t "
                "order by ordinal_position",
                {"t": t},
            ).fetchall()
        ]
        for t in RAW_TABLES
        if t not in views
    }


def test_existing_tables_change_only_with_a_migration(tmp_path: Path) -> None:
    """Each schema version's landed tables are snapshotted in tests/fixtures/schema/v<N>.json.

    A landed table's columns may change only together with SCHEMA_VERSION + a migration; new tables need
    none (they are created on connect). After a deliberate change, write the new version's snapshot:
    WASTEWATCH_UPDATE_SNAPSHOT=1 pytest tests/warehouse/test_warehouse.py -k migration
    """
    import json
    import os

    con = connect(tmp_path / "fresh.duckdb")
    fresh = _schema(con)
    con.close()
    path = SNAPSHOTS / f"v{SCHEMA_VERSION}.json"
    if os.environ.get("WASTEWATCH_UPDATE_SNAPSHOT") == "1":
        path.write_text(json.dumps({"schema_version": SCHEMA_VERSION, "tables": fresh}, indent=1) + "\n")
    assert path.exists(), (
        f"no snapshot for schema version {SCHEMA_VERSION}: write it (see this test's docstring)"
    )
    snap = json.loads(path.read_text())["tables"]
    changed = [t for t, cols in snap.items() if t in fresh and fresh[t] != cols]
    assert not changed, (
        f"tables {changed} changed without a migration: bump SCHEMA_VERSION, add sql/raw/migrations/"
        f"{SCHEMA_VERSION + 1:04d}_<what>.sql, then write the new version's snapshot (see this test's docstring)"
    )
    dropped = [t for t in snap if t not in fresh]
    assert not dropped, f"tables {dropped} disappeared from sql/raw/: a warehouse never loses a table's data"
    added = [t for t in fresh if t not in snap]
    assert not added, f"new tables {added}: write the snapshot again (see this test's docstring)"


@pytest.fixture(scope="module")
def fresh_layout(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, list[str]], dict[tuple[str, str | None], str | None]]:
    """The landed tables' columns and their comments in a new warehouse `connect` made: what every upgrade
    must reach, read once for the module's upgrade tests."""
    con = connect(tmp_path_factory.mktemp("fresh") / "fresh.duckdb")
    try:
        return _schema(con), _comments(con)
    finally:
        con.close()


@pytest.mark.parametrize("snapshot", sorted(SNAPSHOTS.glob("v*.json")), ids=lambda p: p.stem)
def test_every_older_schema_upgrades_to_the_current_one_keeping_its_rows(
    snapshot: Path,
    tmp_path: Path,
    fresh_layout: tuple[dict[str, list[str]], dict[tuple[str, str | None], str | None]],
) -> None:
    """A warehouse laid out as version N (from its snapshot) upgrades to exactly a fresh warehouse's schema."""
    import json

    snap = json.loads(snapshot.read_text())
    path = tmp_path / "old.duckdb"
    old = duckdb.connect(str(path))
    for table, cols in snap["tables"].items():
        old.execute(f"create table {table} ({', '.join(cols)})")
    old.execute(
        "insert into schema_version values ($v, 'snapshot', now()::timestamp)", {"v": snap["schema_version"]}
    )
    old.execute(
        "insert into ingest_files (file_id, source, kind, uri, status, first_seen_at, checked_at) "
        "values ('f1', 's', 'focus', '/x.csv', 'loaded', now()::timestamp, now()::timestamp)"
    )
    # three lines: one untagged, one with the tags a line carried itself before version 6, one written by
    # hand with a team alone
    tagged = "(1, map {'team': 'nlp'}, '{\"user:Team\": \"nlp\"}', 'nlp'), (2, null, null, 'cv')"
    if "billing_lines" in snap["tables"]:  # version 4 on: lines stored without lineage
        for c in ("tags map(varchar, varchar)", "x_tags_raw json", "team varchar"):  # as a load stored them
            old.execute(f"alter table billing_lines add column if not exists {c}")
        old.execute(
            "insert into billing_lines (billed_cost, effective_cost, billing_currency, charge_period_start, "
            "charge_period_end, x_file_id, tags, x_tags_raw, team) "
            f"select 12.5, 10, 'USD', '2026-11-01', '2026-11-01 01:00', 'f1', null, null, null "
            f"union all select c, c, 'USD', '2026-11-01', '2026-11-01 01:00', 'f1', t, r, m "
            f"from (values {tagged}) as v(c, t, r, m)"
        )
    else:
        old.execute(
            "insert into billing_line_items (billed_cost, effective_cost, billing_currency, charge_period_start, "
            "charge_period_end, x_file_id, x_source_name, x_source_format, x_source_file, x_loaded_at, tags, "
            "x_tags_raw, team) "
            "select 12.5, 10, 'USD', '2026-11-01', '2026-11-01 01:00', 'f1', 's', 'focus', '/old-x.csv', now(), "
            "null, null, null union all select c, c, 'USD', '2026-11-01', '2026-11-01 01:00', 'f1', 's', "
            f"'focus', '/old-x.csv', now(), t, r, m from (values {tagged}) as v(c, t, r, m)"
        )
    old.close()
    con = connect(path)
    upgraded = _schema(con)
    upgraded_comments = _comments(con)
    assert con.execute("select max(version) from schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert con.execute("select file_id from ingest_files").fetchall() == [("f1",)]
    # the billing lines survive, their lineage now read from the ledger and the tagged one's tags from its
    # set, which the next ingest's `tags:` re-resolution reaches like any other
    assert con.execute(
        "select billed_cost, effective_cost, x_source_name, x_source_format, x_source_file, tags, team, "
        "x_tags_raw::varchar from billing_line_items order by billed_cost"
    ).fetchall() == [
        (Decimal(1), Decimal(1), "s", "focus", "/x.csv", {"team": "nlp"}, "nlp", '{"user:Team": "nlp"}'),
        (Decimal(2), Decimal(2), "s", "focus", "/x.csv", None, "cv", None),
        (Decimal("12.5"), Decimal(10), "s", "focus", "/x.csv", None, None, None),
    ]
    if snap["schema_version"] < 6:  # converted into a set; at 6 on, lines written by hand keep their own
        assert con.execute("select team, tags from billing_tag_sets order by team").fetchall() == [
            ("cv", None),
            ("nlp", {"team": "nlp"}),
        ]
        assert not {"tags", "team", "x_tags_raw"} & {
            r[0] for r in con.execute("describe billing_lines").fetchall()
        }
    con.close()
    fresh, fresh_comments = dict(fresh_layout[0]), fresh_layout[1]
    # billing_lines stores the columns its sources filled: an upgraded warehouse keeps every column it had
    # but the lineage (now the ledger's), a new one starts with the columns every line has
    upgraded_lines, fresh_lines = upgraded.pop("billing_lines"), fresh.pop("billing_lines")
    assert set(fresh_lines) <= set(upgraded_lines) <= set(fresh["billing_columns"])
    assert not [c for c in upgraded_lines if c.split()[0] in DERIVED]
    assert upgraded == fresh
    extra = {c.split()[0] for c in upgraded_lines} - {c.split()[0] for c in fresh_lines}
    upgraded_comments = {
        k: v for k, v in upgraded_comments.items() if not (k[0] == "billing_lines" and k[1] in extra)
    }
    # the DuckDB comments are not part of the snapshot (a note can change without a migration), and the
    # upgrade writes them like a new file's
    assert upgraded_comments == fresh_comments


def test_a_publish_killed_mid_copy_leaves_nothing_after_the_next_publish(
    config: Config, con: duckdb.DuckDBPyConnection
) -> None:
    _add_ledger_row(con, "/landing/one.csv")
    con.close()
    folder = config.published_path.parent
    name = config.published_path.name
    # what a publish killed with SIGKILL in the middle of its copy leaves: a partial temp copy named
    # with its pid (a process that has exited), and one of an earlier version's `.tmp` copies
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    killed = folder / f"{name}.{int(dead.stdout)}.k1ll3d{PUBLISH_SUFFIX}"
    killed.write_bytes(config.warehouse_path.read_bytes()[:4096])
    legacy = folder / f"{name}.a1b2c3d4.tmp"
    legacy.write_bytes(b"\0" * 4096)
    # a copy another live process is writing right now is left alone
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as live:
        busy = folder / f"{name}.{live.pid}.busy{PUBLISH_SUFFIX}"
        busy.write_bytes(b"\0")
        try:
            publish(config)
            assert sorted(p.name for p in folder.iterdir()) == sorted(
                ["wastewatch.duckdb", "wastewatch.published.duckdb", *PRIVATE, busy.name]
            )
        finally:
            live.kill()
    publish(config)  # its writer is gone now
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [
            "wastewatch.duckdb",
            "wastewatch.published.duckdb",
            *PRIVATE,
            *(n.replace(".a", ".b") for n in PRIVATE),
        ]
    )
    ro = duckdb.connect(str(config.published_path), read_only=True)
    try:
        assert [r[0] for r in _ledger(ro)] == ["/landing/one.csv"]
    finally:
        ro.close()


def test_a_version_7_warehouse_upgrades_to_exact_money_and_content_identity_keeping_its_values(
    tmp_path: Path,
) -> None:
    """A warehouse as today's main writes it (schema 7: money DECIMAL(18, 6), an optional list_cost a
    source filled) upgrades to 8: every money column is DECIMAL(38, 12) with its values, the ledger gains
    duplicate_of, and the next load stores 12 decimals."""
    import json

    snap = json.loads((SNAPSHOTS / "v7.json").read_text())
    path = tmp_path / "v7.duckdb"
    old = duckdb.connect(str(path))
    for table, cols in snap["tables"].items():
        old.execute(f"create table {table} ({', '.join(cols)})")
    old.execute("insert into schema_version values (7, 'initial schema', now()::timestamp)")
    old.execute("alter table billing_lines add column list_cost decimal(18, 6)")
    old.execute(
        "insert into ingest_files (file_id, source, kind, uri, status, first_seen_at, checked_at, rows, "
        "billed_cost_sum, effective_cost_sum, file_rows, file_billed_cost_sum, file_effective_cost_sum) "
        "values ('f1', 's', 'focus', '/x.csv', 'loaded', now()::timestamp, now()::timestamp, 2, 3.123457, "
        "2.5, 2, 3.123457, 2.5)"
    )
    old.execute(
        "insert into billing_lines (billed_cost, effective_cost, list_cost, billing_currency, "
        "charge_period_start, charge_period_end, x_file_id) values "
        "(1.123457, 1, 1.5, 'USD', '2026-11-01', '2026-11-01 01:00', 'f1'), "
        "(2, 1.5, null, 'USD', '2026-11-01', '2026-11-01 01:00', 'f1')"
    )
    old.close()
    con = connect(path)
    try:
        assert current_version(con) == SCHEMA_VERSION >= 8
        types = dict(
            con.execute(
                "select table_name || '.' || column_name, data_type from duckdb_columns() "
                "where column_name in ('billed_cost', 'effective_cost', 'list_cost', 'billed_cost_sum', "
                "'file_effective_cost_sum', 'duplicate_of')"
            ).fetchall()
        )
        for column in (
            "billing_lines.billed_cost",
            "billing_lines.list_cost",
            "billing_columns.effective_cost",
        ):
            assert types[column] == "DECIMAL(38,12)", column
        assert types["ingest_files.billed_cost_sum"] == types["ingest_files.file_effective_cost_sum"]
        assert types["ingest_files.billed_cost_sum"] == "DECIMAL(38,12)"
        assert types["ingest_files.duplicate_of"] == "VARCHAR"
        assert con.execute(
            "select billed_cost, effective_cost, list_cost, x_source_file from billing_line_items order by 1"
        ).fetchall() == [
            (Decimal("1.123457"), Decimal(1), Decimal("1.5"), "/x.csv"),
            (Decimal(2), Decimal("1.5"), None, "/x.csv"),
        ]
        assert con.execute(
            "select rows, billed_cost_sum, file_effective_cost_sum, duplicate_of from ingest_files"
        ).fetchall() == [(2, Decimal("3.123457"), Decimal("2.5"), None)]
        # a value with 12 decimals now keeps them
        con.execute(
            "insert into billing_lines (billed_cost, effective_cost, list_cost, billing_currency, "
            "charge_period_start, charge_period_end, x_file_id) values (0.000000000123, 0.000000000123, "
            "0.000000000123, 'USD', '2026-11-01', '2026-11-01 01:00', 'f1')"
        )
        assert con.execute("select min(list_cost) from billing_lines").fetchall() == [(Decimal("1.23E-10"),)]
    finally:
        con.close()
    schemas = []
    for p in (path, tmp_path / "fresh.duckdb"):
        c = connect(p)
        schemas.append(_schema(c))
        c.close()
    upgraded, fresh = schemas
    assert upgraded.pop("billing_lines") == [*fresh.pop("billing_lines"), "list_cost DECIMAL(38,12)"]
    assert upgraded == fresh


def test_a_version_8_warehouse_upgrades_to_training_logs_keeping_its_rows(tmp_path: Path) -> None:
    """Migration 0009 adds train_steps and the peak FLOP/s catalogue; an existing warehouse keeps its data."""
    import json

    snap = json.loads((SNAPSHOTS / "v8.json").read_text())
    path = tmp_path / "v8.duckdb"
    old = duckdb.connect(str(path))
    for table, cols in snap["tables"].items():
        old.execute(f"create table {table} ({', '.join(cols)})")
    old.execute("insert into schema_version values (8, 'snapshot', now()::timestamp)")
    old.execute(
        "insert into jobs (job_id, scheduler, state, source, x_source_file, x_file_id) "
        "values ('41907', 'slurm', 'COMPLETED', 's', '/sacct.txt', 'f1')"
    )
    old.close()
    con = connect(path)
    try:
        assert [v for v, _ in _versions(con)] == list(range(8, SCHEMA_VERSION + 1))
        assert con.execute("select job_id, state from jobs").fetchall() == [("41907", "COMPLETED")]
        assert con.execute("select count(*) from train_steps").fetchall() == [(0,)]
        assert con.execute(
            "select peak_dense_tflops, aliases from gpu_peak_flops where gpu_model = 'H200'"
        ).fetchall() == [(989.4, ["h200", "h200-sxm"])]
    finally:
        con.close()


def test_a_version_9_warehouse_upgrades_keeping_its_findings_and_marks_which_are_counted(
    tmp_path: Path,
) -> None:
    """Migration 0010 gives findings `counted`, `attention` and the ack in force, filled in from the rows
    and acks already there with the report's logic; no finding is lost or changed otherwise."""
    import json

    snap = json.loads((SNAPSHOTS / "v9.json").read_text())
    path = tmp_path / "v9.duckdb"
    old = duckdb.connect(str(path))
    for table, cols in snap["tables"].items():
        old.execute(f"create table {table} ({', '.join(cols)})")
    old.execute("insert into schema_version values (9, 'snapshot', now()::timestamp)")
    old.execute(
        "insert into findings (finding_id, rule_id, rule_name, category, severity, week_start, week_end, "
        "resource_id, status, reason, estimated_waste, currency, detected_at) values "
        "('f-idle', 'GPU001', 'idle', 'idle', 'high', '2026-11-23', '2026-11-29', 'i-1', 'waste', 'r', 10.5, "
        "'USD', now()), "
        "('f-untagged', 'COST001', 'untagged', 'unattributed', 'low', '2026-11-23', '2026-11-29', 'i-2', "
        "'waste', 'r', 5, 'USD', now()), "
        "('f-acked', 'GPU001', 'idle', 'idle', 'high', '2026-11-23', '2026-11-29', 'i-3', 'waste', 'r', 7, "
        "'USD', now()), "
        "('f-lapsed', 'GPU001', 'idle', 'idle', 'high', '2026-11-30', '2026-12-06', 'i-3', 'waste', 'r', 7, "
        "'USD', now()), "
        "('f-suspect', 'GPU002', 'small', 'overprovisioned', 'medium', '2026-11-23', '2026-11-29', 'i-4', "
        "'suspect', 'r', 3, 'USD', now())"
    )
    # i-3's ack covers the week of 2026-11-23 only; an earlier ack of the same key is superseded
    old.execute(
        "insert into finding_acks values "
        "(substr(sha1('GPU001|i-3'), 1, 16), 'GPU001', 'i-3', null, '2027-01-01', 'old', 'a', '2026-11-01'), "
        "(substr(sha1('GPU001|i-3'), 1, 16), 'GPU001', 'i-3', null, '2026-11-23', 'known', 'ops', '2026-11-02')"
    )
    old.close()
    con = connect(path)
    try:
        assert [v for v, _ in _versions(con)] == list(range(9, SCHEMA_VERSION + 1))
        got = con.execute(
            "select finding_id, estimated_waste, finding_key, attention, counted, acknowledged, acked_until, "
            "ack_reason, acked_by from findings order by finding_id"
        ).fetchall()
    finally:
        con.close()
    from datetime import date

    from rules._contract import finding_key

    assert got == [
        (
            "f-acked",
            Decimal(7),
            finding_key("GPU001", "i-3"),
            False,
            False,
            True,
            date(2026, 11, 23),
            "known",
            "ops",
        ),
        ("f-idle", Decimal("10.5"), finding_key("GPU001", "i-1"), False, True, False, None, None, None),
        ("f-lapsed", Decimal(7), finding_key("GPU001", "i-3"), False, True, False, None, None, None),
        ("f-suspect", Decimal(3), finding_key("GPU002", "i-4"), False, False, False, None, None, None),
        ("f-untagged", Decimal(5), finding_key("COST001", "i-2"), True, False, False, None, None, None),
    ]


def test_an_ack_and_its_revocation_update_the_stored_counted_flag(tmp_path: Path) -> None:
    """`counted` in the warehouse follows `wastewatch ack` for every week the ack covers, and only those."""
    from datetime import date

    import polars as pl

    from pipelines.evaluate import write_findings
    from pipelines.report.acks import record, resolve
    from rules import FINDING_COLUMNS, Window

    con = connect(tmp_path / "w.duckdb")
    try:
        for week in ("2026-W47", "2026-W48"):
            window = Window.iso_week(week)
            row = {c: None for c in FINDING_COLUMNS} | {
                "finding_id": f"id-{week}",
                "rule_id": "GPU001",
                "rule_name": "idle-gpu-instance",
                "category": "idle",
                "severity": "high",
                "week_start": window.start.date(),
                "week_end": window.end.date(),
                "resource_id": "i-1",
                "status": "waste",
                "reason": "idle",
                "estimated_waste": Decimal("12.5"),
                "currency": "USD",
                "detected_at": window.end,
            }
            write_findings(con, "GPU001", window, pl.DataFrame([row]))

        def flags() -> list[tuple[object, ...]]:
            return con.execute(
                "select week_start, counted, acknowledged, acked_until, ack_reason from findings order by 1"
            ).fetchall()

        w47, w48 = date(2026, 11, 16), date(2026, 11, 23)
        assert flags() == [(w47, True, False, None, None), (w48, True, False, None, None)]
        target = resolve(con, "GPU001:i-1")
        record(con, target, date(2026, 11, 20), "warm pool", "ops")  # covers W47 only
        assert flags() == [
            (w47, False, True, date(2026, 11, 20), "warm pool"),
            (w48, True, False, None, None),
        ]
        record(con, target, None, "pool gone", "ops")  # revoked
        assert flags() == [(w47, True, False, None, None), (w48, True, False, None, None)]
    finally:
        con.close()


def _older_warehouse(tmp_path: Path, version: int, *inserts: str) -> Path:
    """A warehouse laid out as schema `version` from its snapshot, stamped with it, holding `inserts`' rows."""
    import json

    snap = json.loads((SNAPSHOTS / f"v{version}.json").read_text())
    path = tmp_path / f"v{version}.duckdb"
    old = duckdb.connect(str(path))
    for table, cols in snap["tables"].items():
        old.execute(f"create table {table} ({', '.join(cols)})")
    old.execute("insert into schema_version values ($v, 'snapshot', now()::timestamp)", {"v": version})
    for sql in inserts:
        old.execute(sql)
    old.close()
    return path


def test_a_version_10_warehouse_upgrades_to_hourly_stats_keeping_its_samples(tmp_path: Path) -> None:
    """Migration 0011 adds gpu_hourly_stats (the `prometheus` source's hours); the samples already landed stay
    and the new table takes rows at once."""
    path = _older_warehouse(
        tmp_path,
        10,
        (
            "insert into gpu_samples (ts, host, gpu_uuid, util_pct, source, x_source_file, x_file_id, x_sample_date) "
            "values ('2026-11-30 00:00:01', 'gpu-node-a', 'GPU-a', 97, 'scrapes', '/a.prom', 'f1', '2026-11-30')"
        ),
    )
    con = connect(path)
    try:
        assert [v for v, _ in _versions(con)][0] == 10 and current_version(con) == SCHEMA_VERSION >= 11
        assert "0011_gpu_hourly_stats" in [d for _, d in _versions(con)]
        assert con.execute("select host, util_pct from gpu_samples").fetchall() == [("gpu-node-a", 97.0)]
        con.execute(
            "insert into gpu_hourly_stats (hour, host, samples, observed_s, source, x_source_file, x_file_id, "
            "x_hour_date) values ('2026-11-30', 'gpu-node-a', 60, 3600, 'prom', 'http://p:9090', 'f2', '2026-11-30')"
        )
        assert con.execute("select samples, observed_s from gpu_hourly_stats").fetchall() == [(60, 3600.0)]
    finally:
        con.close()


def test_a_version_11_warehouse_upgrades_to_log_groups_keeping_its_data(tmp_path: Path) -> None:
    """Migration 0012 adds log_groups (the `cloudwatch_logs` source's listings); what version 11 landed stays
    and the new table takes rows at once."""
    path = _older_warehouse(
        tmp_path,
        11,
        (
            "insert into gpu_hourly_stats (hour, host, samples, observed_s, source, x_source_file, x_file_id, "
            "x_hour_date) values ('2026-11-30', 'gpu-node-a', 60, 3600, 'prom', 'http://p:9090', 'f2', '2026-11-30')"
        ),
    )
    con = connect(path)
    try:
        assert [v for v, _ in _versions(con)][0] == 11 and current_version(con) == SCHEMA_VERSION >= 12
        assert "0012_log_groups" in [d for _, d in _versions(con)]
        assert con.execute("select host, samples from gpu_hourly_stats").fetchall() == [("gpu-node-a", 60)]
        con.execute(
            "insert into log_groups (provider, log_group, retention_in_days, stored_bytes, listed_at, source, "
            "x_source_file, x_file_id) values ('AWS', '/aws/batch/job', null, 1024, '2026-11-29', 'cw', "
            "'logs://us-east-1', 'f3')"
        )
        assert con.execute(
            "select log_group, retention_in_days, stored_bytes from log_groups"
        ).fetchall() == [("/aws/batch/job", None, 1024)]
    finally:
        con.close()


def test_a_version_11_warehouse_upgrades_to_the_advice_table_keeping_its_findings(tmp_path: Path) -> None:
    """Migration 0013 adds `advice` (commitment and spot advice, never waste); the findings already stored
    stay and the new table takes rows at once."""
    path = _older_warehouse(
        tmp_path,
        11,
        (
            "insert into findings (finding_id, rule_id, rule_name, category, severity, week_start, week_end, status, "
            "reason, estimated_waste, detected_at) values ('f1', 'GPU001', 'idle-gpu-instance', 'idle', 'high', "
            "'2026-11-23', '2026-11-30', 'waste', 'idle', 12.5, now()::timestamp)"
        ),
    )
    con = connect(path)
    try:
        assert [v for v, _ in _versions(con)][0] == 11 and current_version(con) == SCHEMA_VERSION >= 13
        assert "0013_advice" in [d for _, d in _versions(con)]
        assert con.execute("select finding_id, estimated_waste from findings").fetchall() == [
            ("f1", Decimal("12.5"))
        ]
        con.execute(
            "insert into advice (advice_id, advisor_id, advisor_name, kind, week_start, week_end, status, reason, "
            "estimated_saving, detected_at) values ('a1', 'ADV001', 'commitment-advice', 'commitment', "
            "'2026-11-23', '2026-11-30', 'recommended', 'floor', 100, now()::timestamp)"
        )
        assert con.execute("select advice_id, estimated_saving from advice").fetchall() == [
            ("a1", Decimal(100))
        ]
    finally:
        con.close()


def test_a_version_11_warehouse_upgrades_to_remediation_keeping_its_findings_and_acks(tmp_path: Path) -> None:
    """Migration 0014 adds remediation_actions and remediation_log (`wastewatch remediate`); the findings and
    acks already there stay as they were, and the new tables take rows at once."""
    path = _older_warehouse(
        tmp_path,
        11,
        (
            "insert into findings (finding_id, rule_id, rule_name, category, severity, week_start, week_end, "
            "resource_id, status, reason, estimated_waste, currency, detected_at, finding_key, counted) values "
            "('f-idle', 'GPU001', 'idle', 'idle', 'high', '2026-11-23', '2026-11-29', 'i-1', 'waste', 'r', 10.5, "
            "'USD', now(), 'k1', true)"
        ),
        "insert into finding_acks values ('k1', 'GPU001', 'i-1', null, '2027-01-01', 'pool', 'ops', now())",
    )
    con = connect(path)
    try:
        assert [v for v, _ in _versions(con)][0] == 11 and current_version(con) == SCHEMA_VERSION >= 14
        assert "0014_remediation" in [d for _, d in _versions(con)]
        assert con.execute("select finding_id, estimated_waste, counted from findings").fetchall() == [
            ("f-idle", Decimal("10.5"), True)
        ]
        assert con.execute("select reason from finding_acks").fetchall() == [("pool",)]
        con.execute(
            "insert into remediation_log (run_id, action_id, event, actor, logged_at, dry_run, result) "
            "values ('r1', 'a1', 'approve', 'ops', now()::timestamp, false, 'approved')"
        )
        assert con.execute("select event, result from remediation_log").fetchall() == [
            ("approve", "approved")
        ]
        assert con.execute("select count(*) from remediation_actions").fetchall() == [(0,)]
    finally:
        con.close()


def test_a_version_11_warehouse_upgrades_to_the_samples_retention_keeping_its_samples(tmp_path: Path) -> None:
    """Migration 0015 adds gpu_samples_pruned (the days `retention:` dropped); the samples already landed
    stay, and the new table takes rows at once."""
    path = _older_warehouse(
        tmp_path,
        11,
        (
            "insert into gpu_samples (ts, host, util_pct, source, x_source_file, x_file_id, x_sample_date) "
            "values ('2026-11-30 01:00', 'gpu-node-a', 42.5, 'smi', '/a.csv', 'f1', '2026-11-30')"
        ),
    )
    con = connect(path)
    try:
        assert [v for v, _ in _versions(con)][0] == 11 and current_version(con) == SCHEMA_VERSION >= 15
        assert "0015_gpu_samples_pruned" in [d for _, d in _versions(con)]
        assert con.execute("select host, util_pct from gpu_samples").fetchall() == [("gpu-node-a", 42.5)]
        con.execute(
            "insert into gpu_samples_pruned values ('2026-10-01', 10, '2026-10-01', '2026-10-01 01:00', now())"
        )
        assert con.execute("select day, samples from gpu_samples_pruned").fetchall() == [
            (date(2026, 10, 1), 10)
        ]
    finally:
        con.close()


def test_a_version_15_warehouse_upgrades_to_the_daily_alert_keeping_its_findings_and_acks(
    tmp_path: Path,
) -> None:
    """Migration 0016 adds alerts_sent (what `wastewatch alert` posted, per finding); a warehouse built by the
    schema before it keeps its findings, acks and remediation plan, and the new table takes a sent alert
    at once, one row per finding (a second send of the same finding replaces it and counts it)."""
    path = _older_warehouse(
        tmp_path,
        15,
        (
            "insert into findings (finding_id, rule_id, rule_name, category, severity, week_start, week_end, "
            "resource_id, status, reason, estimated_waste, currency, detected_at, finding_key, counted) values "
            "('f-idle', 'GPU001', 'idle', 'idle', 'high', '2026-11-23', '2026-11-29', 'i-1', 'waste', 'r', 10.5, "
            "'USD', now(), 'k1', true)"
        ),
        "insert into finding_acks values ('k1', 'GPU001', 'i-1', null, '2027-01-01', 'pool', 'ops', now())",
        (
            "insert into remediation_log (run_id, action_id, event, actor, logged_at, dry_run, result) "
            "values ('r1', 'a1', 'approve', 'ops', now()::timestamp, false, 'approved')"
        ),
    )
    con = connect(path)
    try:
        assert [v for v, _ in _versions(con)][0] == 15 and current_version(con) == SCHEMA_VERSION >= 16
        assert "0016_alerts_sent" in [d for _, d in _versions(con)]
        assert con.execute("select finding_id, estimated_waste, counted from findings").fetchall() == [
            ("f-idle", Decimal("10.5"), True)
        ]
        assert con.execute("select reason from finding_acks").fetchall() == [("pool",)]
        assert con.execute("select result from remediation_log").fetchall() == [("approved",)]
        sent = {
            "finding_key": "k1", "rule_id": "GPU001", "resource_id": "i-1", "status": "waste",
            "daily_waste": Decimal("2359.68"), "currency": "USD", "as_of": datetime(2026, 11, 24),
            "action_id": "a1", "action_kind": "stop_instance", "reason": "idle", "sent_at": datetime(2026, 11, 24, 5),
        }  # fmt: skip
        con.execute(sql_text("alerts", "save_sent"), sent)
        con.execute(sql_text("alerts", "save_sent"), {**sent, "daily_waste": Decimal("3600")})
        assert con.execute(
            "select finding_key, daily_waste, sends, stopped_since_sent from alerts_sent"
        ).fetchall() == [("k1", Decimal("3600.000000"), 2, False)]
    finally:
        con.close()


def test_a_version_16_warehouse_upgrades_to_the_nightly_state_keeping_its_ledger(tmp_path: Path) -> None:
    """Migration 0017 adds ingest_state (what the last full nightly run built from); a warehouse built by the
    schema before it keeps its ledger and findings, and has no state, so its first ingest runs in full."""
    path = _older_warehouse(
        tmp_path,
        16,
        (
            "insert into ingest_files (file_id, source, kind, uri, size_bytes, status, first_seen_at, checked_at) "
            "values ('f1', 'smi', 'nvidia_smi', '/d/a.csv', 10, 'loaded', now(), now())"
        ),
    )
    con = connect(path)
    try:
        assert [v for v, _ in _versions(con)][0] == 16 and current_version(con) == SCHEMA_VERSION >= 17
        assert "0017_ingest_state" in [d for _, d in _versions(con)]
        assert con.execute("select file_id, uri, status from ingest_files").fetchall() == [
            ("f1", "/d/a.csv", "loaded")
        ]
        assert con.execute("select count(*) from ingest_state").fetchone() == (0,)
        params = {
            "job": "nightly_ingest",
            "now": datetime(2026, 12, 3, 2),
            "config": "c",
            "code": "k",
            "ledger": "l",
        }
        con.execute(sql_text("raw/state", "record"), params)
        con.execute(sql_text("raw/state", "record"), {**params, "ledger": "l2"})
        assert con.execute(sql_text("raw/state", "recorded"), {"job": "nightly_ingest"}).fetchall() == [
            (datetime(2026, 12, 3, 2), "c", "k", "l2")
        ]
    finally:
        con.close()
