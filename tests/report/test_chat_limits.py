"""Chat within its limits: every post of the weekly report and of the daily alert, however large the fleet,
is one Slack takes (docs.slack.dev: at most 50 blocks, 3,000 characters a section's text, 40,000 in `text`;
slackapi/bolt-js#2509: about 13,000 characters of block text in all). A long message is split into posts
titled "part k of n", each line in exactly one of them, posted a set pace apart to a real HTTP server.

The limits are checked here by this file's own reading of Slack's documentation (`problems`), not by the
code's constants, so a constant set too high fails the test.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest

from pipelines.config import AlertConfig
from pipelines.redact import url_label
from pipelines.report.alert import SEND, AlertCheck, LiveFinding
from pipelines.report.alert import slack_posts as alert_posts
from pipelines.report.notify import (
    POSTED_FILE,
    NotifyConfig,
    NotifyError,
    Section,
    deliver,
    post_parts,
    shorten,
    slack_posts,
    split_message,
)
from tests.helpers.report import Built

# Slack's documented limits (the brief's figures), independent of pipelines.report.notify's constants
SLACK_BLOCKS, SLACK_SECTION, SLACK_ALL_BLOCKS, SLACK_TEXT = 50, 3_000, 13_000, 40_000


def units(text: str) -> int:
    """Characters as Slack (JavaScript) counts them: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def problems(payload: dict[str, Any]) -> list[str]:
    """What Slack would refuse in a webhook payload."""
    out = []
    blocks = payload["blocks"]
    if len(blocks) > SLACK_BLOCKS:
        out.append(f"{len(blocks)} blocks")
    for i, b in enumerate(blocks):
        if b["type"] != "section" or b["text"]["type"] != "mrkdwn":
            out.append(f"block {i}: {b['type']}")
        if units(b["text"]["text"]) > SLACK_SECTION:
            out.append(f"block {i}: {units(b['text']['text'])} characters")
    total = sum(units(b["text"]["text"]) for b in blocks)
    if total > SLACK_ALL_BLOCKS:
        out.append(f"{total} characters of block text")
    if units(payload["text"]) > SLACK_TEXT:
        out.append(f"{units(payload['text'])} characters of text")
    return out


def many_teams(built: Built, n: int) -> Any:
    """The built week's report with `n` teams, each named with mrkdwn's special characters (escaped, so
    longer in the post) and a character beyond the BMP (two UTF-16 units)."""
    rows = [
        {"team": f"team-{i:04d} <R&D> \U0001f680 {'platform-' * 6}", "currency": "USD",
         "spend": Decimal(1000 + i), "waste": Decimal(i), "waste_findings": 1}
        for i in range(n)
    ]  # fmt: skip
    return replace(built.report, by_project=rows, budgets=[])


def test_a_weekly_post_for_1500_teams_is_split_into_posts_slack_takes(built: Built) -> None:
    report = many_teams(built, 1500)
    config = NotifyConfig(teams=True, report_url="https://finops.example.com/r/")
    posts = slack_posts(report, config)
    payloads = [p.payload() for p in posts]
    assert len(posts) == 20  # 1,500 lines of about 120 characters, 12,000 a post
    for k, payload in enumerate(payloads, 1):
        assert problems(payload) == [], k
        title = payload["blocks"][0]["text"]["text"]
        assert title.startswith("*wastewatch 2026-W48* <https://finops.example.com/r/2026-W48/report.html|")
        assert title.endswith(f"(part {k} of {len(posts)})")
        assert "\n\n".join(b["text"]["text"] for b in payload["blocks"]) == payload["text"]
    text = "\n".join(p["text"] for p in payloads)
    # every team once, in the report's order (most waste first), its name escaped for mrkdwn
    found = [int(m) for m in re.findall(r"• team-(\d{4}) &lt;R&amp;D&gt; ", text)]
    assert found == list(range(1499, -1, -1))
    assert "Spend USD 21,564.00" in payloads[0]["text"] and "*Top findings*" in payloads[0]["text"]
    assert text.count("*By team* (continued)") >= len(posts) - 1


def alert_check(n: int) -> AlertCheck:
    """A check with `n` findings to send, each with a long reason and resource id full of mrkdwn's
    special characters."""
    live = [
        LiveFinding(
            finding_key=f"k{i:04d}", rule_id="GPU001", rule_name="idle-gpu-instance",
            resource_id=f"arn:aws:ec2:eu-west-1:123456789012:instance/i-{i:017d}`<x>",
            resource_type="Instance", team="nlp & <vision>", owner="ana", status="waste",
            reason="idle: " + "GPU util 0.4 % < 5 % & power 70 W < 100 W; " * 12,
            daily_waste=Decimal(5000 - i), live_waste=Decimal(300), currency="USD",
            action_kind="stop_instance", action_id=f"{i:016x}", action_state=None, verdict=SEND, why="new",
        )
        for i in range(n)
    ]  # fmt: skip
    return AlertCheck(datetime(2026, 11, 24), AlertConfig(), live)


