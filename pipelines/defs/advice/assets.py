"""One weekly-partitioned advice asset per advisor (commitment, spot); the advisors know nothing of Dagster."""

import dagster as dg

from pipelines.advice import ADVISORS, Advisor, run_advisor
from pipelines.defs.partitions import partition_to_window, weekly_partitions
from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource


def advice_key(advisor: Advisor) -> dg.AssetKey:
    return dg.AssetKey(["advice", advisor.key])


def _advice_asset(advisor: Advisor, weeks: dg.PartitionsDefinition) -> dg.AssetsDefinition:
    @dg.asset(
        key=advice_key(advisor),
        group_name="advice",
        kinds={"duckdb"},
        pool=WAREHOUSE_POOL,
        partitions_def=weeks,
        deps=list(advisor.requires),
        description=f"{advisor.id} {advisor.name}: {advisor.summary} Advice, never waste or spend.",
        metadata={"advisor_id": advisor.id, "kind": advisor.kind},
    )
    def _asset(context: dg.AssetExecutionContext, wastewatch: WastewatchResource) -> dg.MaterializeResult:
        window = partition_to_window(context.partition_key)
        config = wastewatch.load()
        with wastewatch.warehouse() as con:
            outcome, items = run_advisor(con, config, advisor, window)
        metadata: dict[str, object] = {
            "week": window.label,
            "items": outcome.items,
            "recommended": outcome.recommended,
            "params": dg.MetadataValue.json(outcome.params),
            "preview": dg.MetadataValue.md(
                "\n".join(f"- {i['status']}: {i['reason']}" for i in items[:10]) or "No advice."
            ),
        }
        for currency, amount in outcome.estimated_saving.items():
            metadata[f"weekly_saving_{currency}"] = dg.MetadataValue.float(float(round(amount, 2)))
        return dg.MaterializeResult(metadata=metadata)

    return _asset


@dg.definitions
def advice_assets() -> dg.Definitions:
    weeks = weekly_partitions()  # from history_start: read here, when the definitions are built
    return dg.Definitions(assets=[_advice_asset(advisor, weeks) for advisor in ADVISORS])
