"""The weekly report's remediation figures and the webhook's top actions: the week's actions with the ids
`remediate apply` takes (before and after a plan), and the waste that actions applied earlier stopped."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipelines.config import Config, load_config
from pipelines.remediate.plan import build_plan
from pipelines.report import write_report
from pipelines.report.model import TOP_ACTIONS
from pipelines.report.notify import NotifyConfig, slack_payload
from rules import Window
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.report import W48, fleet, put_findings

W47 = Window.iso_week("2026-W47")


@pytest.fixture
def warehouse(tmp_path: Path, empty_marts: Path) -> Iterator[tuple[Config, duckdb.DuckDBPyConnection]]:
    write_config(tmp_path, "{}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = open_copy(empty_marts, config.warehouse_path)
    fleet(con)  # the hand-worked fleet's spend, so the findings' waste fits in it
    try:
        yield config, con
    finally:
        con.close()


def test_the_webhook_lists_the_weeks_top_actions_and_what_applied_actions_saved(
    warehouse: tuple[Config, duckdb.DuckDBPyConnection],
) -> None:
    config, con = warehouse
    # W47: i-a100 idle, and its stop applied on the Friday of W47; in W48 it is gone, i-h100 is idle
    put_findings(con, W47, "GPU001", [{"resource_id": "i-a100", "estimated_waste": 80, "team": "vision"}])
    (stopped,) = build_plan(con, W47.start.date())
    applied_at = W47.start + timedelta(days=4)
    con.execute(
        "insert into remediation_log (run_id, action_id, event, actor, logged_at, dry_run, params, result, reason, detail, error) values ('r1', $a, 'apply', 'ops', $t, false, '{}', 'applied', null, 'stopping', null)",
        {"a": stopped["action_id"], "t": applied_at.replace(tzinfo=None)},
    )
    put_findings(con, W48, "GPU001", [
        {"resource_id": "i-h100", "estimated_waste": 120, "team": "nlp", "owner": "alice"},
        {"resource_id": "i-untagged", "estimated_waste": 30},
    ])  # fmt: skip
    put_findings(con, W48, "GPU002", [{"resource_id": "i-h100", "estimated_waste": 10, "status": "waste"}])
    before = write_report(con, config, W48)
    assert [(a["target"], a["kind"], a["state"]) for a in before.actions] == [
        ("i-h100", "stop_instance", "unplanned"),
        ("i-untagged", "stop_instance", "unplanned"),
    ]
    planned = {a["target"]: a["action_id"] for a in build_plan(con, W48.start.date())}
    after = write_report(con, config, W48)
    # the report names the ids the plan gives, before and after it ran
    assert [a["action_id"] for a in before.actions] == [planned["i-h100"], planned["i-untagged"]]
    assert [a["state"] for a in after.actions] == ["planned", "planned"]
    assert [(r["target"], r["baseline_waste"], r["realised_saving"]) for r in after.realised] == [
        ("i-a100", Decimal("80"), Decimal("80"))
    ]
    # the report's Actions and advice section: one row per action with its state, and what was saved
    html = (after.directory / "actions.html").read_text(encoding="utf-8")
    rows = re.findall(r'<tr data-action-id="([0-9a-f]+)" data-kind="(\w+)" data-state="(\w+)">', html)
    assert rows == [
        (planned["i-h100"], "stop_instance", "planned"),
        (planned["i-untagged"], "stop_instance", "planned"),
    ]
    realised = html.split('<table id="realised">')[1].split("</table>")[0]
    assert "i-a100" in realised and "USD 80.00" in realised
    md = (after.directory / "report-full.md").read_text(encoding="utf-8")
    assert (
        f"| `{planned['i-h100']}` | stop instance | GPU001 | `i-h100` | alice | USD 120.00 | planned |" in md
    )
    assert "| USD 80.00 | USD 0.00 | USD 80.00 |" in md
    text = slack_payload(after, NotifyConfig(teams=False))["text"]
    top = text.split("*Top actions* (`wastewatch remediate`)\n")[1].split("\n\n")[0].splitlines()
    assert top == [
        f"• `{planned['i-h100']}` stop_instance `i-h100` (alice): USD 120.00 a week, planned",
        f"• `{planned['i-untagged']}` stop_instance `i-untagged` (unassigned): USD 30.00 a week, planned",
        "• saved this week by 1 applied action(s): USD 80.00",
    ]


def test_the_report_lists_the_biggest_actions_and_says_how_many_more(
    warehouse: tuple[Config, duckdb.DuckDBPyConnection],
) -> None:
    config, con = warehouse
    put_findings(con, W48, "GPU001", [
        {"resource_id": f"i-{n:03d}", "estimated_waste": 1 + n % 7 / 10 + n / 1000} for n in range(TOP_ACTIONS + 5)
    ])  # fmt: skip
    report = write_report(con, config, W48)
    assert len(report.actions) == TOP_ACTIONS + 5
    html = (report.directory / "actions.html").read_text(encoding="utf-8")
    shown = re.findall(r'<tr data-action-id="[0-9a-f]+" data-kind="stop_instance" data-state="unplanned"><td>'
                       r'<code>[0-9a-f]+</code><br><small>stop instance</small></td><td>GPU001</td><td><code>(i-\d+)</code>', html)  # fmt: skip
    assert shown == [a["target"] for a in report.actions[:TOP_ACTIONS]]
    assert f"The {TOP_ACTIONS} biggest of {TOP_ACTIONS + 5} actions" in html
    md = (report.directory / "report-full.md").read_text(encoding="utf-8")
    assert (
        f"The {TOP_ACTIONS} biggest of {TOP_ACTIONS + 5} actions; `wastewatch remediate plan --week 2026-W48`"
        in md
    )


def test_no_actions_no_section(warehouse: tuple[Config, duckdb.DuckDBPyConnection]) -> None:
    config, con = warehouse
    put_findings(con, W48, "GPU002", [{"resource_id": "i-h100", "estimated_waste": 10}])
    report = write_report(con, config, W48)
    assert report.actions == [] and report.realised == []
    assert 'id="no-actions"' in (report.directory / "report.html").read_text(encoding="utf-8")
    assert "Top actions" not in slack_payload(report, NotifyConfig())["text"]
