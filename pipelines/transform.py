"""Build the intermediate views and the marts from the landed tables (one transaction per mart).

Most marts are rebuilt in full from views over the landed tables (kept when nothing they read changed;
`cost_hourly` is kept by month, pipelines/cost_months.py, the bill's line marts by file,
pipelines/file_marts.py). The GPU telemetry is the exception:
rolling millions of samples up on every run would not scale, so the GPU tables are kept up to date by
day. `int_gpu_slices` (GPU x hour x job slice, the roll-up of gpu_samples) is rolled up again only for
the sample days whose fingerprint changed: the ingest ledger's files behind the day's samples (ids,
checksums, load times, row counts) and the job starts/ends that cut the day into slices. The marts
`gpu_job_hours` and `gpu_hours` on top of it are rebuilt only for the days whose roll-up changed or
whose other inputs did: the jobs running that day (ids, states), the billed cost of the GPU instances'
hours, and the host -> billed resource mapping of the day's hosts. Days whose samples are gone are
dropped. The fingerprints of what each table was built from live in `int_incremental_days`.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cache
from typing import Any, Protocol

import duckdb

from pipelines import cost_months, file_marts, progress
from pipelines.config import Config
from pipelines.failpoints import failpoint
from pipelines.fingerprints import (
    MART_INPUTS,
    STATE,
    Layers,
    Memo,
    combine,
    inputs_fingerprint,
    store_inputs,
    store_parts,
    stored_days,
    stored_inputs,
)
from pipelines.warehouse import (
    CATALOG_DIR,
    SCHEMA_VERSION,
    apply_comments,
    columns,
    drop_view,
    header,
    one,
    rows,
    sql_notes,
    sql_root,
    sql_text,
    table_exists,
    transaction,
    utcnow,
)

INTERMEDIATE = (
    "int_billing_extras",
    "int_billed_resources",
    "int_jobs",
    "int_job_hosts",
    "int_job_boundaries",
    "int_gpu_slices",
    "int_host_pricing",
    "int_host_resources",
    "int_modelled_hours",
    "int_train_intervals",
    "int_cost_modelled",
)
# intermediate objects that are incremental tables (refreshed by day), not views
ROLLUPS = ("int_gpu_slices",)
# marts built from other marts only: the GPU logic the GPU rules share (billed hours, job spans)
SHARED_GPU_MARTS = ("gpu_billed_hours", "gpu_job_spans", "gpu_claims")
MARTS = ("resources", "cost_hourly", "gpu_job_hours", "gpu_hours", "jobs_enriched") + SHARED_GPU_MARTS + (
    "storage_objects_current", "storage_prefix_days", "storage_prices", "storage_checkpoints", "storage_datasets",
    "storage_dataset_matches", "storage_incomplete_uploads", "job_mfu", "job_mfu_hourly", "commitment_lines",
    "transfer_lines", "log_storage_lines", "log_groups_current", "gpu_purchase_hours",
)  # fmt: skip
# marts kept up to date by day (their SQL takes $day_from / $day_to), not rebuilt in full
DAY_MARTS = ("gpu_job_hours", "gpu_hours")

# `sql/intermediate/incremental/`: the table of fingerprints (STATE) and the queries that fingerprint
# each day's inputs, one row per day (day, fingerprint). A fingerprint is bit_xor over the day's rows of a
# hash of each row's values as one string: DuckDB's multi-argument hash() combines its arguments
# linearly, so identical values in an even number of rows would cancel out of the xor (a bill restated
# from 20 to 30 an hour for 24 hours would go unseen).
INCREMENTAL = "intermediate/incremental"
# the digest of the SQL the intermediate objects were created from (`build_intermediate`)
LAYER = "int_layer_digest"


@dataclass
class DayStats:
    """What one refresh of a day-incremental table did: days built again, days removed, rows written
    (cost_hourly, kept by month: `unit` month, each month named by its first day; the bill's line marts,
    kept by file: `unit` file, each named by its ingest_files.file_id)."""

    table: str
    days_rebuilt: list[Any] = field(default_factory=list)
    days_removed: list[Any] = field(default_factory=list)
    rows: int = 0
    full: bool = False
    unit: str = "day"

    @property
    def days_rolled_up(self) -> list[date]:
        return self.days_rebuilt


RollupStats = DayStats  # the name the roll-up's callers know


class Prebuilt(Protocol):
    """Days of a day table built elsewhere (Spark's roll-up): the fingerprint of each day's inputs they were
    built from, and their Parquet (read by sql/spark/warehouse/<table>.sql)."""

    days: dict[date, int]

    @property
    def parquet(self) -> str: ...


def build_intermediate(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)create the intermediate views; make sure the roll-up tables exist with the current columns.

    Each object gets the COMMENTs its SQL file's header documents (a replaced view loses them). Every mart
    calls this first; when the objects were created from the same SQL (`int_layer_digest`) and all exist,
    it leaves them be, so a run pays for it once.
    """
    for table in (STATE, file_marts.FILES, LAYER, MART_INPUTS):
        con.execute(sql_text(INCREMENTAL, table))
    digest = _intermediate_digest()
    key = {"layer": "intermediate", "digest": digest, "names": list(INTERMEDIATE)}
    current = one(con, sql_text(INCREMENTAL, "layer_current"), key)
    if current and current[0]:
        return
    for name in INTERMEDIATE:
        if name in ROLLUPS:
            _ensure_day_table(con, "intermediate", name)
        else:
            # name comes from our own constant list; the body is our own SQL file
            con.execute(f"create or replace view {name} as\n{sql_text('intermediate', name)}")
    notes = {name: sql_notes("intermediate", name) for name in INTERMEDIATE}
    notes.update({t: sql_notes(INCREMENTAL, t) for t in (STATE, file_marts.FILES, LAYER, MART_INPUTS)})
    apply_comments(con, notes)
    con.execute(
        f"insert or replace into {LAYER} values ($layer, $digest, $now)",  # noqa: S608 - our constant
        {"layer": "intermediate", "digest": digest, "now": utcnow()},
    )


@cache
def _intermediate_digest() -> str:
    """sha256 of the schema version and every SQL file the intermediate objects are created from."""
    h = hashlib.sha256(f"schema {SCHEMA_VERSION}\n".encode())
    for layer, name in [(INCREMENTAL, STATE), (INCREMENTAL, file_marts.FILES)] + [
        ("intermediate", n) for n in INTERMEDIATE
    ]:
        h.update(f"{layer}/{name}\n{sql_text(layer, name)}\n".encode())
    return h.hexdigest()


def _ensure_day_table(con: duckdb.DuckDBPyConnection, layer: str, name: str) -> None:
    """Create the table (empty) from its SQL unless it exists with the same columns; a new shape restarts."""
    sql = sql_text(layer, name)
    empty = {"day_from": date(9999, 12, 31), "day_to": date(1, 1, 1)}
    exists = table_exists(con, name)
    if exists:  # a missing table is created below without probing the query's columns first
        con.execute(f"create or replace temp table _day_probe as\n{sql}\nlimit 0", empty)
        wanted = columns(con, "_day_probe")
        con.execute("drop table _day_probe")
        if columns(con, name) == wanted:
            return
    # the roll-up of days whose raw samples the retention dropped cannot be made again: carry it over
    frozen = (
        [r["day"] for r in rows(con, sql_text("intermediate/retention", "pruned_days"))]
        if exists and name in ROLLUPS
        else []
    )
    if frozen:
        con.execute(f"alter table {name} rename to _day_table_old")
    con.execute(f"drop table if exists {name}")
    con.execute(f"create table {name} as\n{sql}\nlimit 0", empty)
    # identifiers from our own constants; the days are bound
    con.execute(
        f"delete from {STATE} where object = $o and not list_contains($keep, day)",  # noqa: S608
        {"o": name, "keep": frozen},
    )
    if frozen:
        kept = [c for c, _ in columns(con, "_day_table_old") if c in {c for c, _ in wanted}]
        names = ", ".join(f'"{c}"' for c in kept)
        con.execute(
            f"insert into {name} ({names}) select {names} from _day_table_old "  # noqa: S608
            "where list_contains($days, hour::date)",
            {"days": frozen},
        )
        con.execute("drop table _day_table_old")


def _fingerprints(con: duckdb.DuckDBPyConnection, name: str) -> dict[date, int]:
    """Each day's fingerprint from the query `sql/intermediate/incremental/<name>.sql`."""
    return {r["day"]: r["fingerprint"] for r in rows(con, sql_text(INCREMENTAL, name))}


def _ranges(days: list[date], longest: int) -> list[tuple[date, date]]:
    """Consecutive days grouped into ranges of at most `longest` days."""
    out: list[tuple[date, date]] = []
    for d in sorted(days):
        if out and d == out[-1][1] + timedelta(days=1) and (d - out[-1][0]).days < longest:
            out[-1] = (out[-1][0], d)
        else:
            out.append((d, d))
    return out


def _refresh_days(
    con: duckdb.DuckDBPyConnection,
    layer: str,
    name: str,
    current: dict[date, int],
    full: bool,
    days_per_statement: int,
    frozen: set[date] | None = None,
    prebuilt: Prebuilt | None = None,
) -> DayStats:
    """Delete and rebuild the days of `name` whose fingerprint changed; drop the days no longer current,
    except the `frozen` ones (kept as they are). Days `prebuilt` holds for the same inputs are copied from
    its Parquet; the others are built here."""
    stats = DayStats(name, full=full)
    stored = stored_days(con, name)
    stats.days_rebuilt = sorted(d for d, fp in current.items() if full or stored.get(d) != fp)
    stats.days_removed = sorted(d for d in stored if d not in current and d not in (frozen or set()))
    redo = stats.days_rebuilt + stats.days_removed
    if not redo:
        return stats
    sql = sql_text(layer, name)
    # identifiers from our own constants only; the days are bound
    con.execute(f"delete from {name} where list_contains($days, hour::date)", {"days": redo})  # noqa: S608
    con.execute(
        f"delete from {STATE} where object = $o and list_contains($days, day)",  # noqa: S608 - identifiers only
        {"o": name, "days": redo},
    )
    ready = [d for d in stats.days_rebuilt if prebuilt is not None and prebuilt.days.get(d) == current[d]]
    if prebuilt is not None and ready:
        con.execute(
            f"insert into {name} by name\n{sql_text('spark/warehouse', name)}",
            {"parquet": prebuilt.parquet, "days": ready},
        )
    for first, last in _ranges([d for d in stats.days_rebuilt if d not in set(ready)], days_per_statement):
        con.execute(f"insert into {name}\n{sql}", {"day_from": first, "day_to": last})
    if stats.days_rebuilt:
        store_parts(con, STATE, name, {d: current[d] for d in stats.days_rebuilt})
        row = one(
            con,
            f"select count(*) from {name} where list_contains($days, hour::date)",  # noqa: S608 - identifiers only
            {"days": stats.days_rebuilt},
        )
        stats.rows = int(row[0]) if row else 0
    return stats


def _rollup_inputs(con: duckdb.DuckDBPyConnection) -> tuple[dict[date, int], set[date]]:
    """Each sample day's fingerprint (its files and the jobs slicing it), and the days the retention froze."""
    samples = _fingerprints(con, "sample_days")
    slicing = _fingerprints(con, "slicing_days")
    # days whose raw samples the retention dropped (pipelines/retention.py) stay as they were rolled up
    frozen = {r["day"] for r in rows(con, sql_text("intermediate/retention", "pruned_days"))}
    current = {day: combine(fp, slicing.get(day)) for day, fp in samples.items() if day not in frozen}
    return current, frozen


def pending_rollups(con: duckdb.DuckDBPyConnection) -> dict[date, int]:
    """The days `refresh_rollups` would roll up now, with the fingerprints of their inputs."""
    current, _ = _rollup_inputs(con)
    stored = stored_days(con, "int_gpu_slices")
    return {day: fp for day, fp in current.items() if stored.get(day) != fp}


def refresh_rollups(
    con: duckdb.DuckDBPyConnection, full: bool = False, prebuilt: Prebuilt | None = None
) -> DayStats:
    """Roll up the sample days whose files or slicing jobs changed since the last refresh (all if `full`);
    days `prebuilt` rolled up from the same inputs (on Spark) are copied from it.

    Runs inside the caller's transaction; one day per statement so memory stays bounded by a day of samples.
    """
    current, frozen = _rollup_inputs(con)
    return _refresh_days(
        con, "intermediate", "int_gpu_slices", current, full, days_per_statement=1, frozen=frozen,
        prebuilt=prebuilt,
    )  # fmt: skip


def refresh_day_mart(con: duckdb.DuckDBPyConnection, name: str, full: bool = False) -> DayStats:
    """Rebuild the days of a day-incremental mart whose inputs changed (after `refresh_rollups`)."""
    _ensure_day_table(con, "marts", name)
    if name == "gpu_job_hours":
        slices = stored_days(con, "int_gpu_slices")
        # a day's other inputs count only for the days rolled up: with none, they are not read
        attributes = _fingerprints(con, "job_attribute_days") if slices else {}
        cost = _fingerprints(con, "cost_days") if slices else {}
        mapping = _fingerprints(con, "mapping_days") if slices else {}
        current = {
            day: combine(fp, attributes.get(day), cost.get(day), mapping.get(day))
            for day, fp in slices.items()
        }
    elif name == "gpu_hours":
        current = stored_days(con, "gpu_job_hours")
    else:
        raise KeyError(f"{name!r} is not a day-incremental mart")
    return _refresh_days(con, "marts", name, current, full, days_per_statement=31)


def _dependencies(layer: str, name: str) -> list[str]:
    names = re.split(r"[,\s]+", header(sql_text(layer, name)).get("depends_on", ""))
    return [n for n in names if n]


@cache
def needs_rollup(name: str) -> bool:
    """Whether mart `name` reads a roll-up table (directly or through intermediate views)."""
    todo, seen = list(_dependencies("marts", name)), set()
    while todo:
        dep = todo.pop()
        if dep in ROLLUPS:
            return True
        if dep in seen:
            continue
        seen.add(dep)
        if dep in INTERMEDIATE:
            todo.extend(_dependencies("intermediate", dep))
        elif dep in MARTS and dep != name:
            todo.extend(_dependencies("marts", dep))
    return False


def _glob(pattern: str | None, contains: bool = False) -> str | None:
    """A match glob as the marts compare it: lower-case; with `contains`, a plain word matches anywhere."""
    if pattern is None:
        return None
    text = pattern.strip().lower()
    return f"*{text}*" if contains and not any(ch in text for ch in "*?[") else text


def write_pricing(con: duckdb.DuckDBPyConnection, config: Config) -> int:
    """Replace `pricing_entries` with the config's `pricing:` section (inside the caller's transaction).

    The marts read the cost models from the warehouse, so a run prices with the config it was started with.
    """
    con.execute("delete from pricing_entries")
    now = utcnow()
    where = config.path or "wastewatch.yaml"
    for position, entry in enumerate(config.pricing, start=1):
        m, c, o = entry.match, entry.contract, entry.owned
        tags = m.tag or {}
        con.execute(
            "insert into pricing_entries values ($position, $basis, $host, $gpu_model, $cluster, "
            "map(list_transform($tag_keys, lambda k: normalize_tag_key(k)), $tag_values), $currency, "
            "$per_gpu_hour, $per_node_hour, $valid_from, $valid_to, $gpus, $purchase_price, $residual_value, "
            "$life_years, $in_service, $pue, $kwh_price, $facility_per_month, $nameplate_watts, "
            "$host_overhead, $source, $now)",
            {
                "position": position,
                "basis": entry.basis,
                "host": _glob(m.host),
                "gpu_model": _glob(m.gpu_model, contains=True),
                "cluster": _glob(m.cluster),
                "tag_keys": list(tags),
                "tag_values": list(tags.values()),
                "currency": c.currency if c else o.currency if o else None,
                "per_gpu_hour": c.per_gpu_hour if c else None,
                "per_node_hour": c.per_node_hour if c else None,
                "valid_from": c.valid_from if c else None,
                "valid_to": c.valid_to if c else o.retired if o else None,  # the last day either model prices
                "gpus": c.gpus if c else o.gpus if o else None,
                "purchase_price": o.purchase_price if o else None,
                "residual_value": o.residual_value if o else None,
                "life_years": o.life_years if o else None,
                "in_service": o.in_service if o else None,
                "pue": o.pue if o else None,
                "kwh_price": o.kwh_price if o else None,
                "facility_per_month": o.facility_per_month if o else None,
                "nameplate_watts": o.nameplate_watts if o else None,
                "host_overhead": o.host_overhead if o else None,
                "source": f"{where}: pricing[{position - 1}]",
                "now": now,
            },
        )
    return len(config.pricing)


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
    `prepared=` the run returned): the config's `pricing:` written to the warehouse, the intermediate layer
    created."""
    with transaction(con):
        if config is not None:
            write_pricing(con, config)
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
    if name not in MARTS:
        raise KeyError(f"unknown mart {name!r}")
    started = time.monotonic()
    stats: list[DayStats] = []
    # `engine: spark` builds the marts its settings name (pipelines/engines/spark/); the others stay here
    on_spark = (
        config is not None
        and config.engine == "spark"
        and config.spark is not None
        and name in config.spark.marts
    )
    if on_spark:
        assert config is not None
        # imported only here: the default install has no pyspark, and nothing else needs the engine
        from pipelines.engines.spark import marts as spark_marts

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
    try:
        with transaction(con):
            if config is not None and prepared is None:
                write_pricing(con, config)
            if prepared is None:
                build_intermediate(con)
            if needs_rollup(name):
                # what the run's roll-up left to do after its first: nothing
                stats.append(DayStats(ROLLUPS[0]) if rolled_up else refresh_rollups(con, prebuilt=rolled))
            if on_spark:
                spark_marts.attach(con, name, built)
                store_inputs(con, name, None)  # built anew each time: what reads it is built again too
            elif name in DAY_MARTS:
                stats.append(refresh_day_mart(con, name))
            elif name == cost_months.NAME:
                months = cost_months.refresh(con, _mart_digest(name), _layers(), memo=memo)
                kept = months.kept
                rebuilt, removed = months.months_rebuilt, months.months_removed
                stats.append(DayStats(name, rebuilt, removed, full=months.full, unit="month"))
            elif name in file_marts.FILE_MARTS:
                files = file_marts.refresh(con, name, _mart_digest(name), memo=memo)
                kept = files.kept
                stats.append(
                    DayStats(name, files.files_rebuilt, files.files_removed, full=files.full, unit="file")
                )
            else:
                kept = _build_full(con, name, memo)
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
            from pipelines.engines.spark import gpu_rollup

            gpu_rollup.discard(rolled)  # its rows are in int_gpu_slices now, or not wanted
    if prepared is not None and needs_rollup(name):
        prepared.rolled_up = True
    failpoint("transform.mart.committed")
    if on_spark:
        spark_marts.cleanup(name, built)
    row = one(con, f"select count(*) from {name}")  # noqa: S608 - identifiers only, values are bound
    n = int(row[0]) if row else 0
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
    from pipelines.engines.spark import gpu_rollup  # imported only here, as the marts' engine is

    return gpu_rollup.build(con, config, days)


def _build_full(con: duckdb.DuckDBPyConnection, name: str, memo: Memo | None = None) -> bool:
    """Build a mart in full unless it exists and its inputs fingerprint as when it was last built (`memo`:
    the run's fingerprints of the raw layer).

    Returns whether the table was kept as it was.
    """
    fingerprint = inputs_fingerprint(con, name, _layers(), _mart_digest(name), memo=memo)
    if fingerprint is not None and stored_inputs(con, name) == fingerprint and table_exists(con, name):
        return True
    drop_view(con, name)  # the mart was a view over Spark's Parquet (engine: spark before)
    con.execute(f"create or replace table {name} as\n{sql_text('marts', name)}")
    store_inputs(con, name, fingerprint)
    return False


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


def build_marts(con: duckdb.DuckDBPyConnection, config: Config | None = None) -> dict[str, int]:
    return {name: build_mart(con, name, config) for name in MARTS}
