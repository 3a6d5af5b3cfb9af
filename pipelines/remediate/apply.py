"""`wastewatch remediate apply`: approve actions, then re-check and (with --yes) apply each, recording it all.

Approval is its own state, apart from acks (an ack means "known exception, leave it alone" and makes
apply refuse the target). Every action needs an approval; a destructive one (a delete, an abort) needs
one given in an earlier run than the apply, so nothing is deleted by the same command that approved it.
An approval is a signature, under the approval key outside the warehouse (pipelines/remediate/keys.py),
over the canonical digest of the whole action: rule, finding, kind, target, region and endpoint,
parameters. Apply re-derives the action from its finding rather than trusting the stored row, and acts only
under a valid signature for exactly that action, while the log's chain verifies. Each approval and each
attempt, dry run or not, is a chained row of remediation_log (pipelines/remediate/audit.py).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from pipelines.config import Config
from pipelines.net.s3 import client_at, problem, split_uri
from pipelines.redact import redact
from pipelines.remediate import audit
from pipelines.remediate.keys import Keyring, ensure_key, load_key
from pipelines.remediate.targets import KINDS, Outcome, Target
from pipelines.warehouse import connect, lock_down, one, rows, sql_text, transaction, utcnow
from rules import Window, finding_id
from rules._contract import finding_key

# the action's state after a real apply, by result
STATE_AFTER = {"applied": "applied", "nothing_to_do": "done", "refused": "refused", "failed": "failed"}
BAD_RESULTS = {"refused", "failed"}


class RemediateError(Exception):
    """The command cannot run as asked (an unknown action id, a missing reason); nothing was done."""


class ChainBroken(Exception):
    """remediation_log does not verify: nothing is approved or applied until it does."""


@dataclass(frozen=True)
class Attempt:
    action: dict[str, Any]
    outcome: Outcome


def new_run_id() -> str:
    return uuid.uuid4().hex


def load_actions(con: duckdb.DuckDBPyConnection, action_ids: list[str]) -> list[dict[str, Any]]:
    """The actions named, in the order given (each once); an unknown id is an error before anything is done."""
    found, unknown = [], []
    for action_id in dict.fromkeys(a.strip().lower() for a in action_ids):
        hit = rows(con, sql_text("remediate", "action"), {"action_id": action_id})
        if not hit:
            unknown.append(action_id)
            continue
        action = hit[0]
        # the stored text (what approvals are compared with) and the parsed parameters the kinds read
        action["params_text"] = action["params"] if isinstance(action["params"], str) else None
        action["params"] = (
            json.loads(action["params"]) if isinstance(action["params"], str) else action["params"]
        )
        found.append(action)
    if unknown:
        raise RemediateError(
            f"no such action: {', '.join(unknown)} (`wastewatch remediate plan --week W` lists the actions)"
        )
    return found


def _log(
    con: duckdb.DuckDBPyConnection, ring: Keyring, run_id: str, action: dict[str, Any], event: str,
    actor: str | None, at: datetime, dry_run: bool, outcome: Outcome, reason: str | None = None,
    signature: str | None = None,
) -> None:  # fmt: skip
    audit.append(
        con,
        ring,
        {
            "run_id": run_id,
            "action_id": action["action_id"],
            "event": event,
            "actor": actor,
            "logged_at": at,
            "dry_run": dry_run,
            "params": action["params_text"] or json.dumps(action["params"]),
            "result": outcome.result,
            "reason": reason,
            "detail": redact(outcome.detail),
            "error": redact(outcome.error) if outcome.error else None,
            "action_digest": action.get("digest"),
            "signature": signature,
        },
    )


def _set_state(con: duckdb.DuckDBPyConnection, action_id: str, state: str, at: datetime) -> None:
    con.execute(sql_text("remediate", "set_state"), {"action_id": action_id, "state": state, "now": at})


def destination(config: Config, action: dict[str, Any]) -> tuple[str | None, str | None]:
    """Where the action's call goes: the endpoint (None: AWS) and region. For S3 the remediation section's
    endpoint, else the endpoint of a source in the same bucket; an instance's region from its finding."""
    rc = config.remediation
    service, _ = KINDS[action["kind"]]
    if service == "ec2":
        return rc.ec2_endpoint_url, action["params"].get("region") or action.get("region_id") or rc.ec2_region
    bucket, _ = split_uri(action["target"])
    endpoint, region = rc.s3_endpoint_url, rc.s3_region
    if endpoint is None:
        for s in config.sources:
            if s.is_s3 and s.endpoint_url and split_uri(s.uri)[0] == bucket:
                endpoint, region = s.endpoint_url, region or s.region
                break
    return endpoint, region


# what plan and apply read and write: each must be a table, not a view planted to run other SQL
ACTING_TABLES = ("findings", "finding_acks", "remediation_actions", "remediation_log")


