"""Landed tables: one asset per warehouse table that readers write (all sources of the kinds feeding it).

The tables are one multi-asset (one step, `landed_tables`): each keeps its own asset key, metadata and
checks, and a selection of some of them loads only theirs; one step saves Dagster's per-step bookkeeping.
A table no enabled source writes has nothing to load: a nightly ingest leaves it out (`fed_tables`).
"""

from collections.abc import Iterator

import dagster as dg

from pipelines.config import Config
from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource
from pipelines.health.freshness import stale_sources
from pipelines.ingest import ingest
from pipelines.ingest.billing.checks import focus_conformance, reconciliation, tag_coverage
from pipelines.redact import redact
from pipelines.sources.registry import kinds_writing, source_kind
from pipelines.warehouse import rows, scalar, utcnow

# landed tables that have an ingestion asset (a table appears here once its DDL is in sql/raw/)
INGEST_TABLES = (
    "billing_line_items",
    "gpu_samples",
    "gpu_hourly_stats",
    "jobs",
    "inventory_hosts",
    "log_groups",
    "storage_objects",
    "train_steps",
)

DESCRIPTIONS = {
    "billing_line_items": "FOCUS-shaped billing line items from every billing source (new and changed files only).",
    "gpu_samples": "GPU telemetry samples (UTC, one row per GPU per sample) from every telemetry source.",
    "gpu_hourly_stats": "Hourly GPU statistics (mean, p95, max, coverage per GPU) a metrics store computed "
    "from its own samples (PromQL *_over_time at step=1h), rolled up with gpu_samples.",
    "jobs": "Scheduler jobs (Slurm, Kubernetes, CSV): who held which GPUs on which hosts, when, and how it ended.",
    "inventory_hosts": "Hosts known to an inventory (EC2 DescribeInstances, hosts CSV): host <-> instance id.",
    "log_groups": "Log groups with their retention setting and stored bytes (CloudWatch Logs DescribeLogGroups, "
    "or its saved output), one listing per source and day: what STO005 prices retention from.",
    "train_steps": "Training throughput log lines (tokens, step time, parameter count) from every train_log "
    "source: what MFU is measured from.",
    "storage_objects": "Object-store and file-system objects per inventory date (S3 Inventory, listings, scans); "
    "incomplete multipart uploads land in storage_uploads.",
}


def fed_tables(config: Config) -> tuple[str, ...]:
    """The landed tables the config's enabled sources write, in INGEST_TABLES' order: what an ingest can
    load (a disabled source is not read)."""
    targets = {source_kind(s.kind).target for s in config.sources if s.enabled}
    return tuple(t for t in INGEST_TABLES if t in targets)


def _ingest_table(
    context: dg.AssetExecutionContext, wastewatch: WastewatchResource, config: Config, table: str
) -> dg.MaterializeResult:
    with wastewatch.warehouse() as con:
        report = ingest(con, config, targets=(table,), log=context.log.debug)
        total = scalar(con, f"select count(*) from {table}")  # noqa: S608 - our constant
        stale = stale_sources(con, config, utcnow(), table)
        metadata: dict[str, object] = {
            "files_loaded": len(report.of("loaded")),
            "files_unchanged": len(report.of("unchanged")),
            "files_rejected": len(report.rejected),
            "files_duplicate": len(report.of("duplicate")),
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
        context.log.info(redact(note))
    for failure in report.failures:
        context.log.warning(redact(failure))
    for outcome in report.rejected:
        context.log.warning(redact(outcome.error or outcome.uri))
    if report.of("duplicate"):  # copies of content the warehouse holds: reported, never loaded
        metadata["duplicates"] = dg.MetadataValue.md(
            "\n".join(f"- {redact(o.error or o.uri)}" for o in report.of("duplicate"))
        )
    if report.rejected:
        metadata["rejected"] = dg.MetadataValue.md("\n".join(f"- {redact(o.error)}" for o in report.rejected))
    if report.skipped:  # files no reader claims: listed, not a failure
        metadata["files_skipped"] = len(report.skipped)
        metadata["skipped"] = dg.MetadataValue.md(
            "\n".join(f"- {redact(uri)}: {why}" for _, uri, why in report.skipped)
        )
        for _, uri, why in report.skipped:
            context.log.info(redact(f"skipped {uri}: {why}"))
    # sources that could not be read at all: the CLI prints them and exits 1
    metadata["source_failures"] = dg.MetadataValue.json([redact(f) for f in report.failures])
    check = dg.AssetCheckResult(
        asset_key=table,
        check_name="no_rejected_files",
        passed=not report.rejected and not report.failures,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"files_rejected": len(report.rejected)}
        | ({"sources_failed": len(report.failures)} if report.failures else {}),
    )
    for s in stale:
        context.log.info(redact(s.problem))
    fresh = dg.AssetCheckResult(
        asset_key=table,
        check_name="sources_fresh",
        passed=not stale,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"stale": dg.MetadataValue.md("\n".join(f"- {redact(s.problem)}" for s in stale) or "none")},
    )
    checks = [check, fresh] + (billing_check_results(wastewatch) if table == "billing_line_items" else [])
    return dg.MaterializeResult(asset_key=table, metadata=metadata, check_results=checks)


