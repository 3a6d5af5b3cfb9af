"""One function per action kind: re-check the target right before acting, then act (unless a dry run).

Each returns an Outcome: `would_apply` (dry run: the checks passed, nothing touched), `applied`,
`nothing_to_do` (already in the wanted state, or gone), `refused` (protected, or changed since the plan)
or `failed` (the provider refused the call). Every call goes through boto3 with the configured endpoint,
so S3-compatible stores and moto's server work the same as AWS; provider errors reach the caller as
botocore exceptions and are worded by pipelines.net.s3.problem (redacted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from pipelines.net.s3 import object_pages, problem, split_uri

FALSE_VALUES = {"false", "no", "0"}
DELETE_BATCH = 1000  # DeleteObjects takes at most 1000 keys


@dataclass(frozen=True)
class Outcome:
    result: str
    detail: str
    error: str | None = None


@dataclass(frozen=True)
class Target:
    """What a kind needs: the action's row, a client for its service, the protect tag, dry run or not."""

    action: dict[str, Any]
    client: Any
    protect_tag: str
    dry_run: bool

    @property
    def params(self) -> dict[str, Any]:
        return self.action["params"]


def _protected(tags: dict[str, str], key: str) -> bool:
    return key in tags and tags[key].strip().lower() not in FALSE_VALUES


def _code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    return str(response.get("Error", {}).get("Code", "")) if isinstance(response, dict) else ""


def _utc(value: str | None) -> datetime | None:
    """An ISO timestamp from the plan (`...Z` or naive UTC) as aware UTC."""
    if not value:
        return None
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def stop_instance(t: Target) -> Outcome:
    """Stop an idle EC2 instance: still there, running, not protected, not started again since the plan."""
    from botocore.exceptions import ClientError

    instance_id = t.action["target"]
    try:
        found = t.client.describe_instances(InstanceIds=[instance_id])
    except ClientError as exc:
        if _code(exc).startswith("InvalidInstanceID"):
            return Outcome("nothing_to_do", f"{instance_id} no longer exists")
        raise
    instances = [i for r in found.get("Reservations", []) for i in r.get("Instances", [])]
    if not instances:
        return Outcome("nothing_to_do", f"{instance_id} no longer exists")
    inst = instances[0]
    state = (inst.get("State") or {}).get("Name", "unknown")
    tags = {x["Key"]: x.get("Value", "") for x in inst.get("Tags") or [] if "Key" in x}
    if _protected(tags, t.protect_tag):
        return Outcome("refused", f"{instance_id} is tagged {t.protect_tag}: never touched")
    if state in ("stopped", "stopping", "terminated", "shutting-down"):
        return Outcome("nothing_to_do", f"{instance_id} is already {state}")
    if state != "running":
        return Outcome("refused", f"{instance_id} is {state}, not running: left alone")
    # the finding judged the instance idle in its week; started again after that week, it is another session
    launched = inst.get("LaunchTime")
    week_end = datetime.combine(t.action["week_start"] + timedelta(days=7), time(), tzinfo=UTC)
    if isinstance(launched, datetime) and _aware(launched) > week_end:
        return Outcome(
            "refused",
            f"{instance_id} was started again at {launched:%Y-%m-%d %H:%M} UTC, after the week its finding "
            "judged it idle: evaluate and plan a later week first",
        )
    what = f"{instance_id} ({inst.get('InstanceType', 'instance')}, running)"
    if t.dry_run:
        return Outcome("would_apply", f"would stop {what}")
    t.client.stop_instances(InstanceIds=[instance_id])
    return Outcome("applied", f"stopping {what}")


def _bucket_tags(client: Any, bucket: str) -> dict[str, str] | None:
    """The bucket's tags ({} when it has none); None when the bucket is gone."""
    from botocore.exceptions import ClientError

    try:
        tag_set = client.get_bucket_tagging(Bucket=bucket).get("TagSet", [])
    except ClientError as exc:
        code = _code(exc)
        if code == "NoSuchTagSet":
            return {}
        if code == "NoSuchBucket":
            return None
        raise
    return {x["Key"]: x.get("Value", "") for x in tag_set if "Key" in x}


def _bucket_check(t: Target) -> tuple[str, str, Outcome | None]:
    """The target's bucket and prefix, and an outcome when the bucket is gone or protected."""
    bucket, prefix = split_uri(t.action["target"])
    tags = _bucket_tags(t.client, bucket)
    if tags is None:
        return bucket, prefix, Outcome("nothing_to_do", f"bucket {bucket} no longer exists")
    if _protected(tags, t.protect_tag):
        return bucket, prefix, Outcome("refused", f"bucket {bucket} is tagged {t.protect_tag}: never touched")
    return bucket, prefix, None


def abort_multipart_uploads(t: Target) -> Outcome:
    """Abort the bucket's multipart uploads started before the plan's cutoff (newer ones may be in flight)."""
    from botocore.exceptions import ClientError

    bucket, prefix, early = _bucket_check(t)
    if early:
        return early
    cutoff = _utc(t.params.get("initiated_before"))
    if cutoff is None:
        return Outcome("refused", "the plan names no cutoff for the uploads: plan again")
    stale: list[tuple[str, str]] = []
    for page in t.client.get_paginator("list_multipart_uploads").paginate(Bucket=bucket, Prefix=prefix):
        for u in page.get("Uploads", []):
            if _aware(u["Initiated"]) < cutoff:
                stale.append((u["Key"], u["UploadId"]))
    if not stale:
        return Outcome(
            "nothing_to_do", f"no upload in {bucket} started before {cutoff:%Y-%m-%d %H:%M} UTC is left"
        )
    if t.dry_run:
        return Outcome(
            "would_apply", f"would abort {len(stale)} upload(s) in {bucket} started before {cutoff:%Y-%m-%d}"
        )
    failed: list[str] = []
    for key, upload_id in stale:
        try:
            t.client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
        except ClientError as exc:
            if _code(exc) != "NoSuchUpload":  # completed or aborted since the listing: gone either way
                failed.append(f"{key}: {problem(exc)}")
    if failed:
        return Outcome(
            "failed",
            f"aborted {len(stale) - len(failed)} of {len(stale)} upload(s) in {bucket}",
            "; ".join(failed[:5]),
        )
    return Outcome("applied", f"aborted {len(stale)} upload(s) in {bucket}")


