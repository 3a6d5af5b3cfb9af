"""Build the intermediate objects and the marts from the landed tables (one transaction per mart).

How each object is kept up to date is its line in pipelines/marts/registry.py: rebuilt in full when what it
reads changed (here), or only its changed days (days.py: the GPU roll-up and hourly GPU marts), billing
months (months.py: the hourly cost) or bill files (files.py: the bill's line marts); `engine: spark` builds the
marts its settings name on Spark (spark/). What each build read is fingerprinted (fingerprints.py), so a
mart whose inputs did not change is kept as it is.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import duckdb

from pipelines import progress
from pipelines.config import Config
from pipelines.failpoints import failpoint
from pipelines.marts.registry import DAY_MARTS, INTERMEDIATE, MARTS, ROLLUPS, mart
from pipelines.transform import files, months, partials
from pipelines.transform.days import (
    DayStats,
    Prebuilt,
    ensure_day_table,
    pending_rollups,
    refresh_day_mart,
    refresh_rollups,
)
from pipelines.transform.fingerprints import (
    MART_INPUTS,
    STATE,
    Layers,
    Memo,
    inputs_fingerprint,
    store_inputs,
)
from pipelines.transform.fingerprints import SQL as INCREMENTAL
from pipelines.transform.pricing import write_pricing
from pipelines.transform.showback import write_showback
from pipelines.transform.spares import write_spares
from pipelines.warehouse import (
    CATALOG_DIR,
    SCHEMA_VERSION,
    apply_comments,
    header,
    one,
    sql_notes,
    sql_root,
    sql_text,
    transaction,
    utcnow,
)

# the digest of the SQL the intermediate objects were created from (`build_intermediate`)
LAYER = "int_layer_digest"


def build_intermediate(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)create the intermediate views; make sure the roll-up tables exist with the current columns and
    the bill's per-file partial aggregates are up to date (partials.py).

    Each object gets the COMMENTs its SQL file's header documents (a replaced view loses them). Every mart
    calls this first; when the objects were created from the same SQL (`int_layer_digest`) and all exist,
    it leaves them be, so a run pays for it once.
    """
    for table in (STATE, files.FILES, LAYER, MART_INPUTS):
        con.execute(sql_text(INCREMENTAL, table))
    partials.refresh(con)  # the bill's per-file aggregates, before the views over them are created and read
    digest = _intermediate_digest()
    key = {"layer": "intermediate", "digest": digest, "names": list(INTERMEDIATE)}
    current = one(con, sql_text(INCREMENTAL, "layer_current"), key)
    if current and current[0]:
        return
    for name in INTERMEDIATE:
        if name in ROLLUPS:
            ensure_day_table(con, "intermediate", name)
        else:
            # name comes from our own constant list; the body is our own SQL file
            con.execute(f"create or replace view {name} as\n{sql_text('intermediate', name)}")
    notes = {name: sql_notes("intermediate", name) for name in INTERMEDIATE}
    notes.update({t: sql_notes(INCREMENTAL, t) for t in (STATE, files.FILES, LAYER, MART_INPUTS)})
    apply_comments(con, notes)
    con.execute(
        f"insert or replace into {LAYER} values ($layer, $digest, $now)",  # noqa: S608 - our constant
        {"layer": "intermediate", "digest": digest, "now": utcnow()},
    )


@cache
def _intermediate_digest() -> str:
    """sha256 of the schema version and every SQL file the intermediate objects are created from."""
    h = hashlib.sha256(f"schema {SCHEMA_VERSION}\n".encode())
    for layer, name in [(INCREMENTAL, STATE), (INCREMENTAL, files.FILES)] + [
        ("intermediate", n) for n in INTERMEDIATE
    ]:
        h.update(f"{layer}/{name}\n{sql_text(layer, name)}\n".encode())
    return h.hexdigest()


def _dependencies(layer: str, name: str) -> list[str]:
    names = re.split(r"[,\s]+", header(sql_text(layer, name)).get("depends_on", ""))
    return [n for n in names if n]


@cache
def _reads(name: str) -> frozenset[str]:
    """What mart `name` reads by its `-- depends_on:`, each intermediate view replaced by what it reads (the
    roll-up tables kept as they are)."""
    out: set[str] = set()
    todo, seen = list(_dependencies("marts", name)), set()
    while todo:
        dep = todo.pop()
        if dep in seen:
            continue
        seen.add(dep)
        if dep in INTERMEDIATE and dep not in ROLLUPS:
            todo.extend(_dependencies("intermediate", dep))
        elif dep != name:
            out.add(dep)
    return frozenset(out)


def marts_read(name: str) -> frozenset[str]:
    """The marts mart `name` reads, directly or through intermediate views."""
    return frozenset(d for d in _reads(name) if d in MARTS)


