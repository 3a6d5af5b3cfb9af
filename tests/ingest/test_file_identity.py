"""A file's identity is its path relative to its source's root (pipelines/ingest/ledger.py): moving the
project, renaming its parent folder or remounting a volume loads nothing twice; an appended file is a new
version of the same file; a warehouse whose ids an earlier wastewatch keyed by absolute path (schema 18)
takes the new ids at its next ingest without loading anything again (docs/reliability.md, "File identity
survives a move")."""

from __future__ import annotations

import hashlib
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipelines.config import Config, load_config
from pipelines.ingest import IngestReport, ingest
from pipelines.transform.build import build_marts
from pipelines.warehouse import SCHEMA_VERSION, connect
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FIXTURES, FOCUS_SAMPLE, copy_into
from tests.helpers.storage import copy_fixture_report

SOURCES = """
sources:
  - {name: focus, kind: focus, uri: landing/billing/}
  - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
  - {name: slurm, kind: slurm_sacct, uri: landing/jobs/}
  - {name: ckpt, kind: s3_inventory, uri: landing/inventory/}
  - {name: nfs, kind: fs_scan, uri: landing/nfs}
"""
SMI = "timestamp, hostname, index, utilization.gpu [%]\n2026/11/24 12:00:00.000, gpu-{n}, 0, {u} %\n"
MORE = "2026/11/24 12:00:10.000, gpu-{n}, 0, 7 %\n"
NUMERIC = ("BIGINT", "INTEGER", "SMALLINT", "HUGEINT", "DOUBLE", "FLOAT", "UBIGINT")
# sources read whole: a file-system scan is read by every run (its rows replaced, never added to)
WHOLE = {"nfs", "ckpt"}
WHOLE_KINDS = ("fs_scan", "s3_inventory")


def _project(root: Path) -> Config:
    copy_into(FOCUS_SAMPLE, root / "landing" / "billing")
    for n in (1, 2):
        (root / "landing" / "telemetry" / f"rack-{n}").mkdir(parents=True, exist_ok=True)
        (root / "landing" / "telemetry" / f"rack-{n}" / "gpu.csv").write_text(SMI.format(n=n, u=40 + n))
    copy_into(FIXTURES / "jobs" / "sacct_cluster_a.txt", root / "landing" / "jobs")
    copy_fixture_report(root / "landing" / "inventory")
    (root / "landing" / "nfs" / "ckpt").mkdir(parents=True)
    (root / "landing" / "nfs" / "ckpt" / "step-1.pt").write_bytes(b"x" * 1000)
    (root / "landing" / "nfs" / "notes.txt").write_text("hello")
    write_config(root, SOURCES)
    return load_config(root / "wastewatch.yaml")


def _ingest(config: Config) -> IngestReport:
    con = new_warehouse(config.warehouse_path)
    try:
        report = ingest(con, config)
    finally:
        con.close()
    assert not report.rejected and not report.failures, report.summary()
    return report


def _contents(config: Config) -> dict[str, Any]:
    """Per base table: row count, and per numeric column its sum."""
    con = duckdb.connect(str(config.warehouse_path), read_only=True)
    try:
        out: dict[str, Any] = {}
        tables = con.execute(
            "select table_name from duckdb_tables() where schema_name = 'main' order by 1"
        ).fetchall()
        for (table,) in tables:
            cols = con.execute(
                "select column_name, data_type from duckdb_columns() where schema_name = 'main' "
                "and table_name = $t order by column_index",
                {"t": table},
            ).fetchall()
            numeric = [c for c, t in cols if t in NUMERIC or t.startswith("DECIMAL(")]
            sums = "".join(f', sum("{c}")' for c in numeric)
            row = con.execute(f'select count(*){sums} from "{table}"').fetchone()  # noqa: S608 - catalogue names
            assert row is not None
            # a DOUBLE's sum depends on the order DuckDB's threads add it in: compared to 12 significant digits
            values = [
                None if v is None else Decimal(f"{v:.12g}" if isinstance(v, float) else str(v))
                for v in row[1:]
            ]
            out[table] = (row[0], dict(zip(numeric, values, strict=True)))
        return out
    finally:
        con.close()