def lifecycle_rule_id(action_id: str) -> str:
    return f"wastewatch-{action_id}"


def lifecycle_transition(t: Target) -> Outcome:
    """Put a lifecycle rule transitioning the prefix's objects to the colder class, keeping the bucket's
    other rules; the rule's ID names the action, so applying again changes nothing."""
    from botocore.exceptions import ClientError

    bucket, prefix, early = _bucket_check(t)
    if early:
        return early
    if not prefix:
        return Outcome(
            "refused", f"{t.action['target']} names no prefix: a whole bucket is not tiered from a finding"
        )
    listed = t.client.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1)
    if not listed.get("KeyCount", len(listed.get("Contents", []))):
        return Outcome("nothing_to_do", f"nothing is stored under {t.action['target']} any more")
    try:
        rules = t.client.get_bucket_lifecycle_configuration(Bucket=bucket).get("Rules", [])
    except ClientError as exc:
        if _code(exc) != "NoSuchLifecycleConfiguration":
            raise
        rules = []
    days, storage_class = int(t.params["days"]), str(t.params["storage_class"])
    rule = {
        "ID": lifecycle_rule_id(t.action["action_id"]),
        "Filter": {"Prefix": prefix},
        "Status": "Enabled",
        "Transitions": [{"Days": days, "StorageClass": storage_class}],
    }
    mine = [r for r in rules if r.get("ID") == rule["ID"]]
    if mine and mine[0].get("Status") == "Enabled" and mine[0].get("Transitions") == rule["Transitions"]:
        return Outcome("nothing_to_do", f"{bucket} already has lifecycle rule {rule['ID']}")
    what = f"lifecycle rule {rule['ID']} on {t.action['target']}: to {storage_class} after {days} days"
    if t.dry_run:
        return Outcome("would_apply", f"would put {what}")
    others = [r for r in rules if r.get("ID") != rule["ID"]]
    t.client.put_bucket_lifecycle_configuration(
        Bucket=bucket, LifecycleConfiguration={"Rules": [*others, rule]}
    )
    return Outcome("applied", f"put {what} ({len(others)} other rule(s) kept)")


def delete_prefix(t: Target) -> Outcome:
    """Delete a failed or unknown run's checkpoints: every object under its prefix, unless one was written
    after the plan's last write (the run may have resumed) or carries the protect tag."""
    bucket, prefix, early = _bucket_check(t)
    if early:
        return early
    if not prefix.strip("/") or not prefix.endswith("/"):
        return Outcome("refused", f"{t.action['target']} is not a run's folder: never deleted as a whole")
    last_write = _utc(t.params.get("last_write"))
    if last_write is None:
        return Outcome("refused", "the plan names no last write for the run: plan again")
    objects = [
        o for page in object_pages(t.client, bucket, prefix) for o in page if not o["Key"].endswith("/")
    ]
    if not objects:
        return Outcome("nothing_to_do", f"nothing is stored under {t.action['target']} any more")
    newer = [o for o in objects if _aware(o["LastModified"]).replace(microsecond=0) > last_write]
    if newer:
        return Outcome(
            "refused",
            f"{len(newer)} object(s) under {t.action['target']} were written after the plan's last write "
            f"({last_write:%Y-%m-%d %H:%M:%S} UTC; the run may have resumed): plan again",
        )
    for o in objects:
        tag_set = t.client.get_object_tagging(Bucket=bucket, Key=o["Key"]).get("TagSet", [])
        tags = {x["Key"]: x.get("Value", "") for x in tag_set if "Key" in x}
        if _protected(tags, t.protect_tag):
            return Outcome(
                "refused", f"s3://{bucket}/{o['Key']} is tagged {t.protect_tag}: the run is never touched"
            )
    size = sum(int(o.get("Size", 0)) for o in objects)
    what = f"{len(objects)} object(s), {size / 2**30:.3f} GiB, under {t.action['target']}"
    if t.dry_run:
        return Outcome("would_apply", f"would delete {what}")
    errors: list[str] = []
    for i in range(0, len(objects), DELETE_BATCH):
        batch = [{"Key": o["Key"]} for o in objects[i : i + DELETE_BATCH]]
        response = t.client.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
        errors.extend(f"{e.get('Key')}: {e.get('Code')}" for e in response.get("Errors", []))
    if errors:
        return Outcome(
            "failed",
            f"deleted {len(objects) - len(errors)} of {len(objects)} object(s)",
            "; ".join(errors[:5]),
        )
    return Outcome("applied", f"deleted {what}")


KINDS: dict[str, tuple[str, Callable[[Target], Outcome]]] = {
    "stop_instance": ("ec2", stop_instance),
    "abort_multipart_uploads": ("s3", abort_multipart_uploads),
    "lifecycle_transition": ("s3", lifecycle_transition),
    "delete_prefix": ("s3", delete_prefix),
}