def connect_for_acting(config: Config) -> duckdb.DuckDBPyConnection:
    """The warehouse, writable, with file access switched off once our catalogues are loaded: SQL that
    someone planted in it (a view in place of a table) runs in the approver's process, which can read the
    approval key, so it must reach no file. A table replaced by a view is refused outright."""
    con = connect(config.warehouse_path, settings=config.duckdb_settings)
    try:
        lock_down(con)
        found = rows(con, sql_text("remediate", "planted_views"), {"names": list(ACTING_TABLES)})
        planted = [r["view_name"] for r in found]
        if planted:
            raise ChainBroken(
                f"{', '.join(planted)} should be table(s) but are views: the warehouse was changed outside "
                "wastewatch; restore it from a backup"
            )
    except BaseException:
        con.close()
        raise
    return con


def client_for(config: Config, action: dict[str, Any]) -> Any:
    """A boto3 client for the action's service at its destination."""
    service, _ = KINDS[action["kind"]]
    endpoint, region = destination(config, action)
    if service == "ec2":
        return client_at(endpoint, region, retries=3, service="ec2")
    return client_at(endpoint, region, retries=3)


# what an approval signs: every field that decides what is done, where
SIGNED = ("rule_id", "finding_id", "week_start", "kind", "target", "params")


def action_digest(config: Config, action: dict[str, Any]) -> str:
    """sha256 of the canonical action: rule, finding, kind, target, region and endpoint, parameters."""
    endpoint, region = destination(config, action) if action["kind"] in KINDS else (None, None)
    content = {k: action.get(k) for k in SIGNED} | {"endpoint": endpoint, "region": region, "v": 1}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def rederive(
    con: duckdb.DuckDBPyConnection, action: dict[str, Any], weeks: dict[Any, dict[str, dict[str, Any]]]
) -> tuple[dict[str, Any] | None, str]:
    """The action as its finding gives it now (the stored row is only a pointer); why not, when it cannot.
    `weeks` keeps each week's candidates for the run."""
    week = action["week_start"]
    if week not in weeks:
        found = rows(con, sql_text("remediate", "candidates"), {"week_start": week})
        weeks[week] = {r["action_id"]: r for r in found}
    derived = [dict(weeks[week][action["action_id"]])] if action["action_id"] in weeks[week] else []
    if not derived:
        return None, "its finding is no longer actionable waste of its week (or was changed): plan again"
    fresh = derived[0]
    fresh["params"] = json.loads(fresh["params"]) if isinstance(fresh["params"], str) else fresh["params"]
    differ = [
        k
        for k in ("rule_id", "finding_id", "kind", "target", "params", "destructive", "executable")
        if _canonical(fresh.get(k)) != _canonical(action.get(k))
    ]
    if differ:
        return None, f"the stored action's {', '.join(differ)} differ from its finding's: plan again"
    week = Window.containing(fresh["week_start"]).label
    if fresh["finding_id"] != finding_id(fresh["rule_id"], fresh["resource_id"], week):
        return (
            None,
            f"its finding's id is not that of {fresh['rule_id']} on its resource in {week}: plan again",
        )
    fresh["state"] = action["state"]
    fresh["params_text"] = json.dumps(fresh["params"], sort_keys=True, separators=(",", ":"))
    return fresh, ""


def _canonical(value: Any) -> str:
    if isinstance(value, str) and value[:1] in "{[":
        try:
            value = json.loads(value)
        except ValueError:
            pass
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _signed_approvals(
    con: duckdb.DuckDBPyConnection, ring: Keyring, action: dict[str, Any], run_id: str, at: datetime
) -> tuple[int, int]:
    """Valid approvals of exactly this action under the current key: any, and any from an earlier run."""
    count = earlier = 0
    for a in rows(con, sql_text("remediate", "approvals"), {"action_id": action["action_id"]}):
        if a["key_id"] != ring.current or a["action_digest"] != action["digest"]:
            continue
        if not ring.valid(action["digest"], a["signature"], a["key_id"]):
            continue
        count += 1
        earlier += a["run_id"] != run_id and a["logged_at"] < at
    return count, earlier


def _gate(
    con: duckdb.DuckDBPyConnection,
    ring: Keyring,
    action: dict[str, Any],
    run_id: str,
    at: datetime,
    yes: bool,
) -> tuple[Outcome | None, bool]:
    """A refusal before any provider call (not automatable, not approved, acknowledged), and whether the
    action waits for an approval from an earlier run (destructive, approved only in this one)."""
    if not action["executable"]:
        return Outcome("refused", f"wastewatch does not act on this: {action['manual_reason']}"), False
    approvals, earlier = _signed_approvals(con, ring, action, run_id, at)
    if not approvals:
        return (
            Outcome(
                "refused",
                "not approved: no signed approval for exactly this action (planned again with other "
                'parameters, or approved under another key): --approve "REASON"',
            ),
            False,
        )
    if action["destructive"] and not earlier:
        if yes:
            return (
                Outcome(
                    "refused",
                    "destructive: needs an approval given in an earlier run than this one; run apply again",
                ),
                False,
            )
        return None, True
    return None, False


