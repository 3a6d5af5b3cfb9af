"""One weekly-partitioned findings asset per registered rule (the rules themselves know nothing of Dagster).

The findings assets are one multi-asset (one step, `rules`): each keeps its own asset key and metadata, and
a selection of some of them evaluates only those rules.
"""

import json
from collections.abc import Iterator

import dagster as dg
import duckdb

from pipelines.config import Config
from pipelines.defs.partitions import partition_to_window, weekly_partitions
from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource
from pipelines.evaluate import active_rules, evaluate_rule
from rules import Rule, Window


def findings_key(rule: Rule) -> dg.AssetKey:
    return dg.AssetKey(["findings", rule.folder])


def _rule_spec(rule: Rule) -> dg.AssetSpec:
    return dg.AssetSpec(
        key=findings_key(rule),
        group_name="rules",
        kinds={"duckdb"},
        deps=list(rule.requires),
        description=f"{rule.id} {rule.name}: {rule.summary}",
        metadata={
            "rule_id": rule.id,
            "category": rule.category,
            "severity": rule.severity,
            "status": rule.status,
        },
    )


def _evaluate(
    con: duckdb.DuckDBPyConnection, config: Config, rule: Rule, window: Window
) -> dg.MaterializeResult:
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
    return dg.MaterializeResult(asset_key=findings_key(rule), metadata=metadata)


def _rules_asset(rules: tuple[Rule, ...], weeks: dg.PartitionsDefinition) -> dg.AssetsDefinition:
    @dg.multi_asset(
        name="rules",
        specs=[_rule_spec(rule) for rule in rules],
        partitions_def=weeks,
        can_subset=True,
        pool=WAREHOUSE_POOL,
        description="Evaluates the selected rules for the week, one after another.",
    )
    def _asset(
        context: dg.AssetExecutionContext, wastewatch: WastewatchResource
    ) -> Iterator[dg.MaterializeResult]:
        window = partition_to_window(context.partition_key)
        config = wastewatch.load()
        selected = context.selected_asset_keys
        with wastewatch.warehouse() as con:
            for rule in rules:
                if findings_key(rule) in selected:
                    yield _evaluate(con, config, rule, window)

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
    return dg.Definitions(assets=[_rules_asset(active_rules(), weeks)])
