"""Approvals cannot be forged from the warehouse (issue 39, item 2): whoever writes the warehouse can insert
an approval row, change an action's target or copy a signature to another action; none of it makes
wastewatch act. The provider endpoints are a recording proxy in front of moto, so "no provider call" is
what the proxy saw, not what the code says it did."""

from __future__ import annotations

import json
import os
import stat
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner, Result

from pipelines.cli import main
from pipelines.config import load_config
from pipelines.remediate import audit
from pipelines.remediate.keys import key_path, load_key
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_current
from tests.helpers.recording_proxy import Recording, recording_proxy
from tests.helpers.report import put_findings
from tests.remediate.conftest import Site, this_week

ACTS = ("StopInstances", "?delete", "TerminateInstances", "DELETE /")


@pytest.fixture
def guarded(tmp_path: Path, s3_server: str) -> Iterator[tuple[Site, Recording]]:
    """A project whose remediation endpoints are a recording proxy in front of moto."""
    with recording_proxy(s3_server) as proxy:
        path = write_config(
            tmp_path,
            f"""
            remediation:
              s3_endpoint_url: {proxy.url}
              ec2_endpoint_url: {proxy.url}
              ec2_region: us-east-1
            """,
        )
        yield Site(path, s3_server, f"ckpt-{uuid.uuid4().hex[:12]}"), proxy


def cli(site: Site, *args: str) -> Result:
    return CliRunner(env={"WASTEWATCH_CONFIG": None, "WASTEWATCH_APPROVAL_KEY": None}).invoke(
        main, ["--config", str(site.config_path), "-q", *args], catch_exceptions=False
    )


def sql(site: Site, statement: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    """A statement on the live warehouse with DuckDB's own client: what anyone who can write it can do."""
    con = duckdb.connect(str(load_config(site.config_path).warehouse_path))
    try:
        return con.execute(statement, params or {}).fetchall()
    finally:
        con.close()


def instance(site: Site) -> str:
    r = site.client("ec2").run_instances(
        ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="p4d.24xlarge"
    )
    return r["Instances"][0]["InstanceId"]


def running(site: Site, instance_id: str) -> bool:
    found = site.client("ec2").describe_instances(InstanceIds=[instance_id])
    return found["Reservations"][0]["Instances"][0]["State"]["Name"] == "running"


def plan(site: Site) -> dict[str, str]:
    result = cli(site, "remediate", "plan", "--week", this_week().label)
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(load_config(site.config_path).warehouse_path), read_only=True)
    try:
        return dict(con.execute("select target, action_id from remediation_actions").fetchall())
    finally:
        con.close()


def findings(site: Site, rule_id: str, items: list[dict[str, Any]]) -> None:
    con = open_current(load_config(site.config_path).warehouse_path)
    try:
        put_findings(con, this_week(), rule_id, items)
    finally:
        con.close()


def approved_idle_instance(site: Site) -> tuple[str, str]:
    """A running instance with a GPU001 finding, planned and approved (a dry run): its id and action id."""
    iid = instance(site)
    findings(site, "GPU001", [{"resource_id": iid, "estimated_waste": 120.5, "region_id": "us-east-1"}])
    action = plan(site)[iid]
    assert cli(site, "remediate", "apply", action, "--approve", "idle").exit_code == 0
    return iid, action


