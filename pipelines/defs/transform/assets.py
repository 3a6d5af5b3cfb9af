"""Marts rebuilt from the landed tables: one asset per `sql/marts/` file listed in pipelines.transform.MARTS.

Dependencies come from each file's `-- depends_on:` header (intermediate views resolved to what they read),
so adding a mart is adding its SQL file and its name to MARTS.

The marts and the samples' retention are one multi-asset (one step, `marts`): each mart keeps its own asset
key, metadata and checks; the step writes the pricing and the intermediate layer once, then builds the
selected marts in dependency order, each in its own transaction (the raw layer fingerprinted and the samples
rolled up once for all), then writes the marts' COMMENTs at once. A mart whose blocking check fails stops
the marts that read it (they are not materialised) and, once the others are built, fails the step.
"""

import re
from collections.abc import Callable, Iterator

import dagster as dg
import duckdb

from pipelines.config import Config
from pipelines.defs.checks import blocking_failed, check_results, check_specs
from pipelines.defs.ingest.assets import INGEST_TABLES
from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource
from pipelines.redact import redact
from pipelines.retention import RETENTION_ASSET, prune_samples
from pipelines.transform import (
    INTERMEDIATE,
    MARTS,
    DayStats,
    MartRun,
    build_mart_with_rollup,
    finish_marts,
    needs_rollup,
    prepare_marts,
)
from pipelines.warehouse import header, rows, sql_text, utcnow

DESCRIPTIONS = {
    "resources": "One row per billed resource: instance type, GPU model and count, host, tags.",
    "cost_hourly": "Effective cost of every resource-hour (lines spread evenly over their charge period).",
    "gpu_hours": "One row per GPU-hour: samples, coverage, mean/p95/max util, memory, power, billed resource.",
    "gpu_job_hours": "GPU-hours split where jobs start and end: each part's job, usage and cost; "
    "rolled up incrementally (only sample days whose files or jobs changed).",
    "jobs_enriched": "One row per scheduler job: its billed resources, team/project (record or host tags), "
    "GPU usage and cost.",
    "gpu_billed_hours": "What each GPU resource cost in each hour it was billed (its billing currency only): "
    "the basis the GPU rules price from.",
    "job_mfu": "Measured MFU per job from its training log (tokens over wall-clock time), tokens per GPU-hour "
    "and cost per million tokens.",
    "job_mfu_hourly": "Measured MFU per job and hour (how long a job stayed below a floor: GPU005).",
    "gpu_job_spans": "How long each job that did not fail held its GPUs, over its whole run (GPU002, GPU003).",
    "gpu_claims": "Which GPU rule claims each GPU-slice and why, in precedence order: the GPU rules price only "
    "their own claims.",
}

Extra = Callable[[duckdb.DuckDBPyConnection], dict[str, object]]


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


def _resources_stats(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    stats = rows(
        con,
        "select count(*) filter (where gpu_count > 0) as gpu_resources, coalesce(sum(gpu_count), 0) as gpus "
        "from resources",
    )[0]
    unmatched = rows(con, "select count(*) as n from int_host_resources where resource_id is null")[0]["n"]
    return {
        "gpu_resources": int(stats["gpu_resources"]),
        "gpus": int(stats["gpus"]),
        "telemetry_hosts_without_bill": int(unmatched),
    }


def _cost_stats(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    # a currency on the bill but missing from cost_hourly shows 0 (reconciles_with_billing fails for it)
    totals = rows(
        con,
        "select currency, sum(effective) as effective from ("
        "select billing_currency as currency, effective_cost as effective from cost_hourly "
        "union all select distinct billing_currency, 0 from billing_line_items) group by 1 order by 1",
    )
    return {f"effective_cost_{r['currency']}": dg.MetadataValue.float(float(r["effective"])) for r in totals}


def _gpu_hours_stats(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    stats = rows(
        con,
        "select count(*) filter (where resource_id is null) as unbilled, "
        "coalesce(avg(coverage), 0) as coverage, coalesce(avg(util_mean), 0) as util from gpu_hours",
    )[0]
    return {
        "gpu_hours_without_billed_resource": int(stats["unbilled"]),
        "mean_coverage": dg.MetadataValue.float(round(float(stats["coverage"]), 3)),
        "mean_util_pct": dg.MetadataValue.float(round(float(stats["util"]), 2)),
    }


def _jobs_stats(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    stats = rows(
        con,
        "select count(*) as jobs, count(*) filter (where gpus_observed > 0) as with_telemetry, "
        "count(*) filter (where team is null) as without_team, "
        "count(*) filter (where team_source = 'host billing tags') as team_from_hosts from jobs_enriched",
    )[0]
    return {k: int(v) for k, v in stats.items()}


def _gpu_job_hours_stats(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    stats = rows(
        con,
        "select count(*) filter (where job_key is not null) as slices_with_job, "
        "coalesce(sum(slice_seconds) filter (where job_key is not null), 0) / 3600 as gpu_hours_with_job, "
        "coalesce(sum(slice_seconds), 0) / 3600 as gpu_hours from gpu_job_hours",
    )[0]
    return {
        "slices_with_job": int(stats["slices_with_job"]),
        "gpu_hours_with_job": dg.MetadataValue.float(round(float(stats["gpu_hours_with_job"]), 2)),
        "gpu_hours": dg.MetadataValue.float(round(float(stats["gpu_hours"]), 2)),
    }


EXTRAS: dict[str, Extra] = {
    "resources": _resources_stats,
    "cost_hourly": _cost_stats,
    "gpu_hours": _gpu_hours_stats,
    "gpu_job_hours": _gpu_job_hours_stats,
    "jobs_enriched": _jobs_stats,
}


def _day_metadata(stats: list[DayStats]) -> dict[str, object]:
    """What the tables kept up to date by day (or month, or file) rebuilt: days and rows per table
    (int_gpu_slices = the roll-up; cost_hourly by month; the bill's line marts by file)."""
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


def build_order() -> list[str]:
    """MARTS with every mart after the marts it reads (MARTS' own order otherwise)."""
    done: list[str] = []
    todo = list(MARTS)
    while todo:
        name = next(n for n in todo if all(d in done for d in mart_deps(n) if d in MARTS))
        todo.remove(name)
        done.append(name)
    return done


def _mart_spec(name: str) -> dg.AssetSpec:
    return dg.AssetSpec(
        key=name,
        group_name="transform",
        kinds={"duckdb"},
        deps=mart_deps(name),
        description=DESCRIPTIONS.get(name) or header(sql_text("marts", name)).get("grain", name),
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
    extra = EXTRAS[name](con) if name in EXTRAS else {}
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