@cache
def needs_rollup(name: str) -> bool:
    """Whether mart `name` reads a roll-up table (directly, through intermediate views or other marts)."""
    return any(d in ROLLUPS for d in _reads(name)) or any(needs_rollup(m) for m in marts_read(name))


def build_mart(con: duckdb.DuckDBPyConnection, name: str, config: Config | None = None) -> int:
    """(Re)build one mart table in a transaction (GPU tables: only their changed days); its row count.

    With `config`, its `pricing:` section is written to the warehouse first (`write_pricing`).
    """
    return build_mart_with_rollup(con, name, config)[0]


@dataclass
class MartRun:
    """A run that builds several marts on one connection (`prepare_marts`, each mart with `prepared=`, then
    `finish_marts`): what it works out once. The raw layer's fingerprints (`memo`) and the roll-up hold for
    the whole run, as no mart's build writes the landed tables; the marts' COMMENTs are written together at
    the end."""

    memo: Memo = field(default_factory=Memo)
    rolled_up: bool = False


def prepare_marts(con: duckdb.DuckDBPyConnection, config: Config | None = None) -> MartRun:
    """What every mart's build starts with, done once for a run that builds several (then each is built with
    `prepared=` the run returned): the config's `pricing:` and `spares:` written to the warehouse, the
    intermediate layer created."""
    with transaction(con):
        if config is not None:
            write_pricing(con, config)
            write_showback(con, config)
            write_spares(con, config)
        build_intermediate(con)
    return MartRun()


def finish_marts(con: duckdb.DuckDBPyConnection) -> None:
    """What a run that builds several marts ends with: every mart's COMMENTs as its SQL file's header says
    (only those that differ are written, so a run that stopped before this is made good by the next)."""
    with transaction(con):
        apply_comments(con, {name: sql_notes("marts", name) for name in MARTS})


def build_mart_with_rollup(
    con: duckdb.DuckDBPyConnection, name: str, config: Config | None = None, prepared: MartRun | None = None
) -> tuple[int, list[DayStats]]:
    """`build_mart`, also returning what the day-incremental refreshes did (empty for full rebuilds).

    `prepared`: the run `prepare_marts` started on this connection (pricing and intermediate layer not
    redone, the run's fingerprints and roll-up reused, the COMMENTs left to `finish_marts`)."""
    rebuild = mart(name).rebuild
    if name not in MARTS:
        raise KeyError(f"unknown mart {name!r}")
    started = time.monotonic()
    stats: list[DayStats] = []
    # `engine: spark` builds the marts its settings name (pipelines/transform/spark/); the others stay here
    on_spark = (
        config is not None
        and config.engine == "spark"
        and config.spark is not None
        and name in config.spark.marts
    )
    if on_spark:
        assert config is not None
        # imported only here: the default install has no pyspark, and nothing else needs the engine
        from pipelines.transform.spark import marts as spark_marts

        built = spark_marts.build(con, name, config)  # before the transaction: Spark takes the time
    memo = prepared.memo if prepared is not None else None
    rolled_up = prepared is not None and prepared.rolled_up
    try:
        rolled = None if rolled_up else _rollup_on_spark(con, name, config)
    except BaseException:
        if on_spark:
            spark_marts.discard(name, built)
        raise
    kept = False
    built_rows: int | None = None  # a mart built in full: the rows its `create table ... as` wrote
    try:
        with transaction(con):
            if config is not None and prepared is None:
                write_pricing(con, config)
                write_showback(con, config)
                write_spares(con, config)
            if prepared is None:
                build_intermediate(con)
            if needs_rollup(name):
                # what the run's roll-up left to do after its first: nothing
                stats.append(DayStats(ROLLUPS[0]) if rolled_up else refresh_rollups(con, prebuilt=rolled))
            if on_spark:
                spark_marts.attach(con, name, built)
                store_inputs(con, name, None)  # built anew each time: what reads it is built again too
            elif rebuild == "day":
                stats.append(refresh_day_mart(con, name))
            elif rebuild == "month":
                by_month = months.refresh(con, _mart_digest(name), _layers(), memo=memo)
                kept = by_month.kept
                rebuilt, removed = by_month.months_rebuilt, by_month.months_removed
                stats.append(DayStats(name, rebuilt, removed, full=by_month.full, unit="month"))
            elif rebuild == "file":
                by_file = files.refresh(con, name, _mart_digest(name), memo=memo)
                kept = by_file.kept
                stats.append(
                    DayStats(
                        name, by_file.files_rebuilt, by_file.files_removed, full=by_file.full, unit="file"
                    )
                )
            else:
                kept, built_rows = _build_full(con, name, memo)
            if not kept and prepared is None:
                apply_comments(
                    con, {name: sql_notes("marts", name)}
                )  # a replaced table starts without comments
            failpoint("transform.mart.before_commit")
    except BaseException:
        if on_spark:
            spark_marts.discard(name, built)  # the warehouse still reads the previous build
        raise
    finally:
        if rolled is not None:
            from pipelines.transform.spark import gpu_rollup

            gpu_rollup.discard(rolled)  # its rows are in int_gpu_slices now, or not wanted
    if prepared is not None and needs_rollup(name):
        prepared.rolled_up = True
    failpoint("transform.mart.committed")
    if on_spark:
        spark_marts.cleanup(name, built)
    if built_rows is None:
        row = one(con, f"select count(*) from {name}")  # noqa: S608 - identifiers only, values are bound
        n = int(row[0]) if row else 0
    else:
        n = built_rows
    how = "kept (its inputs did not change)" if kept else "in"
    progress.done(f"  mart {name}: {n:,} rows {how} {progress.seconds(started)}")
    return n, stats