def failed_run(site: Site, prefix: str) -> str:
    """Three checkpoint objects of a failed run and its STO001 finding; the run's target."""
    s3 = site.client("s3")
    if site.bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
        s3.create_bucket(Bucket=site.bucket)
    for i in range(3):
        s3.put_object(Bucket=site.bucket, Key=f"{prefix}step-{i}/model.pt", Body=b"x" * 1024)
    target = f"s3://{site.bucket}/{prefix}"
    written = (datetime.now(UTC) + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    findings(site, "STO001", [{"resource_id": target, "estimated_waste": 2.5, "resource_type": "checkpoint run",
                               "evidence": {"category": "failed", "last_write": written, "objects": 3}}])  # fmt: skip
    return target


def objects(site: Site, prefix: str) -> int:
    return site.client("s3").list_objects_v2(Bucket=site.bucket, Prefix=prefix).get("KeyCount", 0)


def forged_approval(site: Site, action_id: str, seq: int | None, row_hmac: str | None = None) -> None:
    """An approval row as an attacker writes it: another run, an hour ago, the action's stored parameters."""
    sql(
        site,
        "insert into remediation_log (run_id, action_id, event, actor, logged_at, dry_run, params, result, reason, "
        "seq, key_id, row_hmac) select 'forged', action_id, 'approve', 'mallory', now()::timestamp - interval 1 hour, "
        "false, params, 'approved', 'trust me', $seq, 'k', $h from remediation_actions where action_id = $a",
        {"a": action_id, "seq": seq, "h": row_hmac},
    )


def test_an_inserted_approval_row_is_refused_without_a_provider_call(guarded: tuple[Site, Recording]) -> None:
    site, proxy = guarded
    prefix = "llm/run-7/"
    target = failed_run(site, prefix)
    action = plan(site)[target]
    first = cli(site, "remediate", "apply", action)  # a dry run: creates the key and starts the chain
    assert first.exit_code == 1 and "not approved" in first.output
    for seq in (None, 3):  # unsigned, or in the chain's next place with a made-up HMAC
        forged_approval(site, action, seq, None if seq is None else "0" * 64)
        proxy.calls.clear()
        result = cli(site, "remediate", "apply", action, "--yes")
        assert result.exit_code == 1, result.output
        line = result.output.strip().splitlines()[-1]
        assert line.startswith("error: remediation_log ") and "nothing is approved or applied" in line
        assert proxy.calls == [] and objects(site, prefix) == 3
        verify = cli(site, "remediate", "log", "--verify", "--limit", "0")
        assert verify.exit_code == 1
        assert ("row 3 (approve" if seq else "unsigned rows (1 without a seq)") in verify.output
        sql(site, "delete from remediation_log where run_id = 'forged'")
    assert cli(site, "remediate", "log", "--verify").exit_code == 0


def test_an_approval_inserted_before_signing_began_never_counts(guarded: tuple[Site, Recording]) -> None:
    """A warehouse from before signed approvals (or one tampered before any key existed): its approvals
    are sealed into the chain's start and say once that they no longer count."""
    site, proxy = guarded
    iid = instance(site)
    findings(site, "GPU001", [{"resource_id": iid, "estimated_waste": 120.5, "region_id": "us-east-1"}])
    action = plan(site)[iid]
    forged_approval(site, action, None)
    result = cli(site, "remediate", "apply", action, "--yes")
    assert result.exit_code == 1
    assert "note: 1 approval(s) given before approvals were signed no longer count" in result.output
    assert "refused: not approved" in result.output
    assert proxy.made(*ACTS) == [] and running(site, iid)
    again = cli(site, "remediate", "apply", action, "--yes")
    assert "no longer count" not in again.output
    verified = cli(site, "remediate", "log", "--verify", "--limit", "0")
    assert verified.exit_code == 0 and "1 from before signing (sealed)" in verified.output


def test_a_changed_target_is_refused_without_a_provider_call(guarded: tuple[Site, Recording]) -> None:
    site, proxy = guarded
    idle, bystander = instance(site), instance(site)
    findings(site, "GPU001", [{"resource_id": idle, "estimated_waste": 120.5, "region_id": "us-east-1"}])
    action = plan(site)[idle]
    approved = cli(site, "remediate", "apply", action, "--approve", "idle all week")
    assert approved.exit_code == 0, approved.output
    sql(
        site, "update remediation_actions set target = $t where action_id = $a", {"t": bystander, "a": action}
    )
    proxy.calls.clear()
    result = cli(site, "remediate", "apply", action, "--yes")
    assert result.exit_code == 1
    assert "refused: the stored action's target differ from its finding's: plan again" in result.output
    assert proxy.calls == [] and running(site, idle) and running(site, bystander)
    # planned again, the action is its finding's again, and the approval (of exactly that) holds
    sql(site, "update remediation_actions set target = $t where action_id = $a", {"t": idle, "a": action})
    done = cli(site, "remediate", "apply", action, "--yes")
    assert done.exit_code == 0 and proxy.made("StopInstances") and running(site, bystander)


def test_a_replayed_signature_does_not_approve_another_action(guarded: tuple[Site, Recording]) -> None:
    """Even a chain-valid row (written here with the key, as only its holder could) copying one action's
    approval to another does not approve it: the signature covers the whole action it was given for."""
    site, proxy = guarded
    first, second = instance(site), instance(site)
    findings(site, "GPU001", [{"resource_id": iid, "estimated_waste": 100, "region_id": "us-east-1"}
                              for iid in (first, second)])  # fmt: skip
    actions = plan(site)
    assert cli(site, "remediate", "apply", actions[first], "--approve", "idle").exit_code == 0
    config = load_config(site.config_path)
    ring = load_key(config)
    assert ring is not None
    con = open_current(config.warehouse_path)
    try:
        (approval,) = con.execute(
            "select action_digest, signature, params from remediation_log where event = 'approve'"
        ).fetchall()
        audit.append(con, ring, {"run_id": "replay", "action_id": actions[second], "event": "approve",
                                 "actor": "mallory", "logged_at": datetime(2026, 1, 1), "dry_run": False,
                                 "params": approval[2], "result": "approved", "action_digest": approval[0],
                                 "signature": approval[1]})  # fmt: skip
    finally:
        con.close()
    assert cli(site, "remediate", "log", "--verify").exit_code == 0  # the chain itself is intact
    proxy.calls.clear()
    result = cli(site, "remediate", "apply", actions[second], "--yes")
    assert (
        result.exit_code == 1
        and "refused: not approved: no signed approval for exactly this action" in result.output
    )
    assert proxy.calls == [] and running(site, second)


def test_a_changed_log_row_is_named_by_verify_and_stops_apply(guarded: tuple[Site, Recording]) -> None:
    site, proxy = guarded
    iid = instance(site)
    findings(site, "GPU001", [{"resource_id": iid, "estimated_waste": 120.5, "region_id": "us-east-1"}])
    action = plan(site)[iid]
    assert cli(site, "remediate", "apply", action, "--approve", "idle", "--by", "anna").exit_code == 0
    rows = sql(site, "select seq, event, actor, os_user, key_id from remediation_log order by seq")
    assert [r[1] for r in rows] == ["chain_start", "approve", "apply"]
    assert rows[1][2] == "anna" and rows[1][3] and rows[1][4]  # the OS user and the key id are recorded
    sql(site, "update remediation_log set actor = 'boss' where seq = 2")
    verify = cli(site, "remediate", "log", "--verify", "--limit", "0")
    assert verify.exit_code == 1
    assert verify.output.strip() == (
        "error: remediation_log row 2 (approve " + action + f", logged {_logged(site, 2)}): "
        "its content or place does not match its HMAC: changed or inserted"
    )
    proxy.calls.clear()
    assert cli(site, "remediate", "apply", action, "--yes").exit_code == 1 and proxy.calls == []
    sql(site, "delete from remediation_log where seq = 2")
    gone = cli(site, "remediate", "log", "--verify", "--limit", "0")
    assert gone.exit_code == 1 and "row 2: is missing (the next row is 3): a row was deleted" in gone.output
    sealed = cli(site, "remediate", "log", "--restart", "looked into it: my own test edit", "--verify")
    assert sealed.exit_code == 0 and "remediation_log verified" in sealed.output, sealed.output


def _logged(site: Site, seq: int) -> str:
    return str(sql(site, "select logged_at from remediation_log where seq = $s", {"s": seq})[0][0])


def test_the_key_lives_outside_the_warehouse_0600_and_is_never_printed(
    guarded: tuple[Site, Recording],
) -> None:
    site, _ = guarded
    iid = instance(site)
    findings(site, "GPU001", [{"resource_id": iid, "estimated_waste": 120.5, "region_id": "us-east-1"}])
    action = plan(site)[iid]
    out = cli(site, "remediate", "apply", action, "--approve", "idle").output
    config = load_config(site.config_path)
    path = key_path(config)
    assert path == site.config_path.parent / ".wastewatch" / "approval.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    secret = path.read_text().split()[1]
    warehouse = config.warehouse_path.read_bytes()
    assert secret not in out and secret.encode() not in warehouse and bytes.fromhex(secret) not in warehouse
    os.chmod(path, 0o644)
    refused = cli(site, "remediate", "apply", action)
    assert refused.exit_code == 2 and "readable by others (mode 644): chmod 600 it" in refused.output


def test_rotation_and_loss_need_approval_again_and_keep_the_log_verifiable(
    guarded: tuple[Site, Recording],
) -> None:
    site, proxy = guarded
    iid, action = approved_idle_instance(site)
    rotated = cli(site, "remediate", "key", "rotate")
    assert rotated.exit_code == 0 and "approval key rotated" in rotated.output
    stale = cli(site, "remediate", "apply", action, "--yes")
    assert stale.exit_code == 1 and "approved under another key" in stale.output and running(site, iid)
    verified = cli(site, "remediate", "log", "--verify", "--limit", "0")
    assert verified.exit_code == 0 and "signed by a key no longer kept" not in verified.output
    # the key file lost: a new key seals the log as it is; nothing applies until approved again
    key_path(load_config(site.config_path)).unlink()
    lost = cli(site, "remediate", "apply", action, "--yes")
    assert lost.exit_code == 1 and "not approved" in lost.output and proxy.made("StopInstances") == []
    after = cli(site, "remediate", "log", "--verify", "--limit", "0")
    assert after.exit_code == 0 and "signed by a key no longer kept (sealed)" in after.output
    assert cli(site, "remediate", "apply", action, "--approve", "idle, again").exit_code == 0
    assert cli(site, "remediate", "apply", action, "--yes").exit_code == 0 and not running(site, iid)


def test_the_canonical_digest_covers_every_field_of_the_action(guarded: tuple[Site, Recording]) -> None:
    """Changing any signed field of an action, or where it is sent, changes the digest."""
    from pipelines.remediate.apply import action_digest

    site, _ = guarded
    config = load_config(site.config_path)
    base = {"rule_id": "GPU001", "finding_id": "f1", "kind": "stop_instance", "target": "i-0abc",
            "params": {"region": "us-east-1", "instance_type": "p4d"}, "region_id": "us-east-1"}  # fmt: skip
    digest = action_digest(config, base)
    changed = [
        {"rule_id": "GPU002"}, {"finding_id": "f2"}, {"target": "i-0abd"},
        {"params": {"region": "eu-west-1", "instance_type": "p4d"}}, {"params": {"region": "us-east-1"}},
        {"kind": "delete_prefix", "target": "s3://b/p/"},
    ]  # fmt: skip
    assert len({action_digest(config, base | c) for c in changed} | {digest}) == len(changed) + 1
    moved = config.model_copy(
        update={"remediation": config.remediation.model_copy(update={"ec2_endpoint_url": None})}
    )
    assert action_digest(moved, base) != digest
    assert json.dumps(base["params"]) and action_digest(config, dict(base)) == digest


def test_a_view_planted_in_the_warehouse_cannot_read_the_key_in_the_approvers_process(
    guarded: tuple[Site, Recording],
) -> None:
    """The approver's process can read the key; SQL planted in the warehouse runs there. A table replaced by
    a view is refused, and the connection reaches no file anyway (the adversarial probe's exfiltration)."""
    site, proxy = guarded
    iid, action = approved_idle_instance(site)
    key = key_path(load_config(site.config_path))
    sql(
        site,
        "drop table finding_acks; create view finding_acks as select a.finding_key, date '2099-01-01' as "
        f"acked_until, (select string_agg(content, '') from read_text('{key}')) as reason, 'm' as acked_by, "
        "now()::timestamp as acked_at from remediation_actions as a",
    )
    result = cli(site, "remediate", "apply", action)
    assert result.exit_code == 1 and result.output.strip().splitlines() == [
        "error: finding_acks should be table(s) but are views: the warehouse was changed outside wastewatch; "
        "restore it from a backup"
    ]
    secret = key.read_text().split()[1]
    assert secret not in result.output and proxy.made(*ACTS) == []
    from pipelines.remediate.apply import connect_for_acting

    sql(site, "drop view finding_acks; create table finding_acks as select 1 as x")
    con = connect_for_acting(load_config(site.config_path))
    try:
        with pytest.raises(duckdb.PermissionException):
            con.execute("select * from read_text($k)", {"k": str(key)})
    finally:
        con.close()


def test_an_approval_is_for_its_week_and_its_finding_id(guarded: tuple[Site, Recording]) -> None:
    """Moving the finding and the action to another week (the probe's dodge of the "started again after
    its idle week" check) needs a new approval: the week is signed and the finding id must be its own."""
    site, proxy = guarded
    iid, action = approved_idle_instance(site)
    later = this_week().start.date() + timedelta(days=7 * 52)
    sql(
        site,
        "update findings set week_start = $w, week_end = $w + 6 where resource_id = $r",
        {"w": later, "r": iid},
    )
    sql(
        site, "update remediation_actions set week_start = $w where action_id = $a", {"w": later, "a": action}
    )
    proxy.calls.clear()
    moved = cli(site, "remediate", "apply", action, "--yes")
    assert (
        moved.exit_code == 1 and "its finding's id is not that of GPU001 on its resource in" in moved.output
    )
    assert proxy.calls == [] and running(site, iid)


def test_rows_deleted_from_the_logs_end_are_found_by_the_head_kept_beside_the_key(
    guarded: tuple[Site, Recording],
) -> None:
    site, proxy = guarded
    iid, action = approved_idle_instance(site)
    sql(site, "delete from remediation_log where seq >= 2")
    cut = cli(site, "remediate", "log", "--verify", "--limit", "0")
    assert cut.exit_code == 1 and cut.output.strip() == (
        "error: remediation_log row 3: is the newest row recorded beside the approval key, but the log ends at "
        "row 1: rows were deleted from its end"
    )
    sql(site, "delete from remediation_log")
    emptied = cli(site, "remediate", "apply", action, "--yes")
    assert emptied.exit_code == 1 and "but the log is empty: rows were deleted from its end" in emptied.output
    assert proxy.made(*ACTS) == [] and running(site, iid)


def test_an_ack_is_found_by_the_actions_rule_and_resource_not_its_stored_key(
    guarded: tuple[Site, Recording],
) -> None:
    site, proxy = guarded
    iid, action = approved_idle_instance(site)
    until = (datetime.now(UTC) + timedelta(days=30)).date()
    acked = cli(site, "ack", f"GPU001:{iid}", "--until", str(until), "--reason", "warm pool")
    assert acked.exit_code == 0, acked.output
    sql(site, "update findings set acknowledged = false")
    sql(site, "update remediation_actions set finding_key = 'nothing' where action_id = $a", {"a": action})
    result = cli(site, "remediate", "apply", action, "--yes")
    assert result.exit_code == 1 and "refused: acknowledged until" in result.output
    assert proxy.made(*ACTS) == [] and running(site, iid)
