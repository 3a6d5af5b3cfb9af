"""One weekly-partitioned advice asset per advisor (commitment, spot); the advisors know nothing of Dagster.

The advice assets are one multi-asset (one step, `advice`), each with its own asset key and metadata.
"""

from collections.abc import Iterator

import dagster as dg
import duckdb

from pipelines.advice import ADVISORS, Advisor, run_advisor
from pipelines.config import Config
from pipelines.defs.partitions import partition_to_window, weekly_partitions
from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource
from rules import Window


def advice_key(advisor: Advisor) -> dg.AssetKey:
    return dg.AssetKey(["advice", advisor.key])


def _advice_spec(advisor: Advisor) -> dg.AssetSpec:
    return dg.AssetSpec(
        key=advice_key(advisor),
        group_name="advice",
        kinds={"duckdb"},
        deps=list(advisor.requires),
        description=f"{advisor.id} {advisor.name}: {advisor.summary} Advice, never waste or spend.",
        metadata={"advisor_id": advisor.id, "kind": advisor.kind},
    )


def _advise(
    con: duckdb.DuckDBPyConnection, config: Config, advisor: Advisor, window: Window
) -> dg.MaterializeResult:
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
    return dg.MaterializeResult(asset_key=advice_key(advisor), metadata=metadata)


def _advice_asset(weeks: dg.PartitionsDefinition) -> dg.AssetsDefinition:
    @dg.multi_asset(
        name="advice",
        specs=[_advice_spec(advisor) for advisor in ADVISORS],
        partitions_def=weeks,
        can_subset=True,
        pool=WAREHOUSE_POOL,
        description="Runs the selected advisors for the week.",
    )
    def _asset(
        context: dg.AssetExecutionContext, wastewatch: WastewatchResource
    ) -> Iterator[dg.MaterializeResult]:
        window = partition_to_window(context.partition_key)
        config = wastewatch.load()
        selected = context.selected_asset_keys
        with wastewatch.warehouse() as con:
            for advisor in ADVISORS:
                if advice_key(advisor) in selected:
                    yield _advise(con, config, advisor, window)

    return _asset


@dg.definitions
def advice_assets() -> dg.Definitions:
    weeks = weekly_partitions()  # from history_start: read here, when the definitions are built
    return dg.Definitions(assets=[_advice_asset(weeks)])
