"""`wastewatch remediate plan|apply` against moto's server: each action kind, the refusals, a target that
changed between plan and apply, the approval rules, the audit trail and idempotence."""

from __future__ import annotations

import json
import socket
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import duckdb
from click.testing import CliRunner, Result

from pipelines.cli import main
from pipelines.config import load_config
from rules import Window
from tests.helpers.empty_warehouse import open_current
from tests.helpers.report import put_findings
from tests.remediate.conftest import Site, this_week

PAST_WEEK = Window.iso_week("2026-W40")


def cli(site: Site, *args: str) -> Result:
    return CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(
        main, ["--config", str(site.config_path), "-q", *args], catch_exceptions=False
    )


def put(site: Site, rule_id: str, items: list[dict[str, Any]], window: Window | None = None) -> None:
    con = open_current(load_config(site.config_path).warehouse_path)
    try:
        put_findings(con, window or this_week(), rule_id, items)
    finally:
        con.close()


def query(site: Site, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(load_config(site.config_path).warehouse_path), read_only=True)
    try:
        return con.execute(sql, params or {}).fetchall()
    finally:
        con.close()


def plan(site: Site, window: Window | None = None) -> dict[str, dict[str, Any]]:
    """Run `remediate plan`; the JSON plan's actions by target."""
    window = window or this_week()
    result = cli(site, "remediate", "plan", "--week", window.label)
    assert result.exit_code == 0, result.output
    doc = json.loads(
        (load_config(site.config_path).reports_path / window.label / "remediation-plan.json").read_text()
    )
    return {a["target"]: a for group in doc["owners"] for a in group["actions"]}


def instance(site: Site, tags: dict[str, str] | None = None) -> str:
    ec2 = site.client("ec2")
    spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in (tags or {}).items()]}]
    r = ec2.run_instances(
        ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="p4d.24xlarge",
        **({"TagSpecifications": spec} if tags else {}),
    )  # fmt: skip
    return r["Instances"][0]["InstanceId"]


def state_of(site: Site, instance_id: str) -> str:
    found = site.client("ec2").describe_instances(InstanceIds=[instance_id])
    return found["Reservations"][0]["Instances"][0]["State"]["Name"]


def idle(site: Site, instance_id: str, window: Window | None = None, **more: Any) -> str:
    """A GPU001 finding for the instance; returns its action id from a fresh plan."""
    window = window or this_week()
    put(site, "GPU001", [{"resource_id": instance_id, "estimated_waste": 120.5, "region_id": "us-east-1",
                          "team": "nlp", "owner": "alice", **more}], window)  # fmt: skip
    return plan(site, window)[instance_id]["action_id"]


def checkpoints(site: Site, prefix: str, keys: int = 3, tags: dict[str, str] | None = None) -> None:
    s3 = site.client("s3")
    s3.create_bucket(Bucket=site.bucket) if not _exists(s3, site.bucket) else None
    for i in range(keys):
        extra = {"Tagging": "&".join(f"{k}={v}" for k, v in tags.items())} if tags and i == 0 else {}
        s3.put_object(Bucket=site.bucket, Key=f"{prefix}step-{i}/model.pt", Body=b"x" * 1024, **extra)


def _exists(s3: Any, bucket: str) -> bool:
    return bucket in {b["Name"] for b in s3.list_buckets()["Buckets"]}


def keys_under(site: Site, prefix: str) -> list[str]:
    listed = site.client("s3").list_objects_v2(Bucket=site.bucket, Prefix=prefix)
    return sorted(o["Key"] for o in listed.get("Contents", []))


