"""One weekly-partitioned findings asset per registered rule (the rules themselves know nothing of Dagster)."""

import json

import dagster as dg

from pipelines.defs.partitions import partition_to_window, weekly_partitions
from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource
from pipelines.evaluate import active_rules, evaluate_rule
from rules import Rule


def findings_key(rule: Rule) -> dg.AssetKey:
    return dg.AssetKey(["findings", rule.folder])


def _rule_asset(rule: Rule, weeks: dg.PartitionsDefinition) -> dg.AssetsDefinition:
    @dg.asset(
        key=findings_key(rule),
        group_name="rules",
        kinds={"duckdb"},
        pool=WAREHOUSE_POOL,
        partitions_def=weeks,
        deps=list(rule.requires),
        description=f"{rule.id} {rule.name}: {rule.summary}",
        metadata={
            "rule_id": rule.id,
            "category": rule.category,
            "severity": rule.severity,
            "status": rule.status,
        },
    )
    def _asset(context: dg.AssetExecutionContext, wastewatch: WastewatchResource) -> dg.MaterializeResult:
        window = partition_to_window(context.partition_key)
        config = wastewatch.load()
        with wastewatch.warehouse() as con:
            outcome, frame = evaluate_rule(con, config, rule, window)
        preview = frame.head(10).select("status", "resource_id", "team", "estimated_waste", "reason")
        metadata: dict[str, object] = {
            "week": window.label,
            "findings": outcome.findings,
            "waste_findings": outcome.waste_findings,
            "params": dg.MetadataValue.json(outcome.params),
            "preview": dg.MetadataValue.md(_markdown(preview.rows(named=True))),
        }
        for currency, amount in outcome.estimated_waste.items():
            metadata[f"estimated_waste_{currency}"] = dg.MetadataValue.float(float(round(amount, 2)))
        return dg.MaterializeResult(metadata=metadata)

    return _asset


def _markdown(records: list[dict[str, object]]) -> str:
    if not records:
        return "No findings."
    cols = list(records[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in records:
        lines.append(
            "| " + " | ".join(json.dumps(r[c], default=str).strip('"').replace("|", "/") for c in cols) + " |"
        )
    return "\n".join(lines)


@dg.definitions
def rule_assets() -> dg.Definitions:
    weeks = weekly_partitions()  # from history_start: read here, when the definitions are built
    return dg.Definitions(assets=[_rule_asset(rule, weeks) for rule in active_rules()])