def _ledger(config: Config) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(config.warehouse_path), read_only=True)
    try:
        return con.execute("select source, file_id, uri, status from ingest_files order by 1, 2").fetchall()
    finally:
        con.close()


def _loaded_files(report: IngestReport) -> list[str]:
    return [o.uri for o in report.outcomes if o.status != "unchanged" and o.source not in WHOLE]


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, set[str]]:
    """The project of every file kind after its first ingest, made once: a pristine copy, the place it was
    ingested at (`base/a/project`), where each test finds it again, and the sources that ingest loaded."""
    base = tmp_path_factory.mktemp("file_identity")
    report = _ingest(_project(base / "a" / "project"))
    pristine = tmp_path_factory.mktemp("file_identity_pristine") / "project"
    shutil.copytree(base / "a" / "project", pristine, symlinks=True)
    return pristine, base, {o.source for o in report.of("loaded")}


@pytest.fixture
def base(ingested: tuple[Path, Path, set[str]]) -> Path:
    """A folder holding `a/project`: the project of every file kind as its first ingest there left it (the
    ledger naming its files where they are), restored for each test; whatever a test moved it to goes."""
    pristine, base, _ = ingested
    for leftover in base.iterdir():
        shutil.rmtree(leftover)
    shutil.copytree(pristine, base / "a" / "project", symlinks=True)
    return base


@pytest.mark.parametrize("how", ["move", "rename_parent"])
def test_moving_the_project_loads_nothing_twice(
    ingested: tuple[Path, Path, set[str]], base: Path, tmp_path: Path, how: str
) -> None:
    first = load_config(base / "a" / "project" / "wastewatch.yaml")
    assert ingested[2] == {"focus", "smi", "slurm", "ckpt", "nfs"}  # the first ingest loaded every source
    before = _contents(first)
    assert before["gpu_samples"][0] == 2 and before["jobs"][0] > 0 and before["storage_objects"][0] > 0
    ledger_before = _ledger(first)

    if how == "move":  # the whole project to another place (the config's paths are relative)
        moved = tmp_path / "elsewhere" / "deeper" / "project"
        moved.parent.mkdir(parents=True)
        shutil.move(base / "a" / "project", moved)
    else:  # a parent folder renamed (a volume mounted elsewhere)
        (base / "a").rename(base / "b")
        moved = base / "b" / "project"
    second = load_config(moved / "wastewatch.yaml")
    again = _ingest(second)

    assert _loaded_files(again) == []  # every file unchanged
    assert _contents(second) == before  # every table: the same rows and sums
    ledger_after = _ledger(second)
    # the same ids, each row now naming where its file is
    assert [r[:2] for r in ledger_after] == [r[:2] for r in ledger_before]
    assert all(str(moved) in uri for _, _, uri, _ in ledger_after if not uri.startswith("s3://")), (
        ledger_after
    )
    con = duckdb.connect(str(second.warehouse_path), read_only=True)
    try:
        (stale,) = con.execute(
            "select count(*) from gpu_samples where not starts_with(x_source_file, $p)", {"p": str(moved)}
        ).fetchone() or (None,)
    finally:
        con.close()
    assert stale == 0  # the rows name the moved file too


# the marts step's memory of what each mart, day or file was built from: its fingerprints hash uris too, so
# they change with a move (and the marts are built again once, to the same rows); not data
FINGERPRINTS = ("fingerprint", "built_at")


def _everything(config: Config) -> dict[str, Any]:
    """Per table and view of the warehouse, raw and marts: row count, per numeric column its sum, and where
    the relation has `x_file_id` its rows per file id."""
    con = connect(config.warehouse_path, read_only=True)  # the views need the macros connect defines
    try:
        out: dict[str, Any] = {}
        relations = con.execute(
            "select table_name from duckdb_tables() where schema_name = 'main' union "
            "select view_name from duckdb_views() where schema_name = 'main' and not internal order by 1"
        ).fetchall()
        for (rel,) in relations:
            cols = con.execute(
                "select column_name, data_type from duckdb_columns() where schema_name = 'main' "
                "and table_name = $t order by column_index",
                {"t": rel},
            ).fetchall()
            numeric = [
                c for c, t in cols if (t in NUMERIC or t.startswith("DECIMAL(")) and c not in FINGERPRINTS
            ]
            sums = "".join(f', sum("{c}")' for c in numeric)
            row = con.execute(f'select count(*){sums} from "{rel}"').fetchone()  # noqa: S608 - catalogue names
            assert row is not None
            per_file = None
            if any(c == "x_file_id" for c, _ in cols):
                per_file = sorted(
                    con.execute(f'select x_file_id, count(*) from "{rel}" group by 1').fetchall(),  # noqa: S608
                    key=str,
                )
            # a DOUBLE's sum depends on the order DuckDB's threads add it in: compared to 12 significant digits
            values = [
                None if v is None else Decimal(f"{v:.12g}" if isinstance(v, float) else str(v))
                for v in row[1:]
            ]
            out[rel] = (row[0], dict(zip(numeric, values, strict=True)), per_file)
        return out
    finally:
        con.close()


