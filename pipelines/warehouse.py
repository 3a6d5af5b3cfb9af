"""The DuckDB warehouse: connections, schema creation and upgrades, the SQL file loader, publishing.

SQL lives in `sql/<layer>/<name>.sql`, one object per file. Values always travel as named parameters
(`$name`); only identifiers from our own constants are ever spliced into SQL text.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import Config, warehouse_problem
from pipelines.errors import WarehouseBusy, WarehouseError
from pipelines.failpoints import failpoint

SCHEMA_VERSION = 20
RAW_TABLES = (
    "schema_version",
    "ingest_files",
    "billing_columns",
    "billing_lines",
    "billing_tag_sets",
    "billing_line_items",
    "gpu_samples",
    "findings",
    "advice",
    "gpu_instance_types",
    "gpu_peak_flops",
    "jobs",
    "inventory_hosts",
    "finding_acks",
    "storage_objects",
    "storage_snapshots",
    "storage_uploads",
    "storage_price_list",
    "storage_patterns",
    "pricing_entries",
    "showback_rules",
    "spare_pools",
    "train_steps",
    "gpu_hourly_stats",
    "log_groups",
    "remediation_actions",
    "remediation_log",
    "gpu_samples_pruned",
    "alerts_sent",
    "ingest_state",
    "focus",
)
# landed tables that are views over the table their rows are stored in: writes (inserts, deletes) go there
STORED_IN = {"billing_line_items": "billing_lines"}
CATALOG_DIR = Path(__file__).parent / "catalog"


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


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _configure(con: duckdb.DuckDBPyConnection, settings: dict[str, Any] | None = None) -> None:
    con.execute("set TimeZone = 'UTC'")
    con.execute("set enable_progress_bar = false")
    # resource limits from the config's `duckdb:` section (names from our own validated model)
    for name, value in (settings or {}).items():
        if name not in DUCKDB_SETTINGS:
            raise WarehouseError(f"unknown DuckDB setting {name!r}")
        con.execute(f"set {name} = {_setting_literal(value)}")
    # DuckDB 2.0 deprecates `x -> expr` lambdas; our SQL uses `lambda x: expr`.
    for path in sorted((sql_root() / "macros").glob("*.sql")):
        con.execute(path.read_text(encoding="utf-8"))


DUCKDB_SETTINGS = ("memory_limit", "threads", "temp_directory")


def _setting_literal(value: Any) -> str:
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


# how long a connection waits for DuckDB's own file lock, held by a process outside wastewatch's run lock
# (a `duckdb` shell, a notebook): long enough to outlast a query, short enough to name the holder soon
FILE_LOCK_WAIT_S = 30.0
_FILE_LOCK_PID = re.compile(r"\(PID (\d+)\)")


def _open(p: Path, read_only: bool, wait: float) -> duckdb.DuckDBPyConnection:
    """duckdb.connect, retried while another process holds the file's lock; WarehouseBusy after `wait` s."""
    deadline = time.monotonic() + wait
    pause = 0.05
    while True:
        try:
            return duckdb.connect(str(p), read_only=read_only)
        except duckdb.IOException as exc:
            text = str(exc)
            if "Could not set lock" not in text:
                raise WarehouseError(f"{p}: cannot open the warehouse: {text.splitlines()[0]}") from None
            if time.monotonic() >= deadline:
                m = _FILE_LOCK_PID.search(text)
                who = f"pid {m.group(1)}" if m else "another process"
                raise WarehouseBusy(
                    f"{p}: held by {who} (DuckDB's file lock); waited {wait:g} s",
                    {"pid": int(m.group(1))} if m else None,
                ) from None
        time.sleep(pause)
        pause = min(pause * 2, 1.0)


