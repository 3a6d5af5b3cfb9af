"""Sources that are reachable but stopped delivering: a paused export, a dead exporter on some hosts.

Each source has an expected cadence (`expected_every`, by default its family's in the registry). A source
whose newest delivery (a file or snapshot loaded) is older than that, that never delivered anything, or a
telemetry host that fell silent or sparse against its own source, is stale: the CLI's summary names it
and exits 1, the Dagster check warns, and the weekly report lists it under data quality. A host's silence
is measured from its source's newest accepted sample: a file dated more than `max_clock_skew` ahead of the
clock is rejected at ingest (pipelines/ingest/readers/base.py), so it cannot hide silent hosts, and a
replayed old trace is judged against its own newest sample, not the wall clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb

from pipelines.config import Config
from pipelines.sources.registry import source_kind
from pipelines.units import describe_duration
from pipelines.warehouse import rows, sql_text

# at most this many hosts are named in one source's message; the rest are counted
NAMED_HOSTS = 5


@dataclass(frozen=True)
class Stale:
    source: str
    kind: str
    problem: str  # one line, naming the source
    last_delivery: datetime | None
    expected_every: timedelta
    hosts: tuple[str, ...] = ()  # telemetry hosts that stopped or thinned out

    def __str__(self) -> str:
        return self.problem


def _ts(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC")


def stale_sources(
    con: duckdb.DuckDBPyConnection, config: Config, now: datetime, table: str | None = None
) -> list[Stale]:
    """Every enabled source (of the kinds writing `table`, when given) that delivered nothing new within its
    cadence, and every telemetry source with hosts that stopped reporting, in config order."""
    seen = {r["source"]: r for r in rows(con, sql_text("checks", "freshness_deliveries"))}
    out: list[Stale] = []
    for source in config.sources:
        every = source.expected_interval()
        if not source.enabled or every is None or (table and source_kind(source.kind).target != table):
            continue
        r = seen.get(source.name)
        last = r["last_delivery"] if r else None
        if last is None:
            where = config.source_location(source)
            tried = (
                f" ({r['files_seen']} file(s) seen, none loaded)" if r else f" (no file it reads at {where})"
            )
            problem = f"source {source.name!r} has delivered nothing yet{tried}"
            out.append(Stale(source.name, source.kind, problem, None, every))
            continue
        age = now - last
        if age > every:
            problem = (
                f"source {source.name!r} delivered nothing new for {describe_duration(age)} "
                f"(expected every {describe_duration(every)}; newest load {_ts(last)})"
            )
            out.append(Stale(source.name, source.kind, problem, last, every))
        if source_kind(source.kind).family == "telemetry":
            silence = source.host_silence_interval()
            if silence is not None:
                hosts = rows(
                    con, sql_text("checks", "freshness_hosts"), {"source": source.name, "silence": silence}
                )
                if hosts:
                    out.append(_hosts_stale(source.name, source.kind, hosts, last, every))
    return out


def _hosts_stale(
    name: str, kind: str, hosts: list[dict[str, object]], last: datetime, every: timedelta
) -> Stale:
    named = []
    for h in hosts[:NAMED_HOSTS]:
        if h["problem"] == "silent":
            named.append(f"{h['host']} silent since {_ts(h['last_sample'])}")  # type: ignore[arg-type]
        else:
            before = float(h["samples_per_day_before"] or 0)  # type: ignore[arg-type]
            named.append(
                f"{h['host']} sent {h['samples_last_day']} samples in the last day against {before:,.0f} a day in the week before"
            )
    more = f" and {len(hosts) - NAMED_HOSTS} more" if len(hosts) > NAMED_HOSTS else ""
    newest = hosts[0]["source_newest"]
    problem = (
        f"source {name!r}: {len(hosts)} host(s) stopped reporting or thinned out against the source's newest "
        f"sample at {_ts(newest)}: {', '.join(named)}{more}"  # type: ignore[arg-type]
    )
    return Stale(name, kind, problem, last, every, tuple(str(h["host"]) for h in hosts))
