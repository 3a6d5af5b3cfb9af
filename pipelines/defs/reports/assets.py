"""The weekly report files and the published read-only warehouse."""

import time

import dagster as dg

from pipelines import progress
from pipelines.advice import ADVISORS
from pipelines.config import Config
from pipelines.defs.advice.assets import advice_key
from pipelines.defs.ingest.assets import fed_tables
from pipelines.defs.partitions import partition_to_window, weekly_partitions
from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource
from pipelines.defs.rules.assets import findings_key
from pipelines.evaluate import active_rules
from pipelines.health.coverage import no_data_message
from pipelines.marts.registry import MARTS
from pipelines.redact import redact
from pipelines.transform.nothing_new import forget_state, record_state
from pipelines.transform.publish import publish
from pipelines.transform.retention import RETENTION_ASSET


def _weekly_report_asset(weeks: dg.PartitionsDefinition) -> dg.AssetsDefinition:
    @dg.asset(
        key=["reports", "weekly_report"],
        group_name="reports",
        kinds={"duckdb", "html"},
        pool=WAREHOUSE_POOL,
        partitions_def=weeks,
        deps=[findings_key(rule) for rule in active_rules()]
        + [advice_key(advisor) for advisor in ADVISORS]
        + list(MARTS),
        description="report.html, report.md, findings.csv, findings.parquet and teams/<team>.html under "
        "<reports_dir>/<ISO week>/; then publishes the read-only warehouse copy.",
    )
    def weekly_report(
        context: dg.AssetExecutionContext, wastewatch: WastewatchResource
    ) -> dg.MaterializeResult:
        return _write_weekly_report(context, wastewatch)

    return weekly_report


def _write_weekly_report(
    context: dg.AssetExecutionContext, wastewatch: WastewatchResource
) -> dg.MaterializeResult:
    # the report's modules (templates, figures) are imported by the run that writes one, not with the code
    # location: a nightly ingest never needs them
    from pipelines.report import write_report

    window = partition_to_window(context.partition_key)
    config = wastewatch.load()
    started = time.monotonic()
    with wastewatch.warehouse() as con:
        # a week without any data gets no report, as from the CLI: an empty one would read as all fine
        empty = no_data_message(config, window, con, outcome="no report was written")
        if empty is None:
            report = write_report(con, config, window)
    if empty is not None:
        context.log.warning(redact(empty))
        return dg.MaterializeResult(metadata={"week": window.label, "no_data": redact(empty)})
    # optional `notify:` (webhook post, e-mail HTML); a failed post is a warning, never a lost report. Its
    # module (urllib's HTTP client) is imported only when the config has one
    notify = getattr(config, "notify", None)
    done: list[str] = []
    problems: list[str] = []
    if notify is not None:
        from pipelines.report.notify import deliver

        done, problems = deliver(report, notify)
    for problem in problems:
        context.log.warning(redact(problem))
    published = publish(config)
    progress.done(
        f"  report {report.week}: {len(report.files)} file(s) and {len(report.teams)} team page(s), "
        f"warehouse published, in {progress.seconds(started)}"
    )
    metadata: dict[str, object] = {
        "week": report.week,
        "report_html": dg.MetadataValue.path(str(report.files["report.html"])),
        "report_md": dg.MetadataValue.path(str(report.files["report.md"])),
        # findings of waste rules; attention items (untagged spend, budgets, anomalies) are counted apart
        "findings": sum(not f["attention"] for f in report.findings),
        "attention_findings": sum(f["attention"] for f in report.findings),
        "acknowledged_findings": len(report.acknowledged),
        "team_pages": len(report.teams),
        # observed GPU-hours no bill or `pricing:` entry covers: counted, never silently dropped
        "unpriced_gpu_hours": report.unpriced_gpu_hours,
        "unpriced_hosts": len(report.unpriced),
        "published_warehouse": dg.MetadataValue.path(str(published)),
    }
    if report.unpriced_message:
        metadata["unpriced"] = report.unpriced_message
    if done or problems:
        metadata["notify"] = dg.MetadataValue.md("\n".join(f"- {redact(x)}" for x in done + problems))
    savings = report.savings()
    for h in report.headline:
        metadata[f"spend_{h['currency']}"] = dg.MetadataValue.float(float(h["spend"]))
        metadata[f"waste_{h['currency']}"] = dg.MetadataValue.float(float(h["waste"]))
        metadata[f"savings_realised_{h['currency']}"] = dg.MetadataValue.float(
            float(savings.get(h["currency"], 0))
        )
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(
    key="published_warehouse",
    group_name="reports",
    kinds={"duckdb"},
    pool=WAREHOUSE_POOL,
    deps=[*MARTS, RETENTION_ASSET],  # published after every mart is rebuilt and old samples dropped
    description="An atomic read-only copy of the warehouse for ad-hoc queries (`wastewatch sql`, duckdb -readonly).",
)
def published_warehouse(
    context: dg.AssetExecutionContext, wastewatch: WastewatchResource
) -> dg.MaterializeResult:
    config = wastewatch.load()
    # the run's own connection: a second one would set the DuckDB settings again, and DuckDB refuses to
    # move a temp_directory a spilling step has used
    with wastewatch.warehouse() as con:
        # a run that built every ingest and transform asset records what it built from, so that the next
        # ingest with nothing new can stop before Dagster (pipelines/transform/nothing_new.py); any other run forgets it
        if _ran_whole_ingest(context, config):
            record_state(con, config)
        else:
            forget_state(con)
    path = publish(config)
    return dg.MaterializeResult(
        metadata={"path": dg.MetadataValue.path(str(path)), "size_bytes": path.stat().st_size}
    )


def _ran_whole_ingest(context: dg.AssetExecutionContext, config: Config) -> bool:
    """This run materialised every landed table the config's sources write, every mart and the retention
    (the nightly_ingest job; a table no source writes has nothing to load)."""
    wanted = {dg.AssetKey(name) for name in (*fed_tables(config), *MARTS, RETENTION_ASSET)}
    return wanted <= context.job_def.asset_layer.selected_asset_keys


@dg.definitions
def report_assets() -> dg.Definitions:
    # the weekly report's weeks come from history_start: read here, when the definitions are built
    return dg.Definitions(assets=[_weekly_report_asset(weekly_partitions()), published_warehouse])
