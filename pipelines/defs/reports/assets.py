"""The weekly report files and the published read-only warehouse."""

import dagster as dg

from pipelines.defs.partitions import partition_to_window, weekly_partitions
from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource
from pipelines.defs.rules.assets import findings_key
from pipelines.evaluate import active_rules
from pipelines.report import write_report
from pipelines.warehouse import publish


@dg.asset(
    key=["reports", "weekly_report"],
    group_name="reports",
    kinds={"duckdb", "html"},
    pool=WAREHOUSE_POOL,
    partitions_def=weekly_partitions,
    deps=[findings_key(rule) for rule in active_rules()] + ["cost_hourly"],
    description="report.md, report.html, findings.csv and findings.parquet under <reports_dir>/<ISO week>/; "
    "then publishes the read-only warehouse copy.",
)
def weekly_report(context: dg.AssetExecutionContext, wastewatch: WastewatchResource) -> dg.MaterializeResult:
    window = partition_to_window(context.partition_key)
    config = wastewatch.load()
    with wastewatch.warehouse() as con:
        report = write_report(con, config, window)
    published = publish(config)
    metadata: dict[str, object] = {
        "week": report.week,
        "report_html": dg.MetadataValue.path(str(report.files["report.html"])),
        "report_md": dg.MetadataValue.path(str(report.files["report.md"])),
        "findings": len(report.findings),
        "published_warehouse": dg.MetadataValue.path(str(published)),
    }
    for h in report.headline:
        metadata[f"spend_{h['currency']}"] = dg.MetadataValue.float(float(h["spend"]))
        metadata[f"waste_{h['currency']}"] = dg.MetadataValue.float(float(h["waste"]))
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(
    key="published_warehouse",
    group_name="reports",
    kinds={"duckdb"},
    pool=WAREHOUSE_POOL,
    deps=["resources", "cost_hourly", "gpu_hours"],
    description="An atomic read-only copy of the warehouse for ad-hoc queries (`wastewatch sql`, duckdb -readonly).",
)
def published_warehouse(wastewatch: WastewatchResource) -> dg.MaterializeResult:
    path = publish(wastewatch.load())
    return dg.MaterializeResult(
        metadata={"path": dg.MetadataValue.path(str(path)), "size_bytes": path.stat().st_size}
    )
