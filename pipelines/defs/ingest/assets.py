"""Landed tables: one asset per warehouse table that readers write (all sources of the kinds feeding it)."""

import dagster as dg

from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource
from pipelines.ingest import ingest
from pipelines.ingest.readers import READER_TARGETS
from pipelines.warehouse import rows, scalar

# landed tables that have an ingestion asset (a table appears here once its DDL is in sql/raw/)
INGEST_TABLES = ("billing_line_items", "gpu_samples", "jobs", "inventory_hosts")

DESCRIPTIONS = {
    "billing_line_items": "FOCUS-shaped billing line items from every billing source (new and changed files only).",
    "gpu_samples": "GPU telemetry samples (UTC, one row per GPU per sample) from every telemetry source.",
    "jobs": "Scheduler jobs (Slurm, Kubernetes, CSV): who held which GPUs on which hosts, when, and how it ended.",
    "inventory_hosts": "Hosts known to an inventory (EC2 DescribeInstances, hosts CSV): host <-> instance id.",
    "storage_objects": "Object-store and file-system objects per inventory date (S3 Inventory, listings, scans).",
}


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


def _ingest_asset(table: str) -> dg.AssetsDefinition:
    kinds = sorted(k for k, t in READER_TARGETS.items() if t == table)

    @dg.asset(
        key=table,
        group_name="ingest",
        kinds={"duckdb"},
        pool=WAREHOUSE_POOL,
        check_specs=[
            dg.AssetCheckSpec(
                "no_rejected_files",
                asset=table,
                description="Every file of this run's sources loaded (rejected files are listed in ingest_files).",
            )
        ],
        description=f"{DESCRIPTIONS[table]} Source kinds: {', '.join(kinds)}.",
    )
    def _asset(context: dg.AssetExecutionContext, wastewatch: WastewatchResource) -> dg.MaterializeResult:
        return _ingest_table(context, wastewatch, table)

    return _asset


@dg.definitions
def ingest_assets() -> dg.Definitions:
    return dg.Definitions(assets=[_ingest_asset(table) for table in INGEST_TABLES])
