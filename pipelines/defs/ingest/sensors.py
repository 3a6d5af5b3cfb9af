"""Start ingestion when files appear or change in a local source folder."""

import hashlib

import dagster as dg

from pipelines.config import ConfigError
from pipelines.defs.jobs import nightly_ingest
from pipelines.defs.resources import WastewatchResource
from pipelines.ingest.files import list_local
from pipelines.ingest.readers import get_reader


@dg.sensor(
    name="new_files_sensor",
    job=nightly_ingest,
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Requests an ingestion run when a source's files change (name, size or modification time).",
)
def new_files_sensor(
    context: dg.SensorEvaluationContext, wastewatch: WastewatchResource
) -> dg.SensorResult | dg.SkipReason:
    try:
        config = wastewatch.load()
    except ConfigError as exc:
        return dg.SkipReason(str(exc))
    digest = hashlib.sha256()
    count = 0
    for source in config.sources:
        if not source.enabled or source.is_s3 or get_reader(source.kind) is None:
            continue
        for f in list_local(config, source):
            digest.update(f"{source.name}|{f.uri}|{f.size}|{f.modified_at.isoformat()}\n".encode())
            count += 1
    fingerprint = digest.hexdigest()
    if fingerprint == context.cursor:
        return dg.SkipReason(f"no change in {count} source file(s)")
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=fingerprint, tags={"wastewatch/trigger": "new-files"})],
        cursor=fingerprint,
    )
