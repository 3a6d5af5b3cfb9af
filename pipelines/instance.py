"""The Dagster instance that CLI runs and `make dev` share, so the UI shows every run's history.

Its home is $DAGSTER_HOME when set, else `.dagster/` in the config file's folder (`demo/.dagster/` for the
demo): runs made by cron or the CLI and runs made by the UI's daemon land in the same run and event
storage (SQLite), with their materialisations and asset-check results. `prepare` writes the instance
settings there (one writer in the pool `warehouse`) unless a `dagster.yaml` is already there.

A run killed mid-way (SIGKILL, a lost machine) stays STARTED in the storage and keeps the pool slot its
step claimed, which would block the next run for good. Every run records its process (pid and host tags);
`release_dead_runs`, called before each CLI run and when `make dev` starts, marks the runs left STARTED by
a process that is gone from this host as failed and frees their pool slots.

`WASTEWATCH_RUN_HISTORY=off` runs CLI jobs on an in-memory instance instead: nothing is recorded for the
UI, which saves Dagster's SQLite writes (a connection per write; bench/README.md has the figures). For
cron-only installs and the test suite; the warehouse's own lock still keeps to one writer. With history on,
the instance's SQLite files are written in WAL mode without waiting for the disk at each commit
(`_quick_commits`), and Dagster's storages keep one SQLAlchemy engine per file with its connections, read
Alembic's scripts once per process and remember the schema they found (`_lighter_storages`: a guarded patch
of Dagster's private modules; bench/README.md has the figures).
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import socket
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any

import dagster as dg

from pipelines.config.run_history import HISTORY_ENV, HISTORY_MODES, run_history  # noqa: F401 - re-exported
from pipelines.lock import pid_alive

PID_TAG = "wastewatch/pid"
HOST_TAG = "wastewatch/host"
HOME_DIR = ".dagster"

# one writer at a time in the pool every warehouse-writing asset uses (DuckDB allows one writer)
INSTANCE_YAML = """\
# Dagster instance settings for wastewatch (written by wastewatch; edit freely, it is not overwritten).
# DuckDB allows one read-write process: every asset that writes the warehouse runs in the pool
# "warehouse", and this limit keeps to one writer across all runs (CLI, sensor, schedules, backfills).
concurrency:
  pools:
    default_limit: 1
telemetry:
  enabled: false
