"""Start ingestion when files appear or change in a source: a local folder (name, size, modification
time) or an s3:// prefix (key, size, ETag; one ListObjectsV2 listing per source, nothing downloaded)."""

import hashlib

import dagster as dg

from pipelines.config import ConfigError
from pipelines.defs.jobs import nightly_assets, nightly_ingest
from pipelines.defs.resources import WastewatchResource
from pipelines.errors import S3Error
from pipelines.ingest.files import list_files
from pipelines.net import s3 as s3mod


@dg.sensor(
    name="new_files_sensor",
    job=nightly_ingest,
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Requests an ingestion run when a source's files change (local: name, size, modification time; S3: key, size, ETag).",
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
    unreachable: list[str] = []
    for source in config.sources:
        if not source.enabled or source.is_http:  # an API is read by every run, not watched for files
            continue
        if source.is_s3:
            try:
                files = list_files(config, source, s3mod.client(source))
            except (S3Error, ValueError) as exc:
                # an unreachable bucket is not a change: the nightly run reports it; look again next tick
                context.log.warning(f"source {source.name!r}: {exc}")
                unreachable.append(source.name)
                continue
        else:
            files = list_files(config, source)
        for f in files:
            version = f.etag if source.is_s3 else f.modified_at.isoformat()
            digest.update(f"{source.name}|{f.uri}|{f.size}|{version}\n".encode())
            count += 1
    if unreachable:
        return dg.SkipReason(
            f"source(s) {', '.join(unreachable)} could not be listed; trying again next tick"
        )
    fingerprint = digest.hexdigest()
    if fingerprint == context.cursor:
        return dg.SkipReason(f"no change in {count} source file(s)")
    # what `wastewatch ingest` runs: the tables the sources write, and everything after them
    repo = context.repository_def
    job = repo.get_job(nightly_ingest.name) if repo is not None else None
    request = dg.RunRequest(
        run_key=fingerprint,
        tags={"wastewatch/trigger": "new-files"},
        asset_selection=nightly_assets(job, config) if job is not None else None,
    )
    return dg.SensorResult(run_requests=[request], cursor=fingerprint)


@dg.definitions
def ingest_sensors() -> dg.Definitions:
    return dg.Definitions(sensors=[new_files_sensor])
