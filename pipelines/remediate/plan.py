"""`wastewatch remediate plan`: one action per actionable finding of a week, stored and written as JSON."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import Config
from pipelines.warehouse import rows, sql_text, transaction, utcnow

PLAN_FILE = "remediation-plan.json"


def build_plan(
    con: duckdb.DuckDBPyConnection, week_start: date, now: datetime | None = None
) -> list[dict[str, Any]]:
    """Plan the week: store its actions in remediation_actions (new ones `planned`, known ones keep their
    state) and return them as stored, biggest weekly waste first."""
    at = now or utcnow()
    with transaction(con):
        # the candidates' SQL is a constant file; the week is bound as a parameter
        con.execute(
            "create or replace temp table remediation_plan as " + sql_text("remediate", "candidates"),
            {"week_start": week_start},
        )
        con.execute(sql_text("remediate", "save_plan"), {"now": at})
    planned = rows(con, sql_text("remediate", "plan_rows"))
    con.execute("drop table if exists remediation_plan")
    for a in planned:
        a["params"] = json.loads(a["params"]) if isinstance(a["params"], str) else a["params"]
    return planned


def summary(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per rule and kind: how many actions, their weekly waste by currency, how many wastewatch
    can apply and how many are for other tooling; biggest waste first."""
    lines: dict[tuple[str, str], dict[str, Any]] = {}
    for a in actions:
        line = lines.setdefault(
            (a["rule_id"], a["kind"]),
            {
                "rule_id": a["rule_id"],
                "kind": a["kind"],
                "count": 0,
                "waste": {},
                "executable": 0,
                "manual": 0,
            },
        )
        line["count"] += 1
        currency = a["currency"] or ""
        line["waste"][currency] = line["waste"].get(currency, Decimal(0)) + Decimal(a["estimated_waste"] or 0)
        line["executable" if a["executable"] else "manual"] += 1
    return sorted(lines.values(), key=lambda x: (-sum(x["waste"].values()), x["rule_id"], x["kind"]))


def group_key(action: dict[str, Any]) -> str:
    """Who an action goes to: its owner, else its team, else `unassigned`."""
    return action.get("owner") or action.get("team") or "unassigned"


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, date):
        return value.isoformat()
    return value


def plan_document(week: str, actions: list[dict[str, Any]], now: datetime | None = None) -> dict[str, Any]:
    """The plan as JSON for other tooling, grouped by owner (else team): every action, including those
    wastewatch cannot act on itself (`executable: false`, with `manual_reason`)."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for a in actions:
        groups[group_key(a)].append({k: _plain(v) for k, v in a.items()})
    return {
        "week": week,
        "generated_at": _plain(now or utcnow()),
        "actions": len(actions),
        "owners": [
            {
                "owner": key,
                "actions": items,
                "estimated_waste": {
                    cur: str(
                        sum(
                            (Decimal(i["estimated_waste"]) for i in items if i["currency"] == cur), Decimal(0)
                        )
                    )
                    for cur in sorted({i["currency"] or "" for i in items})
                },
            }
            for key, items in sorted(groups.items())
        ],
    }


def write_plan(config: Config, week: str, document: dict[str, Any]) -> Path:
    """Write the JSON plan beside the week's report (<reports_dir>/<week>/remediation-plan.json), atomically."""
    folder = config.reports_path / week
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / PLAN_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