"""

_UNFINISHED = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


def dagster_home(config_path: Path) -> Path:
    """$DAGSTER_HOME when set, else `.dagster/` beside the config file (absolute)."""
    env = os.environ.get("DAGSTER_HOME")
    return Path(env).resolve() if env else config_path.resolve().parent / HOME_DIR


def prepare(home: Path) -> Path:
    """Create the instance folder and its dagster.yaml (left alone when one exists); the folder."""
    home.mkdir(parents=True, exist_ok=True)
    settings = home / "dagster.yaml"
    if not settings.exists():
        settings.write_text(INSTANCE_YAML, encoding="utf-8")
    return home


def open_instance(config_path: Path, history: str | None = None) -> dg.DagsterInstance:
    """The shared instance of this config (prepared, runs of dead processes released), or an in-memory one
    when run history (`history`, else $WASTEWATCH_RUN_HISTORY) is off; close it after use."""
    _lighter_storages()  # the in-memory instance's storages are Dagster's SQL storages too
    if (history or run_history()) == "off":
        return dg.DagsterInstance.ephemeral()
    home = prepare(dagster_home(config_path))
    _quick_commits(home)
    instance = dg.DagsterInstance.from_config(str(home))
    release_dead_runs(instance)
    return instance


_HOMES: set[str] = set()  # instance folders whose SQLite files commit without waiting for the disk
_HELD: dict[str, sqlite3.Connection] = {}  # one connection kept open per file (see _quick_commits)
_HELD_LOCK = threading.Lock()


def _quick_commits(home: Path) -> None:
    """Make the instance's SQLite commits cheap: write-ahead log, `synchronous=NORMAL`.

    Dagster opens (and closes) a connection for every write of every event, and each commit of SQLite's
    default rollback journal waits for the disk. In WAL mode with `synchronous=NORMAL` a commit does not;
    a power cut may lose the last events written, never corrupt the file. Closing the last connection of a
    file checkpoints it (and waits for the disk), so one connection per file stays open until the process
    ends. The files stay readable by `make dev`'s webserver and daemon as they are.
    """
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    if not _HOMES:
        event.listen(Engine, "connect", _on_connect)
        atexit.register(_close_held)
    _HOMES.add(str(home.resolve()))


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    if not isinstance(dbapi_connection, sqlite3.Connection):
        return
    row = dbapi_connection.execute("pragma database_list").fetchone()
    path = str(row[2]) if row else ""
    if not path or not any(path.startswith(home + os.sep) for home in _HOMES):
        return
    with _HELD_LOCK:
        if path not in _HELD:
            try:
                dbapi_connection.execute("pragma journal_mode=wal")
            except sqlite3.OperationalError:  # another process has the file open: stays as it is
                pass
            held = sqlite3.connect(path, check_same_thread=False)
            held.execute("select count(*) from sqlite_master").fetchall()  # a reader holds the log open
            _HELD[path] = held
    dbapi_connection.execute("pragma synchronous=normal")


def _close_held() -> None:
    with _KEPT_LOCK:  # the kept engines' connections first: the held one is each file's last
        for (_, _, pid), engine in _ENGINES.items():
            if pid == os.getpid():
                engine.pool.close()
    with _HELD_LOCK:
        for con in _HELD.values():
            con.close()
        _HELD.clear()


# Where Dagster's SQLite storages take their engines from (each module's own `create_engine`), and the
# Alembic scripts they all check and stamp against: Dagster's private modules, patched by
# `_lighter_storages` only while these names are as expected (tests/dagster/test_small_history.py pins them)
_STORAGE_MODULES = (
    "dagster._core.storage.event_log.sqlite.sqlite_event_log",
    "dagster._core.storage.event_log.sqlite.consolidated_sqlite_event_log",
    "dagster._core.storage.runs.sqlite.sqlite_run_storage",
    "dagster._core.storage.schedules.sqlite.sqlite_schedule_storage",
)
_DAGSTER_SCRIPTS = "dagster:_core/storage/alembic"
_ENGINES: dict[tuple[str, str, int], Any] = {}  # one SQLAlchemy engine per SQLite file of an instance folder
_SCRIPTS: dict[str, Any] = {}  # Dagster's Alembic scripts, read once per process
_LIGHTER: list[str] = []  # what `_lighter_storages` patched in this process
_KEPT_LOCK = threading.Lock()


def _lighter_storages() -> list[str]:
    """Let Dagster's storages reuse, for the process's life, what they otherwise build anew for each
    statement: the SQLAlchemy engine and connections of a SQLite file (so SQLAlchemy compiles each
    statement once, not once per connection, and SQLite opens the file once), Alembic's reading of
    Dagster's 90 migration scripts (read for every check or stamp of a file: the runs, the schedules, the
    event index and each run's own event file; the in-memory instance's storages too), and the event log
    storages' schema probes (`_remembered_schema`). What it patched this time: module names, "alembic"
    and `Class.method` names.

    A patch of Dagster's private modules (there is no setting for any of these), so it is guarded: it
    applies only while each module still takes `create_engine` from SQLAlchemy, Dagster still names its
    scripts as above and each probe is a method of its class, and leaves Dagster as it is otherwise.
    Only the engines of files under an instance folder of this process (`_HOMES`) are kept, their
    connections in a pool that Dagster's dispose after each use leaves open (`_kept_pool`); WAL mode lets
    other processes read and write the files meanwhile.
    tests/dagster/test_small_history.py pins it.
    """
    import importlib

    import sqlalchemy

    _plain_mako_errors()
    from alembic.script import ScriptDirectory

    patched: list[str] = []
    try:
        sql = importlib.import_module("dagster._core.storage.sql")
        modules = [importlib.import_module(name) for name in _STORAGE_MODULES]
    except ImportError:  # Dagster moved its storages: nothing is patched
        return patched
    for module in modules:
        if getattr(module, "create_engine", None) is sqlalchemy.create_engine:
            module.create_engine = _kept_engine  # type: ignore[attr-defined]
            patched.append(module.__name__)
    read = ScriptDirectory.__dict__.get("from_config")
    if (
        getattr(sql, "ALEMBIC_SCRIPTS_LOCATION", None) == _DAGSTER_SCRIPTS
        and isinstance(read, classmethod)
        and not hasattr(read.__func__, "wastewatch")
    ):
        from_config = read.__func__

        def kept_scripts(cls: type, config: Any) -> Any:
            location = config.get_alembic_option("script_location")
            if location != _DAGSTER_SCRIPTS or cls is not ScriptDirectory:
                return from_config(cls, config)
            with _KEPT_LOCK:
                if location not in _SCRIPTS:
                    _SCRIPTS[location] = from_config(cls, config)
                return _SCRIPTS[location]

        kept_scripts.wastewatch = True  # type: ignore[attr-defined]
        ScriptDirectory.from_config = classmethod(kept_scripts)  # type: ignore[method-assign,assignment]
        patched.append("alembic")
    patched += _remembered_schema()
    _LIGHTER.extend(patched)
    return patched


_PYGMENTS_PLUGIN = "mako.ext.pygmentplugin"


def _plain_mako_errors() -> None:
    """Import Mako's error pages (Alembic imports them, and Dagster's storages Alembic) without their Pygments
    syntax highlighting: Mako takes the plain one when the plugin cannot be imported. Only Mako's HTML
    error page of a failing template would differ; nothing here renders templates (Alembic does when it
    writes a new migration script). Left alone once Mako's errors (or the plugin) are imported."""
    if "mako.exceptions" in sys.modules or _PYGMENTS_PLUGIN in sys.modules:
        return
    sys.modules[_PYGMENTS_PLUGIN] = None  # type: ignore[assignment]  # importing it raises ImportError
    try:
        import mako.exceptions  # noqa: F401
    except ImportError:  # pragma: no cover - Alembic requires Mako; importing Alembic says what is missing
        pass
    finally:
        if _PYGMENTS_PLUGIN in sys.modules and sys.modules[_PYGMENTS_PLUGIN] is None:
            del sys.modules[_PYGMENTS_PLUGIN]  # the plugin imports as usual from now on


