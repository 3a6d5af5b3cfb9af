"""Jobs and schedules: nightly ingestion at 02:00 UTC, the weekly evaluate + report on Monday 06:00 UTC
(the daily alert's job and schedule are in pipelines/defs/alerts.py).

Both run in-process (one Python process, one DuckDB writer at a time); the CLI runs the same jobs.
"""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg

from pipelines.config import Config
from pipelines.defs.ingest.assets import INGEST_TABLES, fed_tables
from pipelines.defs.partitions import last_complete_week, week_to_partition
from pipelines.defs.resources import WastewatchResource
from pipelines.redact import redact
from pipelines.transform import nothing_new

INGEST_JOB, WEEKLY_JOB = "nightly_ingest", "weekly_report"
REPORT_KEY = dg.AssetKey(["reports", "weekly_report"])
INGEST_SELECTION = dg.AssetSelection.groups("ingest", "transform") | dg.AssetSelection.assets(
    "published_warehouse"
)
EVALUATE_SELECTION = dg.AssetSelection.groups("rules", "advice")  # `wastewatch evaluate`: no report
WEEKLY_SELECTION = EVALUATE_SELECTION | dg.AssetSelection.assets(REPORT_KEY)


def nightly_assets(job: dg.JobDefinition, config: Config) -> list[dg.AssetKey] | None:
    """What a `nightly_ingest` run of this config materialises: the job's assets less the landed tables no
    enabled source writes (nothing to load; their empty tables exist from the schema), each of which would
    cost Dagster a materialisation and two checks with nothing in them. None: the whole job."""
    unfed = {dg.AssetKey(t) for t in INGEST_TABLES if t not in fed_tables(config)}
    if not unfed:
        return None
    return sorted(job.asset_layer.selected_asset_keys - unfed)


nightly_ingest = dg.define_asset_job(
    INGEST_JOB,
    selection=INGEST_SELECTION,
    executor_def=dg.in_process_executor,
    description="Load new and changed files, rebuild the marts, publish the read-only warehouse.",
)

weekly_report_job = dg.define_asset_job(
    WEEKLY_JOB,
    selection=WEEKLY_SELECTION,  # weekly-partitioned assets: the job's partitions are inferred from them
    executor_def=dg.in_process_executor,
    description="Evaluate every rule and advisor for an ISO week and write that week's report.",
)


@dg.schedule(
    name="nightly_ingest_schedule",
    job=nightly_ingest,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    description="Every night at 02:00 UTC, unless nothing is new since the last full run.",
)
def nightly_ingest_schedule(
    context: dg.ScheduleEvaluationContext, wastewatch: WastewatchResource
) -> dg.RunRequest | dg.SkipReason:
    # the check `wastewatch ingest` makes before starting a run (pipelines/transform/nothing_new.py); anything it
    # cannot read (a config error, a busy warehouse) starts the run, which reports it
    try:
        config = wastewatch.load()
        found = nothing_new.check(config)
    except Exception as exc:  # noqa: BLE001 - any doubt means a run
        context.log.warning(f"nothing-new check failed, running: {redact(str(exc))}")
        return dg.RunRequest()
    if found.nothing_new:
        return dg.SkipReason(
            f"nothing new since the run of {found.recorded_at:%Y-%m-%d %H:%M} UTC: every source lists the "
            "files it loaded"
        )
    # the tables the config's sources write, and everything after them, as `wastewatch ingest` runs it
    repo = context.repository_def
    job = repo.get_job(INGEST_JOB) if repo is not None else None
    return dg.RunRequest(asset_selection=nightly_assets(job, config) if job is not None else None)


# Not `build_schedule_from_partitioned_job`: the weekly partitions include the current, unfinished week
# (end_offset=1, so `wastewatch evaluate --week` works mid-week), and a schedule built from the job would
# target that newest partition, i.e. the week that started minutes ago. The report is for the week that ended.
@dg.schedule(
    name="weekly_report_schedule",
    job=weekly_report_job,
    cron_schedule="0 6 * * 1",
    execution_timezone="UTC",
    description="Every Monday at 06:00 UTC, for the ISO week that just ended.",
)
def weekly_report_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    tick = context.scheduled_execution_time or datetime.now(UTC)
    week = last_complete_week(tick.astimezone(UTC).date())
    partition_key = week_to_partition(week)
    # the weeks start at history_start (default the earliest data): a week before it is skipped, saying why
    repo = context.repository_def
    weeks = repo.get_job(weekly_report_job.name).partitions_def if repo is not None else None
    if weeks is not None:
        keys = weeks.get_partition_keys(current_time=tick)
        if partition_key not in keys:
            return dg.SkipReason(
                f"{week}: no data before {keys[0] if keys else 'this week'} (history_start, default the "
                "earliest data in the warehouse): nothing to report on"
            )
    return dg.RunRequest(run_key=partition_key, partition_key=partition_key)


@dg.definitions
def job_defs() -> dg.Definitions:
    return dg.Definitions(
        jobs=[nightly_ingest, weekly_report_job], schedules=[nightly_ingest_schedule, weekly_report_schedule]
    )
