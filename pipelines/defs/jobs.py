"""Jobs and schedules: nightly ingestion at 02:00 UTC, the weekly evaluate + report on Monday 06:00 UTC.

Both run in-process (one Python process, one DuckDB writer at a time); the CLI runs the same jobs.
"""

from __future__ import annotations

import dagster as dg

from pipelines.defs.partitions import weekly_partitions

INGEST_SELECTION = dg.AssetSelection.groups("ingest", "transform") | dg.AssetSelection.assets(
    "published_warehouse"
)
WEEKLY_SELECTION = dg.AssetSelection.groups("rules") | dg.AssetSelection.assets(["reports", "weekly_report"])

nightly_ingest = dg.define_asset_job(
    "nightly_ingest",
    selection=INGEST_SELECTION,
    executor_def=dg.in_process_executor,
    description="Load new and changed files, rebuild the marts, publish the read-only warehouse.",
)

weekly_report_job = dg.define_asset_job(
    "weekly_report",
    selection=WEEKLY_SELECTION,
    partitions_def=weekly_partitions,
    executor_def=dg.in_process_executor,
    description="Evaluate every rule for an ISO week and write that week's report.",
)

nightly_ingest_schedule = dg.ScheduleDefinition(
    name="nightly_ingest_schedule",
    job=nightly_ingest,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    description="Every night at 02:00 UTC.",
)

weekly_report_schedule = dg.build_schedule_from_partitioned_job(
    weekly_report_job,
    name="weekly_report_schedule",
    hour_of_day=6,
    minute_of_hour=0,
    description="Every Monday at 06:00 UTC, for the ISO week that just ended.",
)
