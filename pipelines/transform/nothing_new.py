"""A nightly ingest with nothing new, recognised before Dagster starts.

A full `nightly_ingest` run records what it built every mart from (`ingest_state`): a digest of the config,
of wastewatch's code and SQL, and of the ledger. The next `wastewatch ingest` first checks, reading the
warehouse only, that the three digests still match, that every source lists exactly the files the ledger
holds (pipelines/ingest/pending.py), that the retention has no day to drop and that the published copy
exists. Then a run would load nothing and keep every mart (pipelines/transform/fingerprints.py), so it is not
started: the marts and the published copy are already what it would leave. Anything else runs in full.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path

import duckdb

import pipelines
from pipelines.config import Config
from pipelines.ingest.pending import SourceCheck, check_sources
from pipelines.redact import redact
from pipelines.transform.retention import LAYER as RETENTION_LAYER
from pipelines.transform.retention import retention_cutoff
from pipelines.warehouse import (
    SCHEMA_VERSION,
    connect,
    current_version,
    one,
    sql_root,
    sql_text,
    table_exists,
    utcnow,
)

JOB = "nightly_ingest"
LAYER = "raw/state"


@dataclass
class Check:
    """What the check found: `recorded_at` of the run whose state still holds, or why a run is needed."""

    recorded_at: datetime | None = None
    why: str | None = None
    sources: list[SourceCheck] = field(default_factory=list)

    @property
    def nothing_new(self) -> bool:
        return self.recorded_at is not None and self.why is None


def config_digest(config: Config) -> str:
    """Every setting of the loaded config (relative paths resolve against its folder, so that counts too),
    credentials masked first: the digest lands in the published copy, and a credential shapes no mart."""
    folder = str(config.path.resolve().parent) if config.path else ""
    return hashlib.sha256(redact(f"{folder}\n{config.model_dump_json()}").encode()).hexdigest()


@cache
def code_digest() -> str:
    """wastewatch's version, code, SQL and catalogues, its schema version and DuckDB's version."""
    h = hashlib.sha256(f"{_version()}|{SCHEMA_VERSION}|{duckdb.__version__}".encode())
    for root in dict.fromkeys((Path(pipelines.__file__).resolve().parent, sql_root().resolve())):
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _version() -> str:
    try:
        return importlib.metadata.version("wastewatch")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def ledger_digest(con: duckdb.DuckDBPyConnection) -> str:
    parts = one(con, sql_text(LAYER, "ledger_parts"))
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def record_state(con: duckdb.DuckDBPyConnection, config: Config) -> None:
    """Record what this full run built the marts from (after the marts and the retention, before publishing)."""
    con.execute(
        sql_text(LAYER, "record"),
        {
            "job": JOB,
            "now": utcnow(),
            "config": config_digest(config),
            "code": code_digest(),
            "ledger": ledger_digest(con),
        },
    )


def forget_state(con: duckdb.DuckDBPyConnection) -> None:
    """A run that did not build every mart leaves no state: the next ingest runs in full."""
    con.execute("delete from ingest_state where job = $job", {"job": JOB})


def check(config: Config, con: duckdb.DuckDBPyConnection | None = None) -> Check:
    """Whether an ingest now would change nothing, reading the warehouse (through `con` when given, a
    connection the caller keeps) and listing the sources only."""
    if not config.warehouse_path.exists():
        return Check(why="no warehouse yet")
    if not config.published_path.exists():
        return Check(why=f"no published copy at {config.published_path}")
    if con is not None:
        return _check(con, config)
    own = connect(config.warehouse_path, read_only=True, settings=config.duckdb_settings)
    try:
        return _check(own, config)
    finally:
        own.close()


def _check(con: duckdb.DuckDBPyConnection, config: Config) -> Check:
    if current_version(con) != SCHEMA_VERSION or not table_exists(con, "ingest_state"):
        return Check(why="the warehouse's schema is upgraded by the run")
    state = one(con, sql_text(LAYER, "recorded"), {"job": JOB})
    if state is None:
        return Check(why="no full run recorded since the last change")
    recorded_at, config_was, code_was, ledger_was = state
    for what, was, now in (
        ("the config", config_was, config_digest(config)),
        ("wastewatch's code", code_was, code_digest()),
        ("the ledger", ledger_was, ledger_digest(con)),
    ):
        if was != now:
            return Check(why=f"{what} changed since the last full run")
    before = retention_cutoff(config, utcnow().date())
    if before is not None and table_exists(con, "int_incremental_days"):
        counted = one(con, sql_text(RETENTION_LAYER, "prunable"), {"before": before})
        if counted and counted[1]:
            return Check(why=f"the retention drops {counted[0]} day(s) of samples")
    sources = check_sources(con, config)
    pending = next((s.pending for s in sources if s.pending), None)
    return Check(recorded_at=recorded_at, why=pending, sources=sources)