def test_a_daily_alert_of_200_findings_is_split_into_posts_slack_takes() -> None:
    posts = alert_posts(alert_check(200))
    assert len(posts) > 5
    for k, post in enumerate(posts, 1):
        payload = post.payload()
        assert problems(payload) == [], k
        assert payload["blocks"][0]["text"]["text"].startswith("*wastewatch alert: 200 live finding(s)")
        assert payload["blocks"][0]["text"]["text"].endswith(f"(part {k} of {len(posts)})")
        # a post names exactly the findings its text carries
        assert [f"i-{int(key[1:]):017d}" for key in post.keys] == re.findall(r"i-\d{17}", payload["text"])
    keys = [k for p in posts for k in p.keys]
    assert keys == [f"k{i:04d}" for i in range(200)]  # every finding once, in order


def test_one_line_too_long_for_a_section_is_shortened_never_cut_in_an_escape() -> None:
    [post] = split_message("*t*", [Section("*h*", ("`id` " + "&amp;" * 1000,)), Section(None, ("x",))])
    payload = post.payload()
    assert problems(payload) == []
    line = payload["blocks"][1]["text"]["text"]
    assert line.startswith("*h*\n`id` &amp;") and line.endswith("&amp;…")
    assert payload["blocks"][2]["text"]["text"] == "x"
    # a code span the cut leaves open is closed; characters beyond the BMP count two
    assert shorten("ab `cdefgh", 8) == "ab `cd…`"
    assert shorten("\U0001f680" * 10, 7) == "\U0001f680" * 2 + "…"


def test_the_parts_are_posted_a_pace_apart_and_a_failed_part_stops_the_rest(
    built: Built, timed: tuple[str, Any]
) -> None:
    url, handler = timed
    report = many_teams(built, 200)
    posts = slack_posts(report, NotifyConfig())
    assert len(posts) == 3
    done, failed = deliver(report, NotifyConfig(webhook_url=url), pace_s=0.3)
    assert failed == [] and done == [f"posted to {url_label(url)} in 3 parts"]
    assert [p["body"] for p in handler.received] == [p.payload() for p in posts]
    gaps = [b - a for a, b in zip(handler.at, handler.at[1:], strict=False)]
    assert len(gaps) == 2 and all(g >= 0.3 for g in gaps), gaps
    # the report run again: the parts the webhook took are recorded beside the report, nothing is re-sent
    handler.received.clear()
    done, failed = deliver(report, NotifyConfig(webhook_url=url), pace_s=0)
    assert failed == [] and handler.received == []
    assert done == [f"already posted to {url_label(url)} in 3 parts: nothing sent again"]
    # a fresh week's folder; the second part refused: the third is not posted, the message says which went
    (report.directory / POSTED_FILE).unlink()
    handler.fail = {2: 400}
    done, failed = deliver(report, NotifyConfig(webhook_url=url), pace_s=0)
    assert done == [] and failed == [
        f"webhook {url_label(url)}: HTTP 400 Bad Request: invalid_payload; part 2 of 3 not posted, "
        "part 1 was posted"
    ]
    assert len(handler.received) == 2
    # the retry sends only the parts not yet taken
    handler.received.clear()
    handler.fail = {}
    done, failed = deliver(report, NotifyConfig(webhook_url=url), pace_s=0)
    assert failed == [] and done == [f"posted the 2 part(s) of 3 not yet posted to {url_label(url)}"]
    assert [p["body"] for p in handler.received] == [p.payload() for p in posts[1:]]
    assert url not in (report.directory / POSTED_FILE).read_text()  # the URL's digest, never the URL
    (report.directory / POSTED_FILE).unlink()  # the built report is shared with other tests
    handler.received.clear()
    # what was taken is told part by part (the alert records a part's findings then): here none
    handler.received.clear()
    handler.fail = {1: 400}
    sent: list[int] = []
    with pytest.raises(NotifyError, match="part 1 of 3 not posted, none was posted"):
        post_parts(url, posts, timeout=5, pace_s=0, on_sent=lambda p: sent.append(p.number))
    assert sent == [] and len(handler.received) == 1
    handler.fail = {}
    assert post_parts(url, posts, timeout=5, pace_s=0, on_sent=lambda p: sent.append(p.number)) == 3
    assert sent == [1, 2, 3]
