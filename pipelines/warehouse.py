"""The DuckDB warehouse: connections, schema creation and upgrades, the SQL file loader (publishing the
readers' copy is pipelines/transform/publish.py).

SQL lives in `sql/<layer>/<name>.sql`, one object per file. Values always travel as named parameters
(`$name`); only identifiers from our own constants are ever spliced into SQL text.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import Config, warehouse_problem
from pipelines.errors import WarehouseBusy, WarehouseError
from pipelines.sql_files import (  # noqa: F401 - re-exported: callers import them from here
    META_KEYS,
    SqlNotes,
    _quote_ident,
    _quote_text,
    apply_comments,
    header,
    parse_notes,
    rows,
    sql_notes,
    sql_root,
    sql_text,
)

SCHEMA_VERSION = 21
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
    "connect_digest",
)
# landed tables that are views over the table their rows are stored in: writes (inserts, deletes) go there
STORED_IN = {"billing_line_items": "billing_lines"}
CATALOG_DIR = Path(__file__).parent / "catalog"
# the catalogues of pipelines/catalog/ that `_load_catalogs` stores in the warehouse (each `<name>.csv`)
STORED_CATALOGS = ("gpu_instance_types", "gpu_peak_flops")


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _configure(con: duckdb.DuckDBPyConnection, settings: dict[str, Any] | None = None) -> None:
    """Run `configure_statements` as one script: DuckDB runs them in order, without a call per macro. Each
    ends on its own line, so a file's trailing comment cannot swallow the `;` after it."""
    con.execute("".join(s.rstrip().rstrip(";") + "\n;\n" for s in configure_statements(settings)))