def open_chain(
    con: duckdb.DuckDBPyConnection, config: Config, actor: str | None, create: bool
) -> tuple[Keyring | None, str | None]:
    """The keyring, with the chain verified (and started, once, when the key or the chain is new); a
    notice to print once when approvals from before signing stop counting. ChainBroken if it does not
    verify."""
    ring, created = ensure_key(config) if create else (load_key(config), False)
    notice = None
    if ring is not None and not created and not audit.started(con):
        emptied = audit.verify(con, ring).problem  # a log emptied behind the key's back is no new start
        if emptied is not None:
            raise ChainBroken(
                f"{emptied} (`wastewatch remediate log --verify`); nothing is approved or applied until it "
                'verifies: restore the warehouse from a backup, or seal it with `wastewatch remediate log --restart "why"`'
            )
    if ring is not None and (created or not audit.started(con)):
        before = audit.verify(con, None)
        if before.chained and before.problem is not None and not created:
            raise ChainBroken(str(before.problem))
        covered = audit.start_chain(
            con, ring, "a new approval key" if before.chained else "signing begins", actor
        )
        legacy = one(con, sql_text("remediate", "unsigned_approvals"))
        if legacy and legacy[0]:
            notice = (
                f"{legacy[0]} approval(s) given before approvals were signed no longer count: approve "
                "those actions again"
            )
        elif created and before.chained:
            notice = f"a new approval key: the {covered} earlier log row(s) are sealed; approve again to act"
    verdict = audit.verify(con, ring)
    if verdict.problem is not None:
        raise ChainBroken(
            f"{verdict.problem} (`wastewatch remediate log --verify`); nothing is approved or applied until "
            "it verifies: restore the warehouse from a backup, or seal it with `wastewatch remediate log "
            '--restart "why"`'
        )
    return ring, notice


def apply_actions(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    action_ids: list[str],
    *,
    approve: str | None,
    actor: str | None,
    yes: bool,
    run_id: str | None = None,
    notice: Callable[[Attempt], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> list[Attempt]:
    """Approve (with `approve`), then re-check and apply (with `yes`; else a dry run) each action named."""
    if approve is not None and not approve.strip():
        raise RemediateError("--approve needs a reason: say why these actions may be applied")
    run = run_id or new_run_id()
    actions = load_actions(con, action_ids)
    ring, once = open_chain(con, config, actor, create=True)
    assert ring is not None
    if once and say:
        say(once)
    attempts: list[Attempt] = []
    weeks: dict[Any, dict[str, dict[str, Any]]] = {}
    for stored in actions:
        action, why = rederive(con, stored, weeks)
        # the ack of the finding the action's rule and resource name, whatever the stored key says
        keys = {stored["finding_key"], finding_key(stored["rule_id"], stored["resource_id"])}
        if action is not None:
            keys.add(finding_key(action["rule_id"], action["resource_id"]))
        today = utcnow().date()
        acks = [
            one(con, sql_text("remediate", "acked"), {"finding_key": k, "on": today}) for k in sorted(keys)
        ]
        ack = next((a for a in acks if a), None)
        if ack:  # an acknowledged finding is no candidate either: say why it is refused
            action = (action or stored) | {"digest": (action or {}).get("digest")}
            outcome: Outcome | None = Outcome(
                "refused", f"acknowledged until {ack[0]} ({ack[1]}): a known exception is never touched"
            )
            waiting = False
        elif action is None:
            action = stored | {"digest": None}
            outcome = Outcome("refused", why)
            waiting = False
        else:
            action["digest"] = action_digest(config, action)
            outcome, waiting = None, False
            if approve is not None:
                at = utcnow()
                with transaction(con):
                    _log(
                        con, ring, run, action, "approve", actor, at, False, Outcome("approved", "approved"),
                        approve.strip(), ring.sign(action["digest"]),
                    )  # fmt: skip
                    if action["state"] not in ("applied", "done"):
                        _set_state(con, action["action_id"], "approved", at)
                audit.record_head(con, ring)
            outcome, waiting = _gate(con, ring, action, run, utcnow(), yes)
        if outcome is None:
            try:
                target = Target(action, client_for(config, action), config.remediation.protect_tag, not yes)
                outcome = KINDS[action["kind"]][1](target)
            except Exception as exc:  # botocore errors (and a store's odd answers): recorded, the rest go on
                outcome = Outcome("failed", f"{action['kind']} on {action['target']} failed", problem(exc))
            if waiting and outcome.result == "would_apply":
                outcome = Outcome(
                    "awaiting_approval",
                    f"{outcome.detail}; destructive: apply it with --yes in a later run than its approval",
                )
        dry_run = not yes
        with transaction(con):
            _log(con, ring, run, action, "apply", actor, utcnow(), dry_run, outcome)
            if not dry_run and outcome.result in STATE_AFTER:
                _set_state(con, action["action_id"], STATE_AFTER[outcome.result], utcnow())
        audit.record_head(con, ring)
        attempt = Attempt(action, outcome)
        attempts.append(attempt)
        if notice:
            notice(attempt)
    return attempts