def _build_marts(config: Config) -> None:
    con = connect(config.warehouse_path)
    try:
        build_marts(con, config)
    finally:
        con.close()


def test_moving_the_project_changes_no_table_raw_or_mart(base: Path, tmp_path: Path) -> None:
    """Issue 40's acceptance: ingest and build every mart, move the project folder, ingest again and build
    again: every table and view, raw and marts, keeps its row count, its numeric sums and its rows per
    `x_file_id`, after the ingest and after the marts are built again."""
    first = load_config(base / "a" / "project" / "wastewatch.yaml")
    _build_marts(first)
    before = _everything(first)
    assert before["cost_hourly"][0] > 0 and before["gpu_hours"][0] > 0 and before["commitment_lines"][0] > 0
    assert before["billing_line_items"][2] and before["gpu_samples"][2]  # rows per file id are compared

    moved = tmp_path / "b" / "elsewhere" / "project"
    moved.parent.mkdir(parents=True)
    shutil.move(base / "a" / "project", moved)
    second = load_config(moved / "wastewatch.yaml")
    assert _loaded_files(_ingest(second)) == []
    assert _everything(second) == before
    _build_marts(second)
    assert _everything(second) == before


def test_an_appended_telemetry_file_is_a_new_version_of_the_same_file(base: Path, tmp_path: Path) -> None:
    config = load_config(base / "a" / "project" / "wastewatch.yaml")
    ids = {r[1] for r in _ledger(config) if r[0] == "smi"}
    moved = tmp_path / "b"
    shutil.move(base / "a" / "project", moved)
    with (moved / "landing" / "telemetry" / "rack-1" / "gpu.csv").open("a") as f:
        f.write(MORE.format(n=1))
    config = load_config(moved / "wastewatch.yaml")
    report = _ingest(config)
    assert [(o.source, o.status, o.rows) for o in report.outcomes if o.source == "smi"] == [
        ("smi", "loaded", 2),
        ("smi", "unchanged", 0),
    ]
    assert {r[1] for r in _ledger(config) if r[0] == "smi"} == ids  # the same file, a new version
    con = duckdb.connect(str(config.warehouse_path), read_only=True)
    try:
        samples = con.execute(
            "select host, count(*), sum(util_pct) from gpu_samples group by 1 order by 1"
        ).fetchall()
    finally:
        con.close()
    assert samples == [("gpu-1", 2, 48.0), ("gpu-2", 1, 42.0)]  # replaced, not doubled


def _old_id(source: str, uri: str) -> str:
    """The id a wastewatch of schema version 18 gave a file: its source and absolute uri, hashed."""
    return hashlib.sha1(f"{source}|{uri}".encode()).hexdigest()[:20]


