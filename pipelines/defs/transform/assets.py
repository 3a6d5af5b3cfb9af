"""Marts rebuilt from the landed tables: one asset per mart of the registry (pipelines/marts/registry.py).

Dependencies come from each file's `-- depends_on:` header (intermediate views resolved to what they read),
descriptions from the registry, so adding a mart is adding its SQL file and its registry line.

The marts and the samples' retention are one multi-asset (one step, `marts`): each mart keeps its own asset
key, metadata and checks; the step writes the pricing and the intermediate layer once, then builds the
selected marts in dependency order, each in its own transaction (the raw layer fingerprinted and the samples
rolled up once for all), then writes the marts' COMMENTs at once. A mart whose blocking check fails stops
the marts that read it (they are not materialised) and, once the others are built, fails the step.
"""

import re
from collections.abc import Iterator

import dagster as dg
import duckdb

from pipelines.config import Config
from pipelines.defs.checks import blocking_failed, check_results, check_specs
from pipelines.defs.ingest.assets import INGEST_TABLES
from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource
from pipelines.marts.registry import INTERMEDIATE, MARTS, mart
from pipelines.redact import redact
from pipelines.transform.build import (
    MartRun,
    build_mart_with_rollup,
    build_order,
    finish_marts,
    needs_rollup,
    prepare_marts,
)
from pipelines.transform.days import DayStats
from pipelines.transform.retention import RETENTION_ASSET, prune_samples
from pipelines.warehouse import header, rows, sql_root, sql_text, utcnow


def _depends_on(layer: str, name: str) -> list[str]:
    names = re.split(r"[,\s]+", header(sql_text(layer, name)).get("depends_on", ""))
    return [n for n in names if n]


def mart_deps(name: str) -> list[str]:
    """Asset keys a mart depends on: landed tables and other marts, through intermediate views."""
    out: list[str] = []
    todo = _depends_on("marts", name)
    while todo:
        dep = todo.pop(0)
        if dep in INTERMEDIATE:
            todo.extend(_depends_on("intermediate", dep))
        elif (dep in INGEST_TABLES or dep in MARTS) and dep != name and dep not in out:
            out.append(dep)
    return out


def _stats(con: duckdb.DuckDBPyConnection, name: str) -> dict[str, object]:
    """What the mart's asset metadata shows besides its row count, from `sql/marts/stats/<name>.sql` when the
    mart has one: its one row's columns, or its (metric, value) rows; counts as integers, amounts as floats."""
    if not (sql_root() / "marts" / "stats" / f"{name}.sql").exists():
        return {}
    found = rows(con, sql_text("marts/stats", name))
    pairs = (
        [(r["metric"], r["value"]) for r in found]
        if found and list(found[0]) == ["metric", "value"]
        else list(found[0].items())
        if found
        else []
    )
    return {
        k: dg.MetadataValue.float(float(v)) if isinstance(v, float) else int(v)
        for k, v in pairs
        if v is not None
    }


def _day_metadata(stats: list[DayStats]) -> dict[str, object]:
    """What the tables kept up to date by day (or month, or file) rebuilt: days and rows per table
    (int_gpu_slices = the roll-up; a mart kept by month or by file: its months or files)."""
    out: dict[str, object] = {}
    for st in stats:
        prefix = "rollup" if st.table == "int_gpu_slices" else "mart"
        unit = st.unit
        out[f"{prefix}_{unit}s_rebuilt"] = len(st.days_rebuilt)
        out[f"{prefix}_{unit}s_removed"] = len(st.days_removed)
        if unit == "day":
            out[f"{prefix}_rows_written"] = st.rows
        if unit == "file":  # a file is named by a hash: how many is what tells
            continue
        # a month is named yyyy-mm, a day yyyy-mm-dd
        labels = [d.isoformat()[: 7 if unit == "month" else 10] for d in st.days_rebuilt[:31]]
        out[f"{prefix}_{unit}s"] = ", ".join(labels) or "none (nothing changed)"
    return out


def _mart_spec(name: str) -> dg.AssetSpec:
    return dg.AssetSpec(
        key=name,
        group_name="transform",
        kinds={"duckdb"},
        deps=mart_deps(name),
        description=mart(name).description,
        skippable=True,  # not built when a mart it reads failed a blocking check
    )


ROLLED_UP = [name for name in MARTS if needs_rollup(name)]

RETENTION_SPEC = dg.AssetSpec(
    key=RETENTION_ASSET,
    group_name="transform",
    kinds={"duckdb"},
    deps=ROLLED_UP,  # after this run's roll-up
    description="Drops raw GPU samples older than `retention: gpu_samples_days` once they are rolled up to "
    "the hour; the roll-up and the marts keep those days (gpu_samples_pruned lists them).",
    skippable=True,
)


def _build(con: duckdb.DuckDBPyConnection, config: Config, name: str, run: MartRun) -> dg.MaterializeResult:
    n, days = build_mart_with_rollup(con, name, config, prepared=run)
    extra = _stats(con, name)
    checks = check_results(con, name)
    metadata = {"dagster/row_count": n, **extra, **_day_metadata(days)}
    return dg.MaterializeResult(asset_key=name, metadata=metadata, check_results=checks)


def _retention(con: duckdb.DuckDBPyConnection, config: Config) -> dg.MaterializeResult:
    stats = prune_samples(con, config, utcnow().date())
    metadata: dict[str, object] = {
        "retention_days": config.retention.gpu_samples_days or "keep every sample",
        "days_dropped": stats.days,
        "samples_dropped": stats.rows,
    }
    if stats.before is not None:
        metadata["kept_from"] = stats.before.isoformat()
    return dg.MaterializeResult(asset_key=RETENTION_ASSET, metadata=metadata)


@dg.multi_asset(
    name="marts",
    specs=[_mart_spec(name) for name in MARTS] + [RETENTION_SPEC],
    check_specs=[spec for name in MARTS for spec in check_specs(name)],
    can_subset=True,
    pool=WAREHOUSE_POOL,
    description="Builds the selected marts from the landed tables in dependency order (one transaction "
    "each), then drops raw GPU samples past their retention.",
)
def marts(
    context: dg.AssetExecutionContext, wastewatch: WastewatchResource
) -> Iterator[dg.MaterializeResult]:
    selected = {key.to_user_string() for key in context.selected_asset_keys}
    config = wastewatch.load()
    stopped: dict[str, str] = {}  # mart -> the mart whose blocking check failed, upstream or itself
    with wastewatch.warehouse() as con:
        run = prepare_marts(con, config)
        for name in build_order():
            if name not in selected:
                continue
            failed = [stopped[d] for d in mart_deps(name) if d in stopped]
            if failed:
                stopped[name] = failed[0]
                context.log.warning(redact(f"{name}: not built: a blocking check of {failed[0]} failed"))
                continue
            result = _build(con, config, name, run)
            if blocking_failed(name, list(result.check_results or [])):
                stopped[name] = name
            yield result
        finish_marts(con)
        if RETENTION_ASSET in selected and not any(m in stopped for m in ROLLED_UP):
            yield _retention(con, config)


@dg.definitions
def transform_assets() -> dg.Definitions:
    return dg.Definitions(assets=[marts])