def _rollup_on_spark(con: duckdb.DuckDBPyConnection, name: str, config: Config | None) -> Prebuilt | None:
    """With the roll-up on Spark (`int_gpu_slices` in spark.marts), roll up on Spark the days the mart's
    refresh would roll up, before its transaction; None when the mart needs no roll-up or no day changed."""
    if not (
        needs_rollup(name)
        and config is not None
        and config.engine == "spark"
        and config.spark is not None
        and "int_gpu_slices" in config.spark.marts
    ):
        return None
    with transaction(con):
        build_intermediate(con)  # the views the days' fingerprints read
    days = pending_rollups(con)
    if not days:
        return None
    from pipelines.transform.spark import gpu_rollup  # imported only here, as the marts' engine is

    return gpu_rollup.build(con, config, days)


def _build_full(
    con: duckdb.DuckDBPyConnection, name: str, memo: Memo | None = None
) -> tuple[bool, int | None]:
    """Build a mart in full unless it exists and its inputs fingerprint as when it was last built (`memo`:
    the run's fingerprints of the raw layer).

    Returns whether the table was kept as it was, and the rows written when it was built (None if kept).
    """
    fingerprint = inputs_fingerprint(con, name, _layers(), _mart_digest(name), memo=memo)
    state = one(con, sql_text(INCREMENTAL, "mart_state"), {"mart": name})
    assert state is not None  # one row, always
    stored, exists, is_view = state
    if fingerprint is not None and stored is not None and int(stored) == fingerprint and exists:
        return True, None
    if is_view:  # the mart was a view over Spark's Parquet (engine: spark before)
        con.execute(f"drop view {name}")
    (written,) = con.execute(f"create or replace table {name} as\n{sql_text('marts', name)}").fetchone() or (
        0,
    )
    store_inputs(con, name, fingerprint)
    return False, int(written)


@cache
def _layers() -> Layers:
    return Layers(
        marts=frozenset(m for m in MARTS if m not in DAY_MARTS),
        day_tables=frozenset(ROLLUPS + DAY_MARTS),
        views=frozenset(n for n in INTERMEDIATE if n not in ROLLUPS),
    )


@cache
def _mart_digest(name: str) -> str:
    """sha256 of the intermediate layer's digest, the SQL macros, the built-in catalogues (some are
    temporary tables of each connection, which no table fingerprint covers) and the mart's own SQL."""
    h = hashlib.sha256(f"{_intermediate_digest()}\n".encode())
    for path in sorted((sql_root() / "macros").glob("*.sql")) + sorted(CATALOG_DIR.glob("*.csv")):
        h.update(f"{path.name}\n{path.read_text(encoding='utf-8')}\n".encode())
    h.update(f"marts/{name}\n{sql_text('marts', name)}\n".encode())
    return h.hexdigest()


@cache
def build_order() -> tuple[str, ...]:
    """Every mart after the marts it reads (the registry's order otherwise), so the registry's order of its
    lines does not matter."""
    done: list[str] = []
    todo = list(MARTS)
    while todo:
        name = next(n for n in todo if marts_read(n) <= set(done))
        todo.remove(name)
        done.append(name)
    return tuple(done)


def build_marts(
    con: duckdb.DuckDBPyConnection, config: Config | None = None, names: Sequence[str] | None = None
) -> dict[str, int]:
    """Build every mart (or `names`, in that order), each after the marts it reads, as the nightly job's marts
    step does: the pricing and the intermediate layer written once (`prepare_marts`), the COMMENTs at the end
    (`finish_marts`); rows per mart."""
    run = prepare_marts(con, config)
    order = build_order() if names is None else tuple(names)
    built = {name: build_mart_with_rollup(con, name, config, prepared=run)[0] for name in order}
    finish_marts(con)
    return built
