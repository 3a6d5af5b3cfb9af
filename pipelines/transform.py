"""Build the intermediate views and the marts from the landed tables (one transaction)."""

from __future__ import annotations

import duckdb

from pipelines.warehouse import one, sql_text, transaction

INTERMEDIATE = ("int_billed_resources", "int_host_resources")
MARTS = ("resources", "cost_hourly", "gpu_hours")


def build_intermediate(con: duckdb.DuckDBPyConnection) -> None:
    for name in INTERMEDIATE:
        # name comes from our own constant list; the body is our own SQL file
        con.execute(f"create or replace view {name} as\n{sql_text('intermediate', name)}")


def build_mart(con: duckdb.DuckDBPyConnection, name: str) -> int:
    """(Re)build one mart table in a transaction; returns its row count."""
    if name not in MARTS:
        raise KeyError(f"unknown mart {name!r}")
    with transaction(con):
        build_intermediate(con)
        con.execute(f"create or replace table {name} as\n{sql_text('marts', name)}")
    row = one(con, f"select count(*) from {name}")  # noqa: S608 - identifiers only, values are bound
    return int(row[0]) if row else 0


def build_marts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return {name: build_mart(con, name) for name in MARTS}