def connect(
    path: Path | str,
    read_only: bool = False,
    settings: dict[str, Any] | None = None,
    wait: float = FILE_LOCK_WAIT_S,
) -> duckdb.DuckDBPyConnection:
    """Open the warehouse; a writable connection creates or upgrades the schema first.

    `settings` are DuckDB resource limits (`Config.duckdb_settings`: memory_limit, threads, temp_directory).
    While another process holds DuckDB's lock on the file, the open is retried for up to `wait` seconds,
    then fails with WarehouseBusy naming that process.
    """
    p = Path(path)
    problem = warehouse_problem(p)
    if problem:
        raise WarehouseError(problem)
    if read_only and not p.exists():
        raise WarehouseError(f"{p}: no warehouse here yet (run `wastewatch ingest` first)")
    try:
        if not read_only:
            p.parent.mkdir(parents=True, exist_ok=True)
        con = _open(p, read_only, wait)
    except OSError as exc:
        raise WarehouseError(f"{p}: cannot open the warehouse: {exc.strerror or exc}") from None
    try:
        _configure(con, settings)
        if not read_only:
            migrate(con)
            _load_catalogs(con)
        _load_temp_catalogs(con)  # after the schema check, which must not see them
    except WarehouseError as exc:
        con.close()  # a refused file must not stay locked by this process
        raise WarehouseError(f"{p}: {exc}") from None
    except BaseException as exc:
        con.close()
        if _NO_SPACE in str(exc):  # DuckDB's IOException or a commit that could not write
            raise WarehouseError(f"{p}: {_NO_SPACE}: free space on its disk or move `warehouse:`") from None
        raise
    return con


_NO_SPACE = "No space left on device"


# What a connection for ad-hoc SQL switches off once our own macros and catalogues are loaded: file access
# (COPY, ATTACH, EXPORT, read_csv and friends, INSTALL), persistent secrets and extension auto-loading.
# `allowed_directories`/`allowed_paths` are never set: DuckDB reopens COPY ... TO and ATTACH inside them.
QUERY_LOCKDOWN = (
    "allow_persistent_secrets",
    "allow_community_extensions",
    "autoinstall_known_extensions",
    "autoload_known_extensions",
    "enable_external_access",
)
# Temporary tables of an ad-hoc query spill to a private folder outside the warehouse's, at most this much
QUERY_TEMP_LIMIT = "8GiB"