def orphaned(site: Site, prefix: str, last_write: datetime | None = None) -> str:
    """An STO001 finding (a failed run) for s3://bucket/prefix; returns its action id from a fresh plan."""
    written = (last_write or datetime.now(UTC) + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    target = f"s3://{site.bucket}/{prefix}"
    put(site, "STO001", [{"resource_id": target, "estimated_waste": 2.5, "resource_type": "checkpoint run",
                          "evidence": {"category": "failed", "last_write": written, "objects": 3}}])  # fmt: skip
    return plan(site)[target]["action_id"]


def log(site: Site, action_id: str) -> list[tuple[Any, ...]]:
    return query(
        site,
        "select event, actor, dry_run, result from remediation_log where action_id = $a order by logged_at",
        {"a": action_id},
    )


def test_plan_lists_one_action_per_actionable_finding_grouped_by_owner(site: Site) -> None:
    """Waste findings of the four rules become actions; suspect findings and other rules do not; a host
    wastewatch cannot stop and a superseded run are listed for other tooling, not applied."""
    put(site, "GPU001", [
        {"resource_id": "i-0123456789abcdef0", "estimated_waste": 50, "team": "nlp", "owner": "alice",
         "region_id": "eu-west-1"},
        {"resource_id": "gpu-node-07", "estimated_waste": 30, "team": "vision"},
        {"resource_id": "i-0aaaaaaaaaaaaaaa1", "estimated_waste": 9, "status": "suspect"},
    ])  # fmt: skip
    put(site, "GPU002", [{"resource_id": "i-0bbbbbbbbbbbbbbb2", "estimated_waste": 40}])
    put(site, "STO001", [
        {"resource_id": "s3://ckpt/llm/run-1/", "estimated_waste": 2, "owner": "alice",
         "evidence": {"category": "unknown", "last_write": "2026-11-01T10:00:00Z", "objects": 4, "bytes": 4096}},
        {"resource_id": "s3://ckpt/llm/run-2/", "estimated_waste": 1, "owner": "alice",
         "evidence": {"category": "superseded", "last_write": "2026-11-01T10:00:00Z"}},
    ])  # fmt: skip
    put(site, "STO003", [{"resource_id": "s3://ckpt/llm/run-3/", "estimated_waste": 0.5, "team": "nlp",
                          "params": json.dumps({"min_age_days": 45, "target_class": "GLACIER_IR"}),
                          "evidence": {"target_class": "GLACIER_IR"}}])  # fmt: skip
    as_of = (this_week().end).strftime("%Y-%m-%dT%H:%M:%SZ")
    put(site, "STO004", [{"resource_id": "gs://other-cloud/", "estimated_waste": 0.25,
                          "params": json.dumps({"min_age_days": 7}), "evidence": {"as_of": as_of}}])  # fmt: skip
    actions = plan(site)
    assert {t: (a["kind"], a["executable"], a["destructive"]) for t, a in actions.items()} == {
        "i-0123456789abcdef0": ("stop_instance", True, False),
        "gpu-node-07": ("stop_instance", False, False),
        "s3://ckpt/llm/run-1/": ("delete_prefix", True, True),
        "s3://ckpt/llm/run-2/": ("delete_prefix", False, True),
        "s3://ckpt/llm/run-3/": ("lifecycle_transition", True, False),
        "gs://other-cloud/": ("abort_multipart_uploads", False, True),
    }
    assert actions["i-0123456789abcdef0"]["params"]["region"] == "eu-west-1"
    assert actions["s3://ckpt/llm/run-1/"]["params"] == {
        "category": "unknown", "last_write": "2026-11-01T10:00:00Z", "objects": 4, "bytes": 4096,
    }  # fmt: skip
    assert actions["s3://ckpt/llm/run-3/"]["params"] == {
        "storage_class": "GLACIER_IR",
        "days": 45,
        "bytes": None,
    }
    cutoff = (this_week().end - timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert actions["gs://other-cloud/"]["params"]["initiated_before"] == cutoff
    assert "Slurm, Kubernetes" in actions["gpu-node-07"]["manual_reason"]
    doc = json.loads(
        (load_config(site.config_path).reports_path / this_week().label / "remediation-plan.json").read_text()
    )
    assert {g["owner"]: sorted(a["target"] for a in g["actions"]) for g in doc["owners"]} == {
        "alice": ["i-0123456789abcdef0", "s3://ckpt/llm/run-1/", "s3://ckpt/llm/run-2/"],
        "nlp": ["s3://ckpt/llm/run-3/"],
        "vision": ["gpu-node-07"],
        "unassigned": ["gs://other-cloud/"],
    }
    assert {g["owner"]: g["estimated_waste"] for g in doc["owners"]}["alice"] == {"USD": "53.000000"}
    # planning again changes nothing: the same ids, one row each
    again = plan(site)
    assert {t: a["action_id"] for t, a in again.items()} == {t: a["action_id"] for t, a in actions.items()}
    assert query(site, "select count(*), count(distinct action_id) from remediation_actions") == [(6, 6)]


def test_stop_instance_dry_run_then_apply_then_apply_again(site: Site) -> None:
    """Approve (a dry run: nothing stopped), apply with --yes (stopped), apply again (nothing to do, exit 0);
    every step is in remediation_log with who, dry run or not, and the result."""
    iid = instance(site)
    action = idle(site, iid)
    first = cli(site, "remediate", "apply", action, "--approve", "idle all week", "--by", "ops-anna")
    assert first.exit_code == 0, first.output
    assert "would_apply: would stop" in first.output and "dry run: nothing was touched" in first.output
    assert state_of(site, iid) == "running"
    second = cli(site, "remediate", "apply", action, "--yes", "--by", "ops-ben")
    assert second.exit_code == 0, second.output
    assert f"{action}  stop_instance {iid}: applied: stopping {iid} (p4d.24xlarge, running)" in second.output
    assert state_of(site, iid) in ("stopping", "stopped")
    third = cli(site, "remediate", "apply", action, "--yes", "--by", "ops-ben")
    assert third.exit_code == 0, third.output
    assert "nothing_to_do" in third.output and "already stop" in third.output
    assert log(site, action) == [
        ("approve", "ops-anna", False, "approved"),
        ("apply", "ops-anna", True, "would_apply"),
        ("apply", "ops-ben", False, "applied"),
        ("apply", "ops-ben", False, "nothing_to_do"),
    ]
    assert query(site, "select state from remediation_actions where action_id = $a", {"a": action}) == [
        ("done",)
    ]
    reason = query(
        site, "select reason from remediation_log where event = 'approve' and action_id = $a", {"a": action}
    )
    assert reason == [("idle all week",)]


def test_apply_without_an_approval_is_refused_and_touches_nothing(site: Site) -> None:
    iid = instance(site)
    action = idle(site, iid)
    result = cli(site, "remediate", "apply", action, "--yes")
    assert result.exit_code == 1
    assert "refused: not approved" in result.output and "1 of 1 action(s) refused or failed" in result.output
    assert state_of(site, iid) == "running"


def test_a_protected_instance_is_never_touched(site: Site) -> None:
    iid = instance(site, {"wastewatch:protect": "true", "team": "nlp"})
    action = idle(site, iid)
    result = cli(site, "remediate", "apply", action, "--approve", "idle", "--yes")
    assert result.exit_code == 1
    assert f"refused: {iid} is tagged wastewatch:protect: never touched" in result.output
    assert state_of(site, iid) == "running"
    assert log(site, action)[-1][2:] == (False, "refused")


def test_the_protect_tag_is_configurable(site: Site) -> None:
    text = site.config_path.read_text() + "  protect_tag: keep-me\n"
    site.config_path.write_text(text)
    kept, plain = instance(site, {"keep-me": "yes"}), instance(site, {"wastewatch:protect": "false"})
    a_kept, a_plain = idle(site, kept), idle(site, plain)
    result = cli(site, "remediate", "apply", a_kept, a_plain, "--approve", "idle", "--yes")
    assert result.exit_code == 1
    assert state_of(site, kept) == "running" and state_of(site, plain) in ("stopping", "stopped")


def test_an_acknowledged_target_is_never_touched(site: Site) -> None:
    """A finding acknowledged after the plan (a known exception) is refused at apply, even approved."""
    iid = instance(site)
    action = idle(site, iid)
    acked = cli(
        site,
        "ack",
        f"GPU001:{iid}",
        "--until",
        f"{date.today() + timedelta(days=30)}",
        "--reason",
        "warm pool",
    )
    assert acked.exit_code == 0, acked.output
    result = cli(site, "remediate", "apply", action, "--approve", "idle", "--yes")
    assert result.exit_code == 1
    assert "refused: acknowledged until" in result.output and "warm pool" in result.output
    assert state_of(site, iid) == "running"
    # and a plan made after the ack no longer lists it
    assert iid not in plan(site)


def test_an_instance_stopped_between_plan_and_apply_is_left_alone(site: Site) -> None:
    iid = instance(site)
    action = idle(site, iid)
    site.client("ec2").stop_instances(InstanceIds=[iid])
    result = cli(site, "remediate", "apply", action, "--approve", "idle", "--yes")
    assert result.exit_code == 0, result.output
    assert "nothing_to_do" in result.output
    assert log(site, action)[-1][3] == "nothing_to_do"


def test_an_instance_started_after_its_idle_week_is_refused(site: Site) -> None:
    """The finding judged an earlier week; an instance launched since is another session, not the idle one."""
    iid = instance(site)
    action = idle(site, iid, PAST_WEEK)
    result = cli(site, "remediate", "apply", action, "--approve", "idle", "--yes")
    assert result.exit_code == 1
    assert "was started again" in result.output
    assert state_of(site, iid) == "running"


def test_delete_needs_an_approval_from_an_earlier_run(site: Site) -> None:
    """Approving and applying a delete in one command deletes nothing; a later run deletes the run's
    checkpoints, and only them; applying again finds nothing to do."""
    checkpoints(site, "llm/run-9/")
    checkpoints(site, "llm/run-10/")
    action = orphaned(site, "llm/run-9/")
    same_run = cli(site, "remediate", "apply", action, "--approve", "run failed, never resumed", "--yes")
    assert same_run.exit_code == 1
    assert "needs an approval given in an earlier run" in same_run.output
    assert len(keys_under(site, "llm/run-9/")) == 3
    later = cli(site, "remediate", "apply", action, "--yes")
    assert later.exit_code == 0, later.output
    assert "applied: deleted 3 object(s)" in later.output
    assert keys_under(site, "llm/run-9/") == [] and len(keys_under(site, "llm/run-10/")) == 3
    again = cli(site, "remediate", "apply", action, "--yes")
    assert again.exit_code == 0 and "nothing_to_do: nothing is stored under" in again.output
    assert [r[3] for r in log(site, action)] == ["approved", "refused", "applied", "nothing_to_do"]


def test_a_destructive_dry_run_waits_for_a_later_run(site: Site) -> None:
    checkpoints(site, "llm/run-11/")
    action = orphaned(site, "llm/run-11/")
    result = cli(site, "remediate", "apply", action, "--approve", "failed run")
    assert result.exit_code == 0, result.output
    assert "awaiting_approval: would delete 3 object(s)" in result.output
    assert len(keys_under(site, "llm/run-11/")) == 3


def test_a_run_written_after_the_plan_is_not_deleted(site: Site) -> None:
    """Objects newer than the plan's last write (the run resumed) make the delete refuse."""
    checkpoints(site, "llm/run-12/")
    action = orphaned(site, "llm/run-12/", last_write=datetime(2026, 1, 1, tzinfo=UTC))
    cli(site, "remediate", "apply", action, "--approve", "failed run")
    result = cli(site, "remediate", "apply", action, "--yes")
    assert result.exit_code == 1
    assert "were written after the plan's last write" in result.output
    assert len(keys_under(site, "llm/run-12/")) == 3


def test_a_protected_object_or_bucket_keeps_the_run(site: Site) -> None:
    checkpoints(site, "llm/run-13/", tags={"wastewatch:protect": "paper"})
    action = orphaned(site, "llm/run-13/")
    cli(site, "remediate", "apply", action, "--approve", "failed run")
    result = cli(site, "remediate", "apply", action, "--yes")
    assert result.exit_code == 1 and "is tagged wastewatch:protect" in result.output
    assert len(keys_under(site, "llm/run-13/")) == 3
    site.client("s3").put_bucket_tagging(
        Bucket=site.bucket, Tagging={"TagSet": [{"Key": "wastewatch:protect", "Value": "yes"}]}
    )
    checkpoints(site, "llm/run-14/")
    other = orphaned(site, "llm/run-14/")
    cli(site, "remediate", "apply", other, "--approve", "failed run")
    result = cli(site, "remediate", "apply", other, "--yes")
    assert result.exit_code == 1 and f"bucket {site.bucket} is tagged wastewatch:protect" in result.output
    assert len(keys_under(site, "llm/run-14/")) == 3


def test_abort_incomplete_multipart_uploads(site: Site) -> None:
    s3 = site.client("s3")
    s3.create_bucket(Bucket=site.bucket)
    upload = s3.create_multipart_upload(Bucket=site.bucket, Key="llm/run-5/step-7/model.pt")
    s3.upload_part(Bucket=site.bucket, Key="llm/run-5/step-7/model.pt", UploadId=upload["UploadId"],
                   PartNumber=1, Body=b"p" * 1024)  # fmt: skip
    as_of = (this_week().end).strftime("%Y-%m-%dT%H:%M:%SZ")
    put(site, "STO004", [{"resource_id": f"s3://{site.bucket}/", "estimated_waste": 1.5, "resource_type": "bucket",
                          "params": json.dumps({"min_age_days": 7}), "evidence": {"as_of": as_of, "uploads": 1}}])  # fmt: skip
    action = plan(site)[f"s3://{site.bucket}/"]["action_id"]
    first = cli(site, "remediate", "apply", action, "--approve", "crashed upload")
    assert first.exit_code == 0 and "awaiting_approval: would abort 1 upload(s)" in first.output
    assert len(s3.list_multipart_uploads(Bucket=site.bucket).get("Uploads", [])) == 1
    second = cli(site, "remediate", "apply", action, "--yes")
    assert second.exit_code == 0, second.output
    assert f"applied: aborted 1 upload(s) in {site.bucket}" in second.output
    assert s3.list_multipart_uploads(Bucket=site.bucket).get("Uploads", []) == []
    third = cli(site, "remediate", "apply", action, "--yes")
    assert third.exit_code == 0 and "nothing_to_do" in third.output


def test_lifecycle_transition_keeps_the_buckets_other_rules(site: Site) -> None:
    s3 = site.client("s3")
    checkpoints(site, "llm/run-3/")
    other = {"ID": "expire-tmp", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled", "Expiration": {"Days": 3}}
    s3.put_bucket_lifecycle_configuration(Bucket=site.bucket, LifecycleConfiguration={"Rules": [other]})
    target = f"s3://{site.bucket}/llm/run-3/"
    put(site, "STO003", [{"resource_id": target, "estimated_waste": 0.5,
                          "params": json.dumps({"min_age_days": 30, "target_class": "GLACIER_IR"}),
                          "evidence": {"target_class": "GLACIER_IR"}}])  # fmt: skip
    action = plan(site)[target]["action_id"]
    result = cli(site, "remediate", "apply", action, "--approve", "kept for reference", "--yes")
    assert result.exit_code == 0, result.output
    assert "applied: put lifecycle rule" in result.output
    rules = {r["ID"]: r for r in s3.get_bucket_lifecycle_configuration(Bucket=site.bucket)["Rules"]}
    assert set(rules) == {"expire-tmp", f"wastewatch-{action}"}
    mine = rules[f"wastewatch-{action}"]
    assert mine["Filter"] == {"Prefix": "llm/run-3/"} and mine["Status"] == "Enabled"
    assert mine["Transitions"] == [{"Days": 30, "StorageClass": "GLACIER_IR"}]
    again = cli(site, "remediate", "apply", action, "--yes")
    assert (
        again.exit_code == 0
        and "nothing_to_do: " in again.output
        and "already has lifecycle rule" in again.output
    )


def test_dry_run_touches_nothing_of_any_kind(site: Site) -> None:
    """Without --yes, an approved stop, tiering and delete re-check their targets and change none of them."""
    iid = instance(site)
    a_stop = idle(site, iid)
    checkpoints(site, "llm/run-20/")
    a_delete = orphaned(site, "llm/run-20/")
    target = f"s3://{site.bucket}/llm/run-20/"
    put(site, "STO003", [{"resource_id": f"s3://{site.bucket}/llm/", "estimated_waste": 0.5,
                          "params": json.dumps({"min_age_days": 30}), "evidence": {"target_class": "STANDARD_IA"}}])  # fmt: skip
    a_tier = plan(site)[f"s3://{site.bucket}/llm/"]["action_id"]
    cli(site, "remediate", "apply", a_delete, "--approve", "earlier run")
    result = cli(site, "remediate", "apply", a_stop, a_tier, a_delete, "--approve", "check")
    assert result.exit_code == 0, result.output
    assert result.output.count("would_apply") == 3 and target in result.output
    assert state_of(site, iid) == "running" and len(keys_under(site, "llm/run-20/")) == 3
    s3 = site.client("s3")
    assert "NoSuchLifecycleConfiguration" in _lifecycle_error(s3, site.bucket)
    assert query(site, "select count(*) from remediation_log where event = 'apply' and not dry_run") == [(0,)]


def _lifecycle_error(s3: Any, bucket: str) -> str:
    try:
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    except Exception as exc:  # botocore ClientError
        return str(exc)
    return ""


def test_unknown_action_and_manual_actions(site: Site) -> None:
    put(site, "GPU001", [{"resource_id": "slurm-node-3", "estimated_waste": 10}])
    action = plan(site)["slurm-node-3"]["action_id"]
    unknown = cli(site, "remediate", "apply", "0000000000000000", "--approve", "x")
    assert unknown.exit_code == 2 and "no such action: 0000000000000000" in unknown.output
    assert query(site, "select count(*) from remediation_log") == [(0,)]
    manual = cli(site, "remediate", "apply", action, "--approve", "x", "--yes")
    assert manual.exit_code == 1 and "wastewatch does not act on this: not an EC2 instance" in manual.output
    empty_reason = cli(site, "remediate", "apply", action, "--approve", "  ")
    assert empty_reason.exit_code == 2 and "--approve needs a reason" in empty_reason.output


def test_realised_saving_counts_the_waste_that_stopped_in_later_weeks(site: Site) -> None:
    """An applied stop saves its finding's weekly waste in each evaluated week after it in which the finding
    is gone, and the difference when it persists smaller; dry runs and refusals save nothing."""
    from pipelines.remediate.realised import realised_savings

    iid, refused_iid = instance(site), instance(site, {"wastewatch:protect": "1"})
    put(site, "GPU001", [{"resource_id": i, "estimated_waste": 120.5} for i in (iid, refused_iid)])
    actions = plan(site)  # findings of a rule and week are written together
    action, refused = actions[iid]["action_id"], actions[refused_iid]["action_id"]
    assert cli(site, "remediate", "apply", action, "--approve", "idle", "--yes").exit_code == 0
    assert cli(site, "remediate", "apply", refused, "--approve", "idle", "--yes").exit_code == 1
    next_week = Window.iso_week((this_week().start + timedelta(days=7)).strftime("%G-W%V"))
    after = Window.iso_week((this_week().start + timedelta(days=14)).strftime("%G-W%V"))
    put(site, "GPU001", [{"resource_id": refused_iid, "estimated_waste": 120.5}], next_week)
    put(site, "GPU001", [{"resource_id": iid, "estimated_waste": 20.5}, {"resource_id": refused_iid,
                          "estimated_waste": 120.5}], after)  # fmt: skip
    con = open_current(load_config(site.config_path).warehouse_path)
    try:
        now = realised_savings(con, this_week().start.date())  # the week it was applied in: not yet
        gone = realised_savings(con, next_week.start.date())
        back = realised_savings(con, after.start.date())
        unevaluated = realised_savings(con, (after.start + timedelta(days=7)).date())
    finally:
        con.close()
    assert now == [] and unevaluated == []
    assert [(r["action_id"], r["baseline_waste"], r["week_waste"], r["realised_saving"]) for r in gone] == [
        (action, Decimal("120.5"), 0, Decimal("120.5"))
    ]
    assert [(r["target"], r["realised_saving"], r["applied_by"]) for r in back] == [
        (iid, Decimal("100.0"), None)
    ]


def test_an_s3_compatible_endpoint_is_taken_from_the_source_in_the_same_bucket(site: Site) -> None:
    """Without `remediation: s3_endpoint_url`, a bucket read by a source with an endpoint_url (MinIO, Ceph,
    ...) is acted on at that endpoint."""
    site.config_path.write_text(
        f"sources:\n  - {{name: ckpt, kind: s3_listing, uri: 's3://{site.bucket}/', endpoint_url: '{site.endpoint}'}}\n"
    )
    checkpoints(site, "llm/run-30/")
    target = f"s3://{site.bucket}/llm/run-30/"
    put(site, "STO003", [{"resource_id": target, "estimated_waste": 0.5,
                          "params": json.dumps({"min_age_days": 40}), "evidence": {"target_class": "STANDARD_IA"}}])  # fmt: skip
    action = plan(site)[target]["action_id"]
    result = cli(site, "remediate", "apply", action, "--approve", "cold", "--yes")
    assert result.exit_code == 0, result.output
    rules = site.client("s3").get_bucket_lifecycle_configuration(Bucket=site.bucket)["Rules"]
    assert [r["Transitions"] for r in rules] == [[{"Days": 40, "StorageClass": "STANDARD_IA"}]]


def test_plan_prints_each_action_and_what_to_run_next(site: Site) -> None:
    put(site, "GPU001", [
        {"resource_id": "i-0123456789abcdef0", "estimated_waste": 1234.5, "team": "nlp", "owner": "alice"},
        {"resource_id": "slurm-node-3", "estimated_waste": 10},
    ])  # fmt: skip
    result = cli(site, "remediate", "plan", "--week", this_week().label, "--all")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert (
        lines[0]
        == f"remediation plan for {this_week().label}: 2 action(s), 1 wastewatch can apply, 1 for other tooling"
    )
    # the action id is sha1("GPU001|i-0123456789abcdef0|stop_instance|i-0123456789abcdef0")[:16]: the
    # same in every week and release, so an approval and the report name the same action
    assert lines[1] == (
        "4374f7e65c0731a9  stop_instance            i-0123456789abcdef0  (GPU001, nlp/alice, USD 1,234.50/week; planned)"
    )
    assert (
        lines[3]
        == "    not applied by wastewatch: not an EC2 instance: stop it through its scheduler or cloud (Slurm, Kubernetes, ...)"
    )
    assert any(line.startswith("plan written: ") and line.endswith("remediation-plan.json") for line in lines)
    # by default: a summary by rule and kind, then the executable actions worth acting on
    default = cli(site, "remediate", "plan", "--week", this_week().label).stdout.splitlines()
    assert default[1:6] == [
        "by rule and kind:",
        "  GPU001 stop_instance                2 action(s)  USD 1,244.50/week  1 executable, 1 for other tooling",
        "executable actions of 10.00 a week or more: 1 of 1",
        lines[1],
        "1 smaller or manual action(s) not listed: --all lists every action; the JSON plan holds them",
    ]
    small = cli(site, "remediate", "plan", "--week", this_week().label, "--min-waste", "2000").stdout
    assert (
        "executable actions of 2,000.00 a week or more: 0 of 1" in small and "4374f7e65c0731a9" not in small
    )


def test_plan_without_a_warehouse_or_findings(site: Site) -> None:
    """No warehouse yet is a usage error (exit 2, nothing written); a week without findings plans nothing
    and still writes its (empty) JSON plan, so other tooling sees an answer."""
    missing = cli(site, "remediate", "plan", "--week", PAST_WEEK.label)
    assert missing.exit_code == 2 and "no warehouse here yet" in missing.output
    assert not (load_config(site.config_path).reports_path / PAST_WEEK.label).exists()
    put(site, "GPU001", [{"resource_id": "i-0123456789abcdef0", "estimated_waste": 5}])
    result = cli(site, "remediate", "plan", "--week", PAST_WEEK.label)
    assert result.exit_code == 0, result.output
    assert "0 action(s)" in result.stdout
    empty = json.loads(
        (load_config(site.config_path).reports_path / PAST_WEEK.label / "remediation-plan.json").read_text()
    )
    assert empty["actions"] == 0 and empty["owners"] == []


def test_apply_waits_for_the_warehouse_lock_then_exits_3_touching_nothing(site: Site) -> None:
    import subprocess
    import sys

    from pipelines.lock import writer_lock

    iid = instance(site)
    action = idle(site, iid)
    with writer_lock(load_config(site.config_path).warehouse_path):
        # the lock is per process: another process must hold it for this one to wait
        held = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "--config", str(site.config_path), "remediate", "apply",
             action, "--approve", "idle", "--yes", "--wait", "0"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    assert held.returncode == 3, held.stderr
    assert "held by another writer" in held.stderr
    assert state_of(site, iid) == "running" and log(site, action) == []


def test_an_unreachable_endpoint_fails_the_action_with_a_redacted_error(site: Site) -> None:
    """A provider call that fails is `failed` (exit 1), recorded with its error; an endpoint's password never
    reaches the output or the audit trail."""
    with socket.socket() as s:  # a local port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    site.config_path.write_text(
        f"remediation: {{ec2_endpoint_url: 'http://admin:s3cr3t-pass@127.0.0.1:{port}/'}}\n"
    )
    put(
        site,
        "GPU001",
        [{"resource_id": "i-0123456789abcdef0", "estimated_waste": 5, "region_id": "us-east-1"}],
    )
    action = plan(site)["i-0123456789abcdef0"]["action_id"]
    result = cli(site, "remediate", "apply", action, "--approve", "idle", "--yes")
    assert result.exit_code == 1
    assert (
        f"{action}  stop_instance i-0123456789abcdef0: failed: stop_instance on i-0123456789abcdef0 failed"
        in result.output
    )
    assert "s3cr3t-pass" not in result.output
    (trail,) = query(site, "select result, error from remediation_log where event = 'apply'")
    assert trail[0] == "failed" and trail[1] and "s3cr3t-pass" not in trail[1]
    assert query(site, "select state from remediation_actions") == [("failed",)]


def test_an_approval_covers_the_planned_parameters_it_was_given_for(site: Site) -> None:
    """A delete approved, then planned again with another last write (the run wrote more), is no longer
    approved: the new parameters need a new approval, again from an earlier run."""
    checkpoints(site, "llm/run-40/")
    action = orphaned(site, "llm/run-40/", last_write=datetime.now(UTC) + timedelta(minutes=5))
    cli(site, "remediate", "apply", action, "--approve", "failed run")
    assert orphaned(site, "llm/run-40/", last_write=datetime.now(UTC) + timedelta(minutes=9)) == action
    stale = cli(site, "remediate", "apply", action, "--yes")
    assert (
        stale.exit_code == 1
        and "refused: not approved: no signed approval for exactly this action" in stale.output
    )
    assert len(keys_under(site, "llm/run-40/")) == 3
    cli(site, "remediate", "apply", action, "--approve", "still failed")
    done = cli(site, "remediate", "apply", action, "--yes")
    assert done.exit_code == 0 and "applied: deleted 3 object(s)" in done.output
    (applied, approved) = query(
        site,
        "select params ->> 'last_write' from remediation_log where action_id = $a and result in ('approved', 'applied') "
        "order by logged_at desc limit 2",
        {"a": action},
    )
    assert applied == approved  # the delete used the parameters the latest approval covered
