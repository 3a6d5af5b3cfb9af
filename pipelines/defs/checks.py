"""Dagster asset checks built from `sql/checks/assert_<asset>_<check>.sql`, one check per file.

A file's header names the asset it guards (`-- asset:`), the check (`-- check:`) and whether a failure
stops what depends on the asset in the same run (`-- blocking: true`); its prose is the check's
description. The query returns one row per thing it checks: `label` and `detail` (that row's metadata
entry) and `passed`. The check passes when every row does, so a query returning no rows passes. The
asset that owns a check declares `check_specs(asset)` and, after it is built, returns
`check_results(con, asset)` with its materialisation.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import dagster as dg
import duckdb

from pipelines.warehouse import parse_notes, rows, sql_root


@dataclass(frozen=True)
class SqlCheck:
    """One `sql/checks/` file: the asset it guards, its name, whether it blocks, its query."""

    asset: str
    name: str
    blocking: bool
    description: str
    sql: str


@cache
def sql_checks() -> tuple[SqlCheck, ...]:
    """Every check under `sql/checks/`; a file whose name disagrees with its header is an error."""
    out = []
    for path in sorted((sql_root() / "checks").glob("assert_*.sql")):
        sql = path.read_text(encoding="utf-8")
        notes = parse_notes(sql)
        asset, name = notes.meta.get("asset"), notes.meta.get("check")
        if not asset or not name or path.stem != f"assert_{asset}_{name}":
            raise ValueError(
                f"{path}: name the file assert_<asset>_<check>.sql after its -- asset: and -- check:"
            )
        blocking = notes.meta.get("blocking", "false").lower() == "true"
        out.append(SqlCheck(asset, name, blocking, notes.description, sql))
    return tuple(out)


def check_specs(asset: str) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(c.name, asset=asset, blocking=c.blocking, description=c.description)
        for c in sql_checks()
        if c.asset == asset
    ]


def check_results(con: duckdb.DuckDBPyConnection, asset: str) -> list[dg.AssetCheckResult]:
    """Run the asset's checks on the warehouse it was just built in."""
    results = []
    for c in sql_checks():
        if c.asset != asset:
            continue
        found = rows(con, c.sql)
        results.append(
            dg.AssetCheckResult(
                asset_key=asset,
                check_name=c.name,
                passed=all(r["passed"] for r in found),
                metadata={r["label"]: r["detail"] for r in found},
            )
        )
    return results


def blocking_failed(asset: str, results: list[dg.AssetCheckResult]) -> bool:
    """Whether a blocking check of `asset` failed: what depends on it is not built in the same run."""
    blocking = {c.name for c in sql_checks() if c.asset == asset and c.blocking}
    return any(not r.passed and r.check_name in blocking for r in results)