def as_version_18(config: Config) -> None:
    """Make the warehouse what schema version 18 wrote for the same files: every local file's id the hash of
    its source and absolute uri (and a source read whole that of `source:` and its location), everywhere a
    file id is stored, and the schema version at 18."""
    con = duckdb.connect(str(config.warehouse_path))
    try:
        found = con.execute(
            "select source, file_id, uri from ingest_files where not starts_with(uri, 's3://')"
        ).fetchall()
        # a source read whole: its row's uri is its location
        locations = {s.name: config.source_location(s) for s in config.sources if s.kind in WHOLE_KINDS}
        moves = [
            (fid, _old_id(src, f"source:{uri}" if locations.get(src) == uri else uri))
            for src, fid, uri in found
        ]
        con.execute("begin transaction")
        con.execute(
            "create temp table m as select unnest($o) as new_id, unnest($n) as old_id",
            {"o": [a for a, _ in moves], "n": [b for _, b in moves]},
        )
        tables = con.execute(
            "select table_name, column_name from duckdb_columns() where schema_name = 'main' "
            "and (column_name = 'x_file_id' or (table_name = 'int_incremental_files' and column_name = 'file_id')) "
            "and table_name in (select table_name from duckdb_tables())"
        ).fetchall()
        for table, column in tables:
            con.execute(
                f'update "{table}" set {column} = m.old_id from m where "{table}".{column} = m.new_id'  # noqa: S608
            )
        con.execute("update ingest_files set file_id = m.old_id from m where ingest_files.file_id = m.new_id")
        # what a version-18 warehouse records: 19 changed no column, and 20 adds its columns only where missing
        con.execute(
            "update schema_version set version = 18 where version = (select max(version) from schema_version)"
        )
        con.execute("commit")
    finally:
        con.close()


@pytest.mark.parametrize("moved", [False, True], ids=["in_place", "moved_too"])
def test_a_version_18_warehouse_takes_the_new_ids_at_its_next_ingest_loading_nothing(
    base: Path, tmp_path: Path, moved: bool
) -> None:
    config = load_config(base / "a" / "project" / "wastewatch.yaml")
    before = _contents(config)
    ids = _ledger(config)
    as_version_18(config)
    assert {r[1] for r in _ledger(config)}.isdisjoint({r[1] for r in ids if not r[2].startswith("s3://")})
    if moved:
        shutil.move(base / "a" / "project", tmp_path / "b")
        config = load_config(tmp_path / "b" / "wastewatch.yaml")
    # a telemetry file gone since: its rows stay (telemetry keeps what a vanished file gave)
    gone = config.source_root(config.sources[1]) / "rack-2" / "gpu.csv"
    gone.unlink()
    old_ids = _ledger(config)
    con = new_warehouse(config.warehouse_path)  # the upgrade: version 19 and on, changing nothing stored
    try:
        versions = dict(con.execute("select version, description from schema_version").fetchall())
    finally:
        con.close()
    assert versions[19] == "0019_file_identity" and max(versions) == SCHEMA_VERSION
    assert _ledger(config) == old_ids
    report = _ingest(config)  # the next ingest gives every row its new id, loading nothing
    assert _loaded_files(report) == []
    after = _contents(config)
    assert after.pop("schema_version")[0] == 1 + SCHEMA_VERSION - 18  # 18's row, then one per migration
    assert after == {t: v for t, v in before.items() if t != "schema_version"}
    new_ids = {r[1] for r in ids}
    kept = [r for r in _ledger(config) if r[1] not in new_ids]
    if moved:  # nothing says where the gone file was under the root: its row keeps its old id and rows
        assert [(r[0], r[2]) for r in kept] == [
            ("smi", str(base / "a" / "project" / "landing" / "telemetry" / "rack-2" / "gpu.csv"))
        ]
        assert len(_ledger(config)) == len(ids)
    else:  # under the root: its path there is its key
        assert kept == []
        assert [r[:2] for r in _ledger(config)] == [r[:2] for r in ids]  # every id is the new one


def test_a_source_folder_named_from_above_or_below_keeps_its_files(base: Path) -> None:
    """The config names a folder below the source's root (or above it): the files at the same place are
    the same files, whatever their path relative to the new root."""
    root = base / "a" / "project"
    config = load_config(root / "wastewatch.yaml")
    before = _contents(config)
    write_config(root, SOURCES.replace("uri: landing/telemetry/", "uri: landing/telemetry/rack-1/"))
    narrowed = load_config(root / "wastewatch.yaml")
    report = _ingest(narrowed)
    assert [(o.source, o.status) for o in report.outcomes if o.source == "smi"] == [("smi", "unchanged")]
    write_config(root, SOURCES)  # and back up
    report = _ingest(load_config(root / "wastewatch.yaml"))
    assert [(o.source, o.status) for o in report.outcomes if o.source == "smi"] == [("smi", "unchanged")] * 2
    assert _contents(config) == before
