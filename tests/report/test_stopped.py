""" "Waste that stopped" beside "Resolved": when the findings resolved since last week stopped no priced
waste (they turned insufficient_data, were acknowledged, or were jobs that ended), the report says "none"
and what they are instead of a green 0.00 that seems to contradict the resolved count (HTML, Markdown,
chat)."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from pipelines.report.notify import NotifyConfig, slack_payload
from pipelines.report.render import environment, page_html, report_html, report_markdown
from pipelines.report.rows import Resolved
from tests.helpers.report import Built


def resolved(key: str, waste: str, now: str = "gone", counted: bool = True, job: bool = False) -> Resolved:
    return Resolved.of({
        "finding_id": key, "finding_key": key, "rule_id": "GPU001", "rule_name": "idle-gpu-instance",
        "category": "idle", "resource_id": f"i-{key}", "resource_type": "Instance", "team": "nlp",
        "project": None, "currency": "USD", "last_reason": "idle", "last_week_waste": Decimal(waste),
        "counted_last_week": counted, "now": now, "job": job,
    })  # fmt: skip


NOT_STOPPED = [
    resolved("a", "50", now="insufficient_data"),
    resolved("b", "20", job=True),
    resolved("c", "30", counted=False),
    resolved("d", "10", now="insufficient_data"),
]
WHAT = "2 now insufficient data, 1 job ended or did not recur, 1 acknowledged last week"


def test_resolved_findings_that_stopped_no_priced_waste_read_as_none_with_what_they_are(built: Built) -> None:
    report = replace(built.report, resolved=NOT_STOPPED, previous_evaluated=True)
    stop = report.stopped("USD")
    assert stop == {
        "amount": Decimal(0), "resolved": 4, "stopped": 0,
        "note": f"4 resolved, none of them priced waste that stopped: {WHAT}",
    }  # fmt: skip
    env = environment()
    html = report_html(report, env)
    assert (
        '<div class="card"><div class="label">Waste that stopped</div><div class="value" id="saved-USD">none<'
        in html
    )
    assert f'id="stopped-note-USD">4 resolved, none of them priced waste that stopped: {WHAT}<' in html
    assert 'id="stopped-none-USD">none of the 4 resolved was priced waste that stopped<' in html
    changes = page_html(report, "changes", env)
    assert "Waste that stopped since last week (USD): none — 4 resolved, none of them priced waste" in changes
    md = report_markdown(report, env)
    assert (
        f"- **Waste that stopped since last week:** none (4 resolved, none of them priced waste that stopped: {WHAT})"
        in md
    )
    chat = slack_payload(report, NotifyConfig())["text"]
    assert (
        f"; waste that stopped since last week: none (4 resolved, none of them priced waste that stopped: {WHAT})."
        in chat
    )
    assert "0.00" not in html.split('id="saved-USD"')[1][:20]


def test_waste_that_stopped_counts_only_gone_standing_resources_and_names_the_rest(built: Built) -> None:
    report = replace(built.report, resolved=[resolved("z", "100.00"), *NOT_STOPPED], previous_evaluated=True)
    stop = report.stopped("USD")
    assert stop["amount"] == Decimal("100.00") and (stop["resolved"], stop["stopped"]) == (5, 1)
    assert stop["note"] == (
        f"last week's waste of the 1 resolved finding(s) that are gone; 4 more resolved but not counted as "
        f"stopped: {WHAT}"
    )
    env = environment()
    html = report_html(report, env)
    assert (
        '<div class="card saved"><div class="label">Waste that stopped</div><div class="value" id="saved-USD">100.00<'
        in html
    )
    md = report_markdown(report, env)
    assert f"- **Waste that stopped since last week:** USD 100.00 ({stop['note']})" in md  # as report-full.md
    assert "waste that stopped since last week USD 100.00." in slack_payload(report, NotifyConfig())["text"]
