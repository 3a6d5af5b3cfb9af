"""Tables kept up to date by day: the GPU samples' roll-up (`int_gpu_slices`) and the hourly GPU marts on it.

Rolling millions of samples up on every run would not scale, so `int_gpu_slices` (GPU x hour x job slice)
is rolled up again only for the sample days whose fingerprint changed: the ingest ledger's files behind the
day's samples (ids, checksums, load times, row counts) and the job starts/ends that cut the day into slices.
The marts `gpu_job_hours` and `gpu_hours` on top of it are rebuilt only for the days whose roll-up changed or
whose other inputs did: the jobs running that day (ids, states), the billed cost of the GPU instances'
hours, and the host -> billed resource mapping of the day's hosts. Days whose samples are gone are dropped;
days whose raw samples the retention dropped stay as they were rolled up. The fingerprints of what each
table was built from live in `int_incremental_days`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Protocol

import duckdb

from pipelines.marts.registry import ROLLUPS
from pipelines.transform.fingerprints import SQL as INCREMENTAL
from pipelines.transform.fingerprints import STATE, combine, store_parts, stored_days
from pipelines.warehouse import columns, one, rows, sql_text, table_exists


@dataclass
class DayStats:
    """What one refresh of a day-incremental table did: days built again, days removed, rows written
    (a mart kept by month: `unit` month, each month named by its first day; the bill's line marts,
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


def ensure_day_table(con: duckdb.DuckDBPyConnection, layer: str, name: str) -> None:
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
    # days whose raw samples the retention dropped (pipelines/transform/retention.py) stay as they were rolled up
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
    ensure_day_table(con, "marts", name)
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
