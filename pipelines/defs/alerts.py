"""The daily alert for live, expensive waste (`wastewatch alert`, docs/alerts.md): its job and its schedule,
every day at 05:00 UTC, after the nightly ingestion (pipelines/defs/jobs.py)."""

from datetime import UTC, datetime

import dagster as dg

from pipelines.defs.resources import WAREHOUSE_POOL, WastewatchResource
from pipelines.redact import redact


@dg.op(
    pool=WAREHOUSE_POOL,
    description="Post the GPU001/GPU004 waste still running and above alert.min_daily_waste, once per finding "
    "until it changes (`wastewatch alert`); a failed post fails the run and records nothing as sent.",
)
def live_waste_alert(context: dg.OpExecutionContext, wastewatch: WastewatchResource) -> None:
    # imported by the run, not with the code location: an ingest or a weekly run never needs it
    from pipelines.report.alert import AlertError, run_alert

    config = wastewatch.load()
    if config.alert is None:
        context.log.info("no `alert:` section in the config: nothing to check")
        return
    with wastewatch.warehouse() as con:
        try:
            run = run_alert(con, config)
        except AlertError as exc:
            raise dg.Failure(description=redact(str(exc))) from None
    result = run.check
    context.log.info(
        redact(
            f"as of {result.as_of}: {len(result.live)} finding(s) still running, {len(result.to_send)} posted"
            + (f" to {run.posted_to}" if run.posted_to else "")
        )
    )


@dg.job(
    name="daily_alert",
    executor_def=dg.in_process_executor,
    description="The daily alert for live, expensive waste (docs/alerts.md).",
)
def daily_alert_job() -> None:
    live_waste_alert()


@dg.schedule(
    name="daily_alert_schedule",
    job=daily_alert_job,
    cron_schedule="0 5 * * *",
    execution_timezone="UTC",
    description="Every day at 05:00 UTC, after the nightly ingestion; skipped without an `alert:` section.",
)
def daily_alert_schedule(
    context: dg.ScheduleEvaluationContext, wastewatch: WastewatchResource
) -> dg.RunRequest | dg.SkipReason:
    if wastewatch.load().alert is None:
        return dg.SkipReason("no `alert:` section in the config: nothing to check (docs/alerts.md)")
    tick = (context.scheduled_execution_time or datetime.now(UTC)).astimezone(UTC)
    return dg.RunRequest(run_key=f"alert-{tick:%Y-%m-%d}")


@dg.definitions
def alert_defs() -> dg.Definitions:
    return dg.Definitions(jobs=[daily_alert_job], schedules=[daily_alert_schedule])