def billing_check_results(wastewatch: WastewatchResource) -> list[dg.AssetCheckResult]:
    """Reconciliation (ledger vs file vs table; blocking), tag coverage and FOCUS conformance (both warn)
    on billing_line_items."""
    with wastewatch.warehouse() as con:
        rec, cov, focus = reconciliation(con), tag_coverage(con), focus_conformance(con)
    rec_meta: dict[str, object] = dict(rec.metadata)
    if rec.problems:
        rec_meta["problems"] = dg.MetadataValue.md("\n".join(f"- {redact(p)}" for p in rec.problems[:50]))
    return [
        dg.AssetCheckResult(
            asset_key="billing_line_items",
            check_name="billing_reconciled",
            passed=rec.passed,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata=rec_meta,
        ),
        dg.AssetCheckResult(
            asset_key="billing_line_items",
            check_name="tag_coverage",
            passed=cov.passed,
            severity=dg.AssetCheckSeverity.WARN,
            metadata=cov.metadata,
        ),
        dg.AssetCheckResult(
            asset_key="billing_line_items",
            check_name="focus_conformance",
            passed=focus.passed,
            severity=dg.AssetCheckSeverity.WARN,
            metadata=focus.metadata,
        ),
    ]


# the billing table's extra checks (beside no_rejected_files)
BILLING_CHECKS = (
    (
        "billing_reconciled",
        "Every loaded billing file: rows and billed/effective sums counted from the file = what the ledger "
        "recorded = what billing_line_items holds, per file and per billing period; no orphan lines.",
        True,
    ),
    (
        "tag_coverage",
        "Share of effective cost (positive lines) with a canonical `team` tag, per currency; warns below 80%.",
        False,
    ),
    (
        "focus_conformance",
        "FOCUS 1.2 rules that matter for money (ChargeCategory, ChargeClass, ServiceCategory/Subcategory, "
        "PricingCategory, CommitmentDiscount columns, charge period inside the billing period, cost columns "
        "set, ListCost/ContractedCost present and of BilledCost's sign): lines and spend breaking each, per "
        "source; warns (providers' own exports often break some).",
        False,
    ),
)


def _table_spec(table: str) -> dg.AssetSpec:
    kinds = sorted(kinds_writing(table))
    return dg.AssetSpec(
        key=table,
        group_name="ingest",
        kinds={"duckdb"},
        description=f"{DESCRIPTIONS[table]} Source kinds: {', '.join(kinds)}.",
    )


def _table_checks(table: str) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(
            "no_rejected_files",
            asset=table,
            description="Every file of this run's sources loaded (rejected files are listed in ingest_files).",
        ),
        dg.AssetCheckSpec(
            "sources_fresh",
            asset=table,
            description="Every source delivered something new within its expected cadence (expected_every) "
            "and no telemetry host fell silent or sparse (host_silence).",
        ),
    ] + [
        dg.AssetCheckSpec(name, asset=table, description=text, blocking=blocking)
        for name, text, blocking in (BILLING_CHECKS if table == "billing_line_items" else ())
    ]


@dg.multi_asset(
    name="landed_tables",
    specs=[_table_spec(table) for table in INGEST_TABLES],
    check_specs=[spec for table in INGEST_TABLES for spec in _table_checks(table)],
    can_subset=True,
    pool=WAREHOUSE_POOL,
    description="Loads the new and changed files of every source into the landed tables, one table at a time.",
)
def landed_tables(
    context: dg.AssetExecutionContext, wastewatch: WastewatchResource
) -> Iterator[dg.MaterializeResult]:
    config, selected = wastewatch.load(), context.selected_asset_keys
    for table in INGEST_TABLES:
        if dg.AssetKey(table) in selected:
            yield _ingest_table(context, wastewatch, config, table)


@dg.definitions
def ingest_assets() -> dg.Definitions:
    return dg.Definitions(assets=[landed_tables])
