"""`wastewatch remediate apply`: approve actions, then re-check and (with --yes) apply each, recording it all.

Approval is its own state, apart from acks (an ack means "known exception, leave it alone" and makes
apply refuse the target). Every action needs an approval; a destructive one (a delete, an abort) needs
one given in an earlier run than the apply, so nothing is deleted by the same command that approved it.
Each approval and each attempt, dry run or not, is a row of remediation_log.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from pipelines.config import Config
from pipelines.redact import redact
from pipelines.remediate.targets import KINDS, Outcome, Target
from pipelines.s3 import client_at, problem, split_uri
from pipelines.warehouse import one, rows, sql_text, transaction, utcnow

# the action's state after a real apply, by result
STATE_AFTER = {"applied": "applied", "nothing_to_do": "done", "refused": "refused", "failed": "failed"}
BAD_RESULTS = {"refused", "failed"}


class RemediateError(Exception):
    """The command cannot run as asked (an unknown action id, a missing reason); nothing was done."""


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
    con: duckdb.DuckDBPyConnection, run_id: str, action: dict[str, Any], event: str, actor: str | None,
    at: datetime, dry_run: bool, outcome: Outcome, reason: str | None = None,
) -> None:  # fmt: skip
    con.execute(
        sql_text("remediate", "log"),
        {
            "run_id": run_id,
            "action_id": action["action_id"],
            "event": event,
            "actor": actor,
            "at": at,
            "dry_run": dry_run,
            "params": action["params_text"] or json.dumps(action["params"]),
            "result": outcome.result,
            "reason": reason,
            "detail": redact(outcome.detail),
            "error": redact(outcome.error) if outcome.error else None,
        },
    )


def _set_state(con: duckdb.DuckDBPyConnection, action_id: str, state: str, at: datetime) -> None:
    con.execute(sql_text("remediate", "set_state"), {"action_id": action_id, "state": state, "now": at})


def client_for(config: Config, action: dict[str, Any]) -> Any:
    """A boto3 client for the action's service: the remediation section's endpoint, else (S3) the endpoint
    of a source in the same bucket, else AWS; the instance's region from its finding."""
    rc = config.remediation
    service, _ = KINDS[action["kind"]]
    if service == "ec2":
        region = action["params"].get("region") or action.get("region_id") or rc.ec2_region
        return client_at(rc.ec2_endpoint_url, region, retries=3, service="ec2")
    bucket, _ = split_uri(action["target"])
    endpoint, region = rc.s3_endpoint_url, rc.s3_region
    if endpoint is None:
        for s in config.sources:
            if s.is_s3 and s.endpoint_url and split_uri(s.uri)[0] == bucket:
                endpoint, region = s.endpoint_url, region or s.region
                break
    return client_at(endpoint, region, retries=3)


def _gate(
    con: duckdb.DuckDBPyConnection, action: dict[str, Any], run_id: str, at: datetime, yes: bool
) -> tuple[Outcome | None, bool]:
    """A refusal before any provider call (not automatable, not approved, acknowledged), and whether the
    action waits for an approval from an earlier run (destructive, approved only in this one)."""
    if not action["executable"]:
        return Outcome("refused", f"wastewatch does not act on this: {action['manual_reason']}"), False
    approvals, earlier = one(
        con,
        sql_text("remediate", "approved_earlier"),
        {"action_id": action["action_id"], "run_id": run_id, "now": at},
    ) or (0, 0)
    if not approvals:
        return (
            Outcome("refused", 'not approved (or planned again with other parameters): --approve "REASON"'),
            False,
        )
    ack = one(con, sql_text("remediate", "acked"), {"finding_key": action["finding_key"], "on": at.date()})
    if ack:
        return (
            Outcome("refused", f"acknowledged until {ack[0]} ({ack[1]}): a known exception is never touched"),
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
) -> list[Attempt]:
    """Approve (with `approve`), then re-check and apply (with `yes`; else a dry run) each action named."""
    if approve is not None and not approve.strip():
        raise RemediateError("--approve needs a reason: say why these actions may be applied")
    run = run_id or new_run_id()
    actions = load_actions(con, action_ids)
    attempts: list[Attempt] = []
    for action in actions:
        if approve is not None:
            at = utcnow()
            with transaction(con):
                _log(
                    con,
                    run,
                    action,
                    "approve",
                    actor,
                    at,
                    False,
                    Outcome("approved", "approved"),
                    approve.strip(),
                )
                if action["state"] not in ("applied", "done"):
                    _set_state(con, action["action_id"], "approved", at)
        at = utcnow()
        outcome, waiting = _gate(con, action, run, at, yes)
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
            _log(con, run, action, "apply", actor, utcnow(), dry_run, outcome)
            if not dry_run and outcome.result in STATE_AFTER:
                _set_state(con, action["action_id"], STATE_AFTER[outcome.result], utcnow())
        attempt = Attempt(action, outcome)
        attempts.append(attempt)
        if notice:
            notice(attempt)
    return attempts
