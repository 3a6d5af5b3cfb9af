"""Acknowledgements (`wastewatch ack`): known exceptions kept in the warehouse, out of the waste total until a date.

A finding is named by its weekly `finding_id`, its cross-week `finding_key` (both shown in the report and
in findings.csv), or `RULE:RESOURCE` (e.g. `GPU001:i-0a1b2c3d4e5f60718`). The ack is stored against the
finding_key, so it follows the finding from week to week; the latest ack of a key is in force and covers
every ISO week that starts on or before its `acked_until` date. Revoking records a row with no date.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import duckdb

from pipelines.warehouse import rows, sql_text, transaction, utcnow
from rules._contract import ATTENTION_CATEGORIES, FINDING_KEY_SQL, finding_key

HEX16 = re.compile(r"[0-9a-f]{16}")


class AckError(Exception):
    """The finding cannot be named or the ack is not valid; the message says why."""


@dataclass(frozen=True)
class Target:
    finding_key: str
    rule_id: str
    resource_id: str | None
    finding_id: str | None
    weeks: tuple[date, ...]  # weeks with a finding for this key, newest first


def resolve(con: duckdb.DuckDBPyConnection, name: str) -> Target:
    """The finding `name` refers to: a finding_id, a finding_key, or RULE:RESOURCE."""
    text = name.strip()
    if not text:
        raise AckError("name a finding: its finding id, its key across weeks, or RULE:RESOURCE")
    found: list[dict[str, Any]] = []
    finding_id = None
    if HEX16.fullmatch(text.lower()):
        found = rows(
            con,
            f"select rule_id, resource_id, week_start, finding_id from findings "  # noqa: S608 - our constant
            f"where finding_id = $x or {FINDING_KEY_SQL} = $x order by week_start desc",
            {"x": text.lower()},
        )
        if any(f["finding_id"] == text.lower() for f in found):
            finding_id = text.lower()
    elif ":" in text:
        rule_id, _, resource_id = text.partition(":")
        from rules import get_rule

        try:
            rule = get_rule(rule_id)
        except KeyError as exc:
            raise AckError(str(exc.args[0])) from None
        found = rows(
            con,
            "select rule_id, resource_id, week_start, finding_id from findings "
            "where rule_id = $r and resource_id = $x order by week_start desc",
            {"r": rule.id, "x": resource_id},
        )
        if not found:
            raise AckError(
                f"{text}: no {rule.id} finding for resource {resource_id!r} in the warehouse "
                "(run `wastewatch evaluate` first, or check the id in findings.csv)"
            )
    if not found:
        raise AckError(
            f"{text}: no such finding; use a finding id or the key across weeks from the report or "
            "findings.csv, or RULE:RESOURCE (e.g. GPU001:i-0a1b2c3d4e5f60718)"
        )
    keys = {finding_key(f["rule_id"], f["resource_id"]) for f in found}
    if len(keys) > 1:  # a 16-hex collision between an id and a key: vanishingly rare, never guessed
        raise AckError(f"{text}: names more than one finding; use RULE:RESOURCE instead")
    first = found[0]
    weeks = rows(
        con,
        "select distinct week_start from findings where rule_id = $r and resource_id is not distinct from $x "
        "order by week_start desc",
        {"r": first["rule_id"], "x": first["resource_id"]},
    )
    return Target(
        finding_key=keys.pop(),
        rule_id=first["rule_id"],
        resource_id=first["resource_id"],
        finding_id=finding_id,
        weeks=tuple(w["week_start"] for w in weeks),
    )


def record(
    con: duckdb.DuckDBPyConnection,
    target: Target,
    until: date | None,
    reason: str,
    by: str | None,
    at: datetime | None = None,
) -> None:
    """Store an ack (or, with until=None, a revocation) for the target's finding_key."""
    if not reason.strip():
        raise AckError("--reason must say why this finding is a known exception")
    with transaction(con):
        con.execute(
            "insert into finding_acks values ($key, $rule, $resource, $fid, $until, $reason, $by, $at)",
            {
                "key": target.finding_key,
                "rule": target.rule_id,
                "resource": target.resource_id,
                "fid": target.finding_id,
                "until": until,
                "reason": reason.strip(),
                "by": by,
                "at": at or utcnow(),
            },
        )
        # the finding's weeks take the ack in force: acknowledged, counted (sql/raw/findings/flags.sql)
        con.execute(
            sql_text("raw/findings", "flags"),
            {
                "attention": list(ATTENTION_CATEGORIES),
                "rule_id": None,
                "week_start": None,
                "finding_key": target.finding_key,
            },
        )


def in_force(con: duckdb.DuckDBPyConnection, on: date | None = None) -> list[dict[str, Any]]:
    """The acks in force on `on` (default: all not revoked), latest per finding, soonest to lapse first."""
    return rows(
        con,
        """
        select finding_key, rule_id, resource_id, acked_until, reason, acked_by, acked_at
        from finding_acks
        qualify row_number() over (partition by finding_key order by acked_at desc) = 1
            and acked_until is not null and ($on is null or acked_until >= $on)
        order by acked_until, rule_id, resource_id
        """,
        {"on": on},
    )