def configure_statements(settings: dict[str, Any] | None = None) -> list[str]:
    """What every connection runs before use, in order: the session settings, the config's `duckdb:` resource
    limits and the macro files (each file one entry)."""
    statements = ["set TimeZone = 'UTC'", "set enable_progress_bar = false"]
    # resource limits from the config's `duckdb:` section (names from our own validated model)
    for name, value in (settings or {}).items():
        if name not in DUCKDB_SETTINGS:
            raise WarehouseError(f"unknown DuckDB setting {name!r}")
        statements.append(f"set {name} = {_setting_literal(value)}")
    # DuckDB 2.0 deprecates `x -> expr` lambdas; our SQL uses `lambda x: expr`.
    statements += [p.read_text(encoding="utf-8") for p in sorted((sql_root() / "macros").glob("*.sql"))]
    return statements


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
    """Open the warehouse; a writable connection creates or upgrades the schema first (`prepare`).

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
            prepare(con)
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


class CommandWarehouse:
    """The one connection of a command that writes the warehouse (`ingest`, `run`, `evaluate`, `report`):
    what the command reads before and after its Dagster runs and the runs themselves (the resource borrows
    it, pipelines/defs/resources.py) use it, so the warehouse is opened once, not once per reader.

    Opened on first use: read-only while only reads were asked for (None when there is no warehouse yet),
    writable from the first write on (a read-only connection is closed first: DuckDB holds one mode per file
    and process). `open_soon` starts the writable open in a thread, for a command to overlap it with
    importing Dagster (DuckDB releases the GIL while it runs SQL). Closed by `close` (the command's `writing`
    block), before the run-level lock is released.
    """

    def __init__(self, config: Config) -> None:
        self.config = config
        self._con: duckdb.DuckDBPyConnection | None = None
        self._writable = False
        self._opening: threading.Thread | None = None
        self._opened: list[duckdb.DuckDBPyConnection | BaseException] = []

    def reader(self) -> duckdb.DuckDBPyConnection | None:
        """The open connection (writable or not), else a read-only one; None when there is no warehouse."""
        if self._opening is not None:
            return self.writer()
        if self._con is None:
            if not self.config.warehouse_path.exists():
                return None
            self._con = connect(
                self.config.warehouse_path, read_only=True, settings=self.config.duckdb_settings
            )
        return self._con

    def writer(self) -> duckdb.DuckDBPyConnection:
        """The writable connection (a new warehouse's schema created on open)."""
        got = self._background_open()
        if isinstance(got, BaseException):
            raise got
        if got is not None:
            self._con, self._writable = got, True
        if not self._writable:
            self._drop()
            self._con = connect(self.config.warehouse_path, settings=self.config.duckdb_settings)
            self._writable = True
        assert self._con is not None
        return self._con

    def open_soon(self) -> None:
        """Start opening the writable connection in a thread; `writer` waits for it (and raises what it raised)."""
        if self._writable or self._opening is not None:
            return
        self._drop()

        def opening() -> None:
            try:
                self._opened.append(connect(self.config.warehouse_path, settings=self.config.duckdb_settings))
            except BaseException as exc:  # noqa: BLE001 - handed to `writer`, which raises it
                self._opened.append(exc)

        self._opening = threading.Thread(target=opening, name="wastewatch-open-warehouse", daemon=True)
        self._opening.start()

    def close(self) -> None:
        got = self._background_open()
        if isinstance(got, duckdb.DuckDBPyConnection):
            got.close()
        self._drop()

    def _background_open(self) -> duckdb.DuckDBPyConnection | BaseException | None:
        """What `open_soon`'s thread opened or raised, once it has finished; None when none was started."""
        if self._opening is None:
            return None
        self._opening.join()
        self._opening = None
        return self._opened.pop()

    def _drop(self) -> None:
        if self._con is not None:
            self._con.close()
        self._con, self._writable = None, False


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


STATE_LAYER = "raw/state"


def prepare(con: duckdb.DuckDBPyConnection) -> bool:
    """Bring a writable connection's file to today's schema, comments and stored catalogues (`migrate`,
    `_load_catalogs`), unless the digest the last connect that did so recorded (connect_digest) says that
    nothing they depend on has changed since: then they would find nothing to do and are skipped. Returns
    whether they ran."""
    files = _files_digest()
    state = _connect_state(con)
    if state is not None and state[0] == SCHEMA_VERSION and state[1] == [_state_digest(files, state[2])]:
        return False
    migrate(con)
    _load_catalogs(con)
    state = _connect_state(con)
    assert state is not None  # migrate made schema_version, connect_digest and billing_lines
    with transaction(con):
        con.execute("delete from connect_digest")
        con.execute(
            sql_text(STATE_LAYER, "connect_record"),
            {"digest": _state_digest(files, state[2]), "now": utcnow()},
        )
    return True


def _connect_state(
    con: duckdb.DuckDBPyConnection,
) -> tuple[int | None, list[str] | None, list[str] | None] | None:
    """The file's schema version, its recorded digests and billing_lines' stored columns (`name type`);
    None when the query fails (a new file, an older or newer schema, not a warehouse): then `migrate` runs,
    which creates, upgrades or refuses the file."""
    try:
        row = one(con, sql_text(STATE_LAYER, "connect_check"))
    except duckdb.Error:
        return None
    assert row is not None  # one row of scalar subqueries
    return row[0], row[1], row[2]


def _state_digest(files: str, billing_lines: list[str] | None) -> str:
    """What connect_digest records: the files' digest and billing_lines' stored columns, which a load adds to
    (each then needs its comment and its type from billing_columns)."""
    return hashlib.sha256(f"{files}\n{billing_lines}".encode()).hexdigest()


def _files_digest() -> str:
    """sha256 of everything `migrate` and `_load_catalogs` read besides the file itself: the versions and this
    module's code (`_code_digest`), the `sql/raw/` DDL as `sql_text` gives it and the stored catalogues'
    CSVs, read again on every call (an edit takes effect at the next connect)."""
    h = hashlib.sha256(_code_digest().encode())
    for table in RAW_TABLES:
        h.update(f"\0{table}\0{sql_text('raw', table)}".encode())
    for name in STORED_CATALOGS:
        h.update(f"\0{name}\0".encode() + (CATALOG_DIR / f"{name}.csv").read_bytes())
    return h.hexdigest()


@cache
def _code_digest() -> str:
    """wastewatch's and DuckDB's versions, SCHEMA_VERSION and this module's source (the steps themselves),
    once per process."""
    try:
        version = importlib.metadata.version("wastewatch")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    h = hashlib.sha256(f"{version}|{SCHEMA_VERSION}|{duckdb.__version__}\0".encode())
    h.update(Path(__file__).read_bytes())
    h.update((Path(__file__).parent / "sql_files.py").read_bytes())  # the column notes' parsing
    return h.hexdigest()


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
    """The STORED_CATALOGS, replaced by their CSVs' rows."""
    path = CATALOG_DIR / "gpu_instance_types.csv"
    with transaction(con):
        con.execute("delete from gpu_instance_types")
        con.execute(
            "insert into gpu_instance_types select * from read_csv($p, header = true, auto_detect = false, "
            "columns = {'instance_type': 'varchar', 'provider': 'varchar', 'gpu_model': 'varchar', "
            "'gpu_count': 'integer', 'gpu_memory_gib': 'double'})",
            {"p": str(path)},
        )
        con.execute("delete from gpu_peak_flops")
        con.execute(
            "insert into gpu_peak_flops select gpu_model, list_transform(string_split(aliases, ';'), "
            "lambda a: lower(trim(a))).list_filter(lambda a: a <> ''), vendor, peak_dense_tflops, precision, "
            "memory_gib, source, source_url from read_csv($p, header = true, auto_detect = false, "
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
    migration. Their columns are declared, so each is read with auto_detect = false: DuckDB's sniffer, which
    would find the same, does not run six times a connection."""
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