# The schema probes of Dagster's SQL event log storages, by class: each asks SQLite (a query, or SQLAlchemy's
# reflection of a table) every time it is called, about 300 times in an ingest of the sample
_PROBES = {
    "dagster._core.storage.event_log.sql_event_log.SqlEventLogStorage": (
        "has_secondary_index",
        "has_asset_key_col",
        "_has_asset_key_col_on_connection",
        "has_table",
    ),
    "dagster._core.storage.event_log.sqlite.sqlite_event_log.SqliteEventLogStorage": ("has_table",),
    "dagster._core.storage.event_log.in_memory.InMemoryEventLogStorage": ("has_table",),
}


def _remembered_schema() -> list[str]:
    """Let each event log storage remember the tables, columns and secondary indexes it found: Dagster's
    migrations only ever add them, so a probe that found one is not asked again (one that did not is)."""
    import importlib

    patched = []
    for path, names in _PROBES.items():
        module_name, class_name = path.rsplit(".", 1)
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            continue
        for name in names:
            probe = cls.__dict__.get(name)
            if not callable(probe) or hasattr(probe, "wastewatch"):
                continue
            setattr(cls, name, _remembering(probe))
            patched.append(f"{class_name}.{name}")
    return patched


def _remembering(probe: Any) -> Any:
    def remembered(self: Any, *args: Any, **kwargs: Any) -> Any:
        memo = getattr(self, "__dict__", None)
        if kwargs or not args or not isinstance(args[-1], str) or memo is None:  # not a call it knows
            return probe(self, *args, **kwargs)
        key = (probe.__name__, args[-1])  # the table, column or index (not the connection)
        found = memo.setdefault("_wastewatch_found", set())
        if key in found:
            return True
        answer = probe(self, *args)
        if answer is True:
            found.add(key)
        return answer

    remembered.wastewatch = True  # type: ignore[attr-defined]
    remembered.__name__ = probe.__name__
    return remembered


def _kept_engine(url: Any, **kwargs: Any) -> Any:
    """`sqlalchemy.create_engine` for Dagster's SQLite storages: one engine per file of an instance folder
    of this process, kept; any other engine made as asked."""
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    text = str(url)
    path = text.removeprefix("sqlite:///")
    if (
        path == text
        or kwargs.get("poolclass") is not NullPool
        or not any(path.startswith(home + os.sep) for home in _HOMES)
    ):
        return sqlalchemy.create_engine(url, **kwargs)
    key = (text, repr(sorted(kwargs.items())), os.getpid())  # a forked child never uses its parent's
    with _KEPT_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _ENGINES[key] = sqlalchemy.create_engine(url, **{**kwargs, "poolclass": _kept_pool()})
        return engine


_KEPT_POOL: list[type] = []


def _kept_pool() -> type:
    """SQLAlchemy's pool for SQLite files (QueuePool), but keeping its connections when Dagster disposes the
    engine after each use: they are closed when the process ends (`_close_held`)."""
    from sqlalchemy.pool import QueuePool

    if not _KEPT_POOL:

        class KeptPool(QueuePool):
            def recreate(self) -> KeptPool:
                return self

            def dispose(self) -> None:
                pass

            def close(self) -> None:
                QueuePool.dispose(self)

        _KEPT_POOL.append(KeptPool)
    return _KEPT_POOL[0]


def run_tags() -> dict[str, str]:
    """The tags that name the process running a run: this one, or the run worker that started this step
    process (Dagster's multiprocess executor starts one per step; the run lives as long as its worker)."""
    parent = multiprocessing.parent_process()
    pid = parent.pid if parent is not None and parent.pid else os.getpid()
    return {PID_TAG: str(pid), HOST_TAG: socket.gethostname()}


def release_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark runs left unfinished by a process gone from this host as failed and free their pool slots.

    Runs on other hosts, and runs that never recorded their process, are left alone. Returns the run ids.
    """
    host = socket.gethostname()
    released = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=_UNFINISHED)):
        pid = run.tags.get(PID_TAG, "")
        if run.tags.get(HOST_TAG) != host or not pid.isdigit() or pid_alive(int(pid)):
            continue
        instance.report_run_failed(
            run,
            f"the process that ran it (pid {pid} on {host}) is gone; marked failed by wastewatch "
            "so that its pool slot is freed",
        )
        released.append(run.run_id)
    storage = instance.event_log_storage
    if storage.supports_global_concurrency_limits:
        # slots of the runs just released, and of any run that ended without freeing its slots
        holders = set(storage.get_concurrency_run_ids())
        ended = (
            {
                r.run_id
                for r in instance.get_runs(filters=dg.RunsFilter(run_ids=sorted(holders)))
                if r.status not in _UNFINISHED and r.status != dg.DagsterRunStatus.QUEUED
            }
            if holders
            else set()
        )
        for run_id in sorted(holders & (set(released) | ended)):
            storage.free_concurrency_slots_for_run(run_id)
    return released