@contextmanager
def open_for_queries(
    path: Path | str, settings: dict[str, Any] | None = None, wait: float = FILE_LOCK_WAIT_S
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection that DuckDB itself keeps from writing anything: no file is attached, copied,
    read or created, no extension installed, no setting changed (`lock_configuration`); temporary tables
    live in memory and spill to a private folder in the system's temp directory, removed on close.

    This guards against mistakes and injected SQL; a local user who can write the warehouse's folder can
    still change the file with DuckDB's own CLI, which is why acting needs a signed approval
    (docs/reliability.md, "Ad-hoc SQL cannot write").
    """
    _remove_stale_spills()
    spill = tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{os.getpid()}-")
    try:
        con = connect(path, read_only=True, settings={**(settings or {}), "temp_directory": spill}, wait=wait)
        try:
            con.execute("set max_temp_directory_size = $v", {"v": QUERY_TEMP_LIMIT})
            lock_down(con)
            yield con
        finally:
            con.close()
    finally:
        shutil.rmtree(spill, ignore_errors=True)


SPILL_PREFIX = "wastewatch-sql-"


def _remove_stale_spills() -> None:
    """Remove the spill folders of `sql` processes that are gone (a killed one leaves its folder)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{SPILL_PREFIX}*"):
        pid = folder.name[len(SPILL_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not folder.is_symlink() and folder.is_dir() and not _running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def lock_down(con: duckdb.DuckDBPyConnection) -> None:
    """Switch off file access, persistent secrets and extension loading, then lock the configuration: the
    connection still reads and writes its own database, but no SQL it runs (a view's included) reaches a
    file. Call it once our own macros and catalogues are loaded."""
    for name in QUERY_LOCKDOWN:
        con.execute(f"set {name} = false")  # our own constant names
    con.execute("set lock_configuration = true")


@contextmanager
def open_warehouse(config: Config, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(config.warehouse_path, read_only=read_only, settings=config.duckdb_settings)
    try:
        yield con
    finally:
        con.close()


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """One transaction: committed when the block ends, rolled back if it raises."""
    con.execute("begin transaction")
    try:
        yield con
    except BaseException:
        con.execute("rollback")
        raise
    con.execute("commit")


def current_version(con: duckdb.DuckDBPyConnection) -> int | None:
    exists = one(con, "select count(*) from information_schema.tables where table_name = 'schema_version'")
    if not exists or not exists[0]:
        return None
    row = one(con, "select max(version) from schema_version")
    return row[0] if row else None


def migrations(directory: Path | None = None) -> list[tuple[int, Path]]:
    folder = directory or (sql_root() / "raw" / "migrations")
    out = []
    for path in sorted(folder.glob("*.sql")):
        m = re.match(r"(\d+)_", path.name)
        if m:
            out.append((int(m.group(1)), path))
    return out


def migrate(
    con: duckdb.DuckDBPyConnection,
    target: int = SCHEMA_VERSION,
    migrations_dir: Path | None = None,
) -> int:
    """Create a new warehouse at `target`, or apply the missing migrations in one transaction."""
    version = current_version(con)
    if version is None and _has_tables(con):
        raise WarehouseError(
            "this DuckDB file has tables but no wastewatch schema_version; refusing to touch it"
        )
    if version is not None and version > target:
        raise WarehouseError(
            f"the warehouse has schema version {version}, newer than this wastewatch ({target}); upgrade wastewatch"
        )
    if version == target:
        _create_missing_tables(con)
        _align_stored_billing_columns(con)
        _comment_raw_tables(con)
        return version
    if version is not None:
        available = {number for number, _ in migrations(migrations_dir)}
        missing = [n for n in range(version + 1, target + 1) if n not in available]
        if missing:
            folder = migrations_dir or (sql_root() / "raw" / "migrations")
            raise WarehouseError(
                f"cannot upgrade the warehouse from schema version {version} to {target}: "
                f"no migration for version(s) {', '.join(map(str, missing))} in {folder}"
            )
    with transaction(con):
        if version is None:
            for table in RAW_TABLES:
                con.execute(sql_text("raw", table))
            con.execute(
                "insert into schema_version values ($v, 'initial schema', $now)",
                {"v": target, "now": utcnow()},
            )
        else:
            for number, path in migrations(migrations_dir):
                if version < number <= target:
                    try:
                        con.execute(path.read_text(encoding="utf-8"))
                    except duckdb.Error as exc:
                        raise WarehouseError(
                            f"{path.name}: migration to schema version {number} failed, the warehouse "
                            f"stays at version {version}: {str(exc).splitlines()[0]}"
                        ) from exc
                    con.execute(
                        "insert into schema_version values ($v, $d, $now)",
                        {"v": number, "d": path.stem, "now": utcnow()},
                    )
    _create_missing_tables(con)
    _align_stored_billing_columns(con)
    _comment_raw_tables(con)
    return target


def _align_stored_billing_columns(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Give each money (DECIMAL) column billing_lines stores the type billing_columns declares for it (an
    upgrade that widened a column of billing_columns reaches the optional columns a source filled, which a
    numbered migration cannot name); a no-op once they agree. Returns the columns altered."""
    if not table_exists(con, "billing_lines"):
        return []
    found = rows(
        con,
        "select l.column_name as name, c.data_type as wanted from duckdb_columns() as l "
        "join duckdb_columns() as c on c.column_name = l.column_name "
        "and c.database_name = l.database_name and c.schema_name = l.schema_name "
        "where l.database_name = current_database() and l.schema_name = 'main' "
        "and l.table_name = 'billing_lines' and c.table_name = 'billing_columns' "
        "and l.data_type <> c.data_type and starts_with(l.data_type, 'DECIMAL') "
        "and starts_with(c.data_type, 'DECIMAL')",
    )
    with transaction(con):
        for r in found:  # identifiers and types from the catalogue
            con.execute(
                f"alter table billing_lines alter column {_quote_ident(r['name'])} type {r['wanted']}"
            )
    return [r["name"] for r in found]


def _comment_raw_tables(con: duckdb.DuckDBPyConnection) -> int:
    """COMMENT ON the landed tables and columns from their `sql/raw/` files (new, upgraded or reopened).

    Comments are not part of the schema snapshot, so changing a note needs no migration: the next
    writable connection rewrites exactly the comments that differ.
    """
    with transaction(con):
        return apply_comments(con, {t: raw_notes(t) for t in RAW_TABLES})


def raw_notes(name: str) -> SqlNotes:
    """A `sql/raw/` object's notes; one whose header says `columns_from: <table>` takes the notes of the
    columns it does not describe itself from that table's DDL (billing_line_items and billing_lines hold
    the columns of billing_columns)."""
    notes = sql_notes("raw", name)
    source = notes.meta.get("columns_from")
    if not source:
        return notes
    return SqlNotes(notes.meta, notes.description, {**sql_notes("raw", source).columns, **notes.columns})


def _create_missing_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Tables added to `sql/raw/` since the file was created appear without a version bump.

    Only a change to an existing table needs a numbered migration (and SCHEMA_VERSION + 1);
    tests/warehouse/test_warehouse.py's schema snapshot catches a table changed without one.
    """
    existing = {r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()}
    missing = [t for t in RAW_TABLES if t not in existing]  # one catalogue query, not one per table
    if missing:
        with transaction(con):
            for table in missing:
                con.execute(sql_text("raw", table))
    return missing


def _has_tables(con: duckdb.DuckDBPyConnection) -> bool:
    row = one(con, "select count(*) from information_schema.tables where table_schema = 'main'")
    return bool(row and row[0])


def _load_catalogs(con: duckdb.DuckDBPyConnection) -> None:
    path = CATALOG_DIR / "gpu_instance_types.csv"
    with transaction(con):
        con.execute("delete from gpu_instance_types")
        con.execute(
            "insert into gpu_instance_types select * from read_csv($p, header = true, "
            "columns = {'instance_type': 'varchar', 'provider': 'varchar', 'gpu_model': 'varchar', "
            "'gpu_count': 'integer', 'gpu_memory_gib': 'double'})",
            {"p": str(path)},
        )
        con.execute("delete from gpu_peak_flops")
        con.execute(
            "insert into gpu_peak_flops select gpu_model, list_transform(string_split(aliases, ';'), "
            "lambda a: lower(trim(a))).list_filter(lambda a: a <> ''), vendor, peak_dense_tflops, precision, "
            "memory_gib, source, source_url from read_csv($p, header = true, all_varchar = false, "
            "columns = {'gpu_model': 'varchar', 'aliases': 'varchar', 'vendor': 'varchar', "
            "'peak_dense_tflops': 'double', 'precision': 'varchar', 'memory_gib': 'double', "
            "'source': 'varchar', 'source_url': 'varchar'})",
            {"p": str(CATALOG_DIR / "gpu_peak_flops.csv")},
        )


def _load_temp_catalogs(con: duckdb.DuckDBPyConnection) -> None:
    """The data-transfer and log-storage catalogues, the GPU purchase discounts, the billing source formats and
    the scheduler names as temporary tables of this connection (the `transfer_lines`, `log_storage_lines` and
    `commitment_lines` marts, the advice and the GPU rules read them): they are read from pipelines/catalog/ on
    every connect, so a read-only connection has them too and an edit reaches old warehouses without a
    migration."""
    con.execute(
        sql_text("intermediate/catalog", "aws_region_codes"), {"p": str(CATALOG_DIR / "aws_region_codes.csv")}
    )
    con.execute(
        sql_text("intermediate/catalog", "transfer_usage_types"),
        {"p": str(CATALOG_DIR / "transfer_usage_types.csv")},
    )
    con.execute(
        sql_text("intermediate/catalog", "log_usage_types"), {"p": str(CATALOG_DIR / "log_usage_types.csv")}
    )
    con.execute(
        sql_text("intermediate/catalog", "gpu_purchase_discounts"),
        {"p": str(CATALOG_DIR / "gpu_purchase_discounts.csv")},
    )
    con.execute(
        sql_text("intermediate/catalog", "source_formats"), {"p": str(CATALOG_DIR / "source_formats.csv")}
    )
    con.execute(
        sql_text("intermediate/catalog", "scheduler_names"), {"p": str(CATALOG_DIR / "scheduler_names.csv")}
    )


def stored_in(table: str) -> str:
    """The table that stores a landed table's rows (itself, or the table under its view)."""
    return STORED_IN.get(table, table)


def table_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    row = one(con, "select count(*) from information_schema.tables where table_name = $n", {"n": name})
    return bool(row and row[0])


def drop_view(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Drop the view `name` if there is one (a table of that name is left be)."""
    if one(con, "select 1 from duckdb_views() where view_name = $n and not internal", {"n": name}):
        con.execute(f"drop view {name}")


def columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    """A table's (or temp table's) columns and their types, in order."""
    return [
        (r["column_name"], r["data_type"])
        for r in rows(
            con,
            "select column_name, data_type from information_schema.columns "
            "where table_name = $t order by ordinal_position",
            {"t": table},
        )
    ]


def rows(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    cur = con.execute(sql, params or {})
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def publish(config: Config) -> Path:
    """Update the read-only published twin for ad-hoc users by what changed, and rename it into place.

    The caller must not hold a connection to the warehouse. Two private copies beside the target are used
    in turn: the one the target is not (readers hold the target, and DuckDB refuses to write a file a reader
    holds) is brought up to date from the warehouse, table by table and, for landed tables, file by file
    (`_update_copy`), then hard-linked to a temp name renamed over the target, so a reader never sees a
    half-written file and keeps reading the copy it opened. A copy that is missing, still held by a reader
    of an earlier publish, left unrecorded by a killed publish, or from another schema is made again by a
    whole-file copy. Copies that killed publishes left behind are deleted first (their names carry the
    writer's pid).
    """
    src = config.warehouse_path
    dst = config.published_path
    if not src.exists():
        raise WarehouseError(f"{src}: nothing to publish yet")
    con = _open(src, False, FILE_LOCK_WAIT_S)
    try:
        con.execute("checkpoint")
    finally:
        con.close()
    _remove_stale_copies(dst)
    copy = _private_copy(dst)
    small = src.stat().st_size <= config.duckdb.publish_update_above_mb * 2**20
    record = None if small else _copy_record(copy)
    if record is None or not _update_copy(copy, src, record, config.spark_marts_dir):
        _whole_copy(src, copy, config.spark_marts_dir, recorded=not small)
    shutil.copymode(src, copy)  # readers need the warehouse's permissions
    failpoint("publish.copied")
    fd, tmp = tempfile.mkstemp(prefix=f"{dst.name}.{os.getpid()}.", suffix=PUBLISH_SUFFIX, dir=dst.parent)
    os.close(fd)
    try:
        os.unlink(tmp)
        os.link(copy, tmp)
        os.replace(tmp, dst)
        failpoint("publish.replaced")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dst


# the two private copies the published twin is a hard link of, in turn: `<published name>.<letter>`
PRIVATE_COPIES = ("a", "b")
# beside each private copy: what it holds (`<copy>.json`), written once it is complete
RECORD_SUFFIX = ".json"


def private_copies(dst: Path) -> list[Path]:
    return [dst.with_name(f"{dst.name}.{c}") for c in PRIVATE_COPIES]


def _private_copy(dst: Path) -> Path:
    """The private copy to update: the one the published twin is not (by inode)."""
    published = dst.stat().st_ino if dst.exists() else None
    copies = private_copies(dst)
    free = [c for c in copies if not (c.exists() and c.stat().st_ino == published)]
    return next((c for c in free if c.exists()), free[0])


def _copy_record(copy: Path) -> dict[str, Any] | None:
    """What a private copy holds (its record), None when there is no complete copy to update."""
    record = copy.with_name(copy.name + RECORD_SUFFIX)
    if not copy.exists() or Path(f"{copy}.wal").exists() or not record.exists():
        return None
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if data.get("schema") == SCHEMA_VERSION else None


def _write_record(copy: Path, parts: dict[str, dict[str, int] | None]) -> None:
    record = copy.with_name(copy.name + RECORD_SUFFIX)
    tmp = record.with_name(record.name + ".tmp")
    tmp.write_text(json.dumps({"schema": SCHEMA_VERSION, "tables": parts}, sort_keys=True), encoding="utf-8")
    os.replace(tmp, record)


def _forget_record(copy: Path) -> None:
    """Before a private copy is written: a publish killed from here on leaves it unrecorded (made again)."""
    copy.with_name(copy.name + RECORD_SUFFIX).unlink(missing_ok=True)


def _whole_copy(src: Path, copy: Path, marts_dir: str | None, recorded: bool = True) -> None:
    """Make the private copy again from the whole warehouse file, its Spark views turned into tables; with
    `recorded`, what it holds is recorded for the next publish to update it by what changed."""
    _forget_record(copy)
    copy.unlink(missing_ok=True)  # a reader of an earlier publish may still hold it: it keeps its file
    Path(f"{copy}.wal").unlink(missing_ok=True)
    # named as the twin's temp copies, so that a killed publish's is deleted by the next (`_remove_stale_copies`)
    fd, tmp = tempfile.mkstemp(
        prefix=f"{copy.name[:-2]}.{os.getpid()}.", suffix=PUBLISH_SUFFIX, dir=copy.parent
    )
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        _materialise_file_views(Path(tmp), marts_dir)
        parts = None
        if recorded:
            con = _open(src, False, FILE_LOCK_WAIT_S)
            try:
                parts = _table_parts(con)
            finally:
                con.close()
        os.replace(tmp, copy)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if parts is not None:
        _write_record(copy, parts)


# a table of more rows than this with no record of its changes is copied whole at every publish rather
# than fingerprinted from its values
CONTENT_TOKEN_ROWS = 200_000
# the private copy as `_update_copy` attaches it to the warehouse's connection
COPY_ALIAS = "published_copy"


def _table_parts(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, int] | None]:
    """The parts of each table of the warehouse (`con`'s database) and a token of each part's rows that
    changes whenever they are written again; None for a table with no such record (copied whole each time).

    The tokens come from what wrote the rows: the transform's records of what it built
    (`sql/publish/build_parts.sql`: each day of a table kept by day, else the whole table as one part), the
    ingestion ledger for each file of a landed table, and, for any other small table, the hash of its
    values. Each table's columns are a part too ('#shape'), so a table whose columns changed is made again.
    """
    from pipelines.marts.registry import DAY_MARTS, REGISTRY, ROLLUPS  # what the transform writes

    relations = rows(con, sql_text("publish", "relations"), {"db": scalar(con, "select current_database()")})
    tables = {r["name"]: r for r in relations if not r["is_view"]}
    built: dict[str, dict[str, int]] = {}
    if all(t in tables for t in _BUILD_RECORDS):
        for r in rows(con, sql_text("publish", "build_parts")):
            built.setdefault(r["object"], {})[r["part"]] = int(r["token"])
    by_day = set(ROLLUPS + DAY_MARTS)  # their records' parts are the days of their `hour` column
    transformed = {m.name for m in REGISTRY}
    out: dict[str, dict[str, int] | None] = {}
    for name, t in tables.items():
        parts: dict[str, int] | None
        # the table's own records and those kept beside them under `<name>/...` (cost_hourly/modelled)
        others = sorted(
            (f"{obj} {k}", v)
            for obj, ps in built.items()
            if obj.startswith(name + "/")
            for k, v in ps.items()
        )
        mine = built.get(name, {})
        if name in by_day and mine:
            parts = {f"day {k}": v for k, v in mine.items() if k not in ("files", "inputs")}
            parts["*"] = _text_token(json.dumps([mine.get("files"), mine.get("inputs"), others]))
        elif mine or others:
            parts = {"*": _text_token(json.dumps([sorted(mine.items()), others]))}
        elif name not in transformed and "x_file_id " in f"{t['shape']}, " and "ingest_files" in tables:
            found = rows(con, sql_text("publish", "file_parts"), {"table": name})
            parts = {f"file {r['part']}": int(r["token"]) for r in found}
        elif (t["estimated_rows"] or 0) <= CONTENT_TOKEN_ROWS and name not in _BUILD_RECORDS:
            found = rows(con, sql_text("publish", "content_token"), {"table": name})
            parts = {"*": int(found[0]["token"])}
        else:
            parts = None
        if parts is not None:
            parts["#shape"] = _text_token(t["shape"] or "")
        out[name] = parts
    return out


# the transform's records of what it built (sql/intermediate/incremental/)
_BUILD_RECORDS = ("int_incremental_days", "int_incremental_files", "int_mart_inputs")


def _text_token(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def _update_copy(copy: Path, src: Path, record: dict[str, Any], marts_dir: str | None) -> bool:
    """Bring the private copy up to date from the warehouse by the parts whose tokens differ from its record:
    a day or file of rows deleted and inserted again, a table replaced or dropped, comments set. False (and
    the copy left for a whole-file copy) when it cannot be: a reader of an earlier publish holds it, or the
    warehouse's views differ from the copy's (a new wastewatch's SQL).

    The copy is attached to a connection of the warehouse (the process may hold the warehouse already, and
    DuckDB opens a file once per process)."""
    con = _open(src, False, FILE_LOCK_WAIT_S)
    try:
        try:
            con.execute(f"attach {_quote_text(str(copy))} as {COPY_ALIAS}")
        except duckdb.Error:
            return False  # held by a reader of an earlier publish
        warehouse = scalar(con, "select current_database()")
        theirs = {r["name"]: r for r in rows(con, sql_text("publish", "relations"), {"db": warehouse})}
        mine = {r["name"]: r for r in rows(con, sql_text("publish", "relations"), {"db": COPY_ALIAS})}
        file_views = [n for n, r in theirs.items() if r["is_view"] and _reads_files(r["sql"])]
        views = {n: r for n, r in theirs.items() if r["is_view"] and n not in file_views}
        if views != {n: r for n, r in mine.items() if r["is_view"] and n not in file_views}:
            con.execute(f"detach {COPY_ALIAS}")
            return False
        _forget_record(copy)
        parts = _table_parts(con)
        old: dict[str, dict[str, int] | None] = record.get("tables", {})
        con.execute("begin transaction")
        for name in sorted(set(mine) - set(theirs)):
            kind = "view" if mine[name]["is_view"] else "table"
            con.execute(f"drop {kind} {COPY_ALIAS}.{_quote_ident(name)}")
        for name, now in parts.items():
            _update_table(con, name, now, old.get(name), mine.get(name))
        for name in file_views:  # the Spark marts: their view again, made a table below as a whole copy's are
            if name in mine:
                kind = "view" if mine[name]["is_view"] else "table"
                con.execute(f"drop {kind} {COPY_ALIAS}.{_quote_ident(name)}")
            con.execute(f"use {COPY_ALIAS}")
            try:
                con.execute(theirs[name]["sql"])
            finally:
                con.execute(f"use {_quote_ident(warehouse)}")
        mine = {r["name"]: r for r in rows(con, sql_text("publish", "relations"), {"db": COPY_ALIAS})}
        for name, r in theirs.items():
            if name in mine and name not in file_views and not r["is_view"]:
                _copy_comments(con, name, r, mine[name])
        con.execute("commit")
        failpoint("publish.updated")
        con.execute(f"checkpoint {COPY_ALIAS}")
        con.execute(f"detach {COPY_ALIAS}")
    finally:
        con.close()
    _materialise_file_views(copy, marts_dir)
    _write_record(copy, parts)
    return True


def _reads_files(sql: str | None) -> bool:
    return bool(sql and re.search(r"read_(parquet|csv|json)", sql))


def _update_table(
    con: duckdb.DuckDBPyConnection,
    name: str,
    now: dict[str, int] | None,
    before: dict[str, int] | None,
    mine: dict[str, Any] | None,
) -> None:
    """One table of the copy brought up to date: the parts whose tokens changed deleted and inserted again
    (days by the table's `hour`, files by its `x_file_id`), or the whole table."""
    ident, target = _quote_ident(name), f"{COPY_ALIAS}.{_quote_ident(name)}"
    whole = (
        now is None
        or before is None
        or mine is None
        or mine["is_view"]
        or now.get("#shape") != before.get("#shape")
    )
    if whole:
        if mine is not None and mine["is_view"]:
            con.execute(f"drop view {target}")
        con.execute(f"create or replace table {target} as from {ident}")  # noqa: S608 - quoted catalogue names
        return
    assert now is not None and before is not None
    changed = sorted(k for k in set(now) | set(before) if k != "#shape" and now.get(k) != before.get(k))
    if not changed:
        return
    days = [k[4:] for k in changed if k.startswith("day ")]
    files = [k[5:] for k in changed if k.startswith("file ")]
    if len(days) + len(files) != len(changed):  # the whole table is one part
        con.execute(f"delete from {target}")  # noqa: S608
        con.execute(f"insert into {target} by name from {ident}")  # noqa: S608
        return
    column, keys = ("cast(hour::date as varchar)", days) if days else ("cast(x_file_id as varchar)", files)
    con.execute(f"delete from {target} where list_contains($k, {column})", {"k": keys})  # noqa: S608
    con.execute(f"insert into {target} by name from {ident} where list_contains($k, {column})", {"k": keys})  # noqa: S608


def _copy_comments(
    con: duckdb.DuckDBPyConnection, name: str, theirs: dict[str, Any], mine: dict[str, Any]
) -> None:
    """The warehouse's comments on a table and its columns, where the copy's differ."""
    ident = f"{COPY_ALIAS}.{_quote_ident(name)}"
    if theirs["comment"] != mine["comment"]:
        con.execute(f"comment on table {ident} is {_quote_text(theirs['comment'])}")
    if theirs["column_comments"] != mine["column_comments"]:
        have = {c["column"]: c["comment"] for c in mine["column_comments"] or []}
        want = {c["column"]: c["comment"] for c in theirs["column_comments"] or []}
        for column in set(have) | set(want):
            if have.get(column) != want.get(column):
                con.execute(
                    f"comment on column {ident}.{_quote_ident(column)} is {_quote_text(want.get(column))}"
                )


def _materialise_file_views(copy: Path, marts_dir: str | None) -> list[str]:
    """Turn the copy's views over files (the Spark engine's Parquet marts) into tables of the same name, with
    their comments: `wastewatch sql` opens the copy without file access, and no folder of marts is ever
    whitelisted for it (DuckDB's allowed_directories would reopen COPY ... TO there). This connection may
    read the marts folder only: a view over any other file (one planted in the warehouse to carry a secret
    into the readers' copy) cannot be read here and stays a view, which `sql` refuses to read."""
    con = duckdb.connect(str(copy))
    done = []
    try:
        if marts_dir and not marts_dir.startswith("s3://"):
            con.execute("set allowed_directories = $d", {"d": [marts_dir.rstrip("/") + "/"]})
        lock_down(con)
        views = con.execute(
            "select view_name, comment from duckdb_views() "
            "where not internal and schema_name = 'main' and regexp_matches(sql, 'read_(parquet|csv|json)')"
        ).fetchall()
        for name, comment in views:
            notes = con.execute(
                "select column_name, comment from duckdb_columns() where table_name = $n and comment is not null",
                {"n": name},
            ).fetchall()
            ident, staged = _quote_ident(name), _quote_ident(name + "__published")
            try:
                con.execute("begin transaction")
                con.execute(f"create table {staged} as select * from {ident}")  # noqa: S608 - quoted catalogue names
                con.execute(f"drop view {ident}")
                con.execute(f"alter table {staged} rename to {ident}")
                if comment:
                    con.execute(f"comment on table {ident} is {_quote_text(comment)}")
                for column, note in notes:
                    con.execute(f"comment on column {ident}.{_quote_ident(column)} is {_quote_text(note)}")
                con.execute("commit")
            except duckdb.Error:
                con.execute("rollback")
                continue
            done.append(name)
        if done:
            con.execute("checkpoint")
    finally:
        con.close()
    return done


# a publish's temp copy: `<published name>.<pid>.<random>.publishing`, renamed over the target when complete
PUBLISH_SUFFIX = ".publishing"


def _remove_stale_copies(dst: Path) -> list[Path]:
    """Delete the temp copies that publishes killed mid-copy left beside `dst` (their process is gone);
    a copy whose process still runs is left alone. Returns what was deleted."""
    removed = []
    for tmp in dst.parent.glob(f"{glob_escape(dst.name)}.*{PUBLISH_SUFFIX}"):
        pid = tmp.name[len(dst.name) + 1 :].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and _running(int(pid)):
            continue
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    # earlier versions named their copies `<name>.<random>.tmp`, without a pid: one writer at a time
    # publishes, so such a copy is a leftover
    for tmp in dst.parent.glob(f"{glob_escape(dst.name)}.*.tmp"):
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    return removed


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def one(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None
) -> tuple[Any, ...] | None:
    """The first row of a query (the whole result is consumed, as DuckDB 2.0 requires)."""
    result = con.execute(sql, params or {}).fetchall()
    return result[0] if result else None


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None) -> Any:
    row = one(con, sql, params)
    return row[0] if row else None
