"""Landed tables: one asset per warehouse table that readers write (all sources of those kinds)."""

import dagster as dg

from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource
from pipelines.ingest import ingest
from pipelines.warehouse import rows, scalar


def _ingest_table(
    context: dg.AssetExecutionContext, wastewatch: WastewatchResource, table: str
) -> dg.MaterializeResult:
    config = wastewatch.load()
    with wastewatch.warehouse() as con:
        report = ingest(con, config, targets=(table,), progress=context.log.debug)
        total = scalar(con, f"select count(*) from {table}")  # noqa: S608 - our constant
        metadata: dict[str, object] = {
            "files_loaded": len(report.of("loaded")),
            "files_unchanged": len(report.of("unchanged")),
            "files_rejected": len(report.rejected),
            "rows_loaded": report.rows_into(table),
            "dagster/row_count": int(total or 0),
        }
        if table == "billing_line_items":
            for r in rows(
                con,
                "select billing_currency, sum(billed_cost)::double as billed, sum(effective_cost)::double as effective "
                "from billing_line_items group by 1 order by 1",
            ):
                metadata[f"billed_cost_{r['billing_currency']}"] = dg.MetadataValue.float(
                    round(r["billed"], 2)
                )
                metadata[f"effective_cost_{r['billing_currency']}"] = dg.MetadataValue.float(
                    round(r["effective"], 2)
                )
    for note in report.notes:
        context.log.info(note)
    for outcome in report.rejected:
        context.log.warning(outcome.error or outcome.uri)
    if report.rejected:
        metadata["rejected"] = dg.MetadataValue.md("\n".join(f"- {o.error}" for o in report.rejected))
    check = dg.AssetCheckResult(
        check_name="no_rejected_files",
        passed=not report.rejected,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"files_rejected": len(report.rejected)},
    )
    return dg.MaterializeResult(metadata=metadata, check_results=[check])


def _rejected_check(table: str) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(
            "no_rejected_files",
            asset=table,
            description="Every file of this run's sources loaded (rejected files are listed in ingest_files).",
        )
    ]


@dg.asset(
    key="billing_line_items",
    group_name="ingest",
    kinds={"duckdb"},
    pool=WAREHOUSE_POOL,
    check_specs=_rejected_check("billing_line_items"),
    description="FOCUS-shaped billing line items from every billing source (new and changed files only).",
)
def billing_line_items(
    context: dg.AssetExecutionContext, wastewatch: WastewatchResource
) -> dg.MaterializeResult:
    return _ingest_table(context, wastewatch, "billing_line_items")


@dg.asset(
    key="gpu_samples",
    group_name="ingest",
    kinds={"duckdb"},
    pool=WAREHOUSE_POOL,
    check_specs=_rejected_check("gpu_samples"),
    description="GPU telemetry samples (UTC, one row per GPU per sample) from every telemetry source.",
)
def gpu_samples(context: dg.AssetExecutionContext, wastewatch: WastewatchResource) -> dg.MaterializeResult:
    return _ingest_table(context, wastewatch, "gpu_samples")
