"""Chat within its limits: every post of the weekly report and of the daily alert, however large the fleet,
is one Slack takes (docs.slack.dev: at most 50 blocks, 3,000 characters a section's text, 40,000 in `text`;
slackapi/bolt-js#2509: about 13,000 characters of block text in all). The weekly post is the digest, at most
4 KB of text for any fleet (one post); a long alert is split into posts titled "part k of n", each line in
exactly one of them, posted a set pace apart to a real HTTP server.

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
from pipelines.report.rows import ProjectWaste
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


def many_teams(built: Built, n: int, idle: int = 0) -> Any:
    """The built week's report with `n` teams, each named with mrkdwn's special characters (escaped, so
    longer in the post) and a character beyond the BMP (two UTF-16 units), and `idle` teams with neither
    spend nor waste (never listed)."""
    rows = [
        ProjectWaste(team=f"team-{i:04d} <R&D> \U0001f680 {'platform-' * 6}", project="p", currency="USD",
                     spend=Decimal(1000 + i), waste=Decimal(i), waste_pct=None, waste_findings=1)
        for i in range(n)
    ] + [
        ProjectWaste(team=f"idle-{i}", project="p", currency="USD", spend=Decimal(0), waste=Decimal(0),
                     waste_pct=None, waste_findings=0)
        for i in range(idle)
    ]  # fmt: skip
    return replace(built.report, by_project=rows, budgets=[])


def test_the_weekly_post_is_the_digest_within_4_kb_for_1500_teams(built: Built) -> None:
    report = many_teams(built, 1500, idle=40)
    config = NotifyConfig(teams=True, report_url="https://finops.example.com/r/")
    [post] = slack_posts(report, config)
    payload = post.payload()
    assert problems(payload) == []
    text = payload["text"]
    assert len(text.encode("utf-8")) <= 4096
    assert text.startswith("*wastewatch 2026-W48* <https://finops.example.com/r/2026-W48/report.html|")
    # the 15 teams with the most waste, one line each, their names escaped for mrkdwn; the link to all
    found = [int(m) for m in re.findall(r"• team-(\d{4}) &lt;R&amp;D&gt; ", text)]
    assert found == list(range(1499, 1484, -1))
    assert "*Teams by waste* (15 of 1,500)" in text and "idle-" not in text
    assert "<https://finops.example.com/r/2026-W48/teams.html|all 1,500 teams>" in text
    assert "Spend USD 21,564.00" in text and "*Top findings*\n• GPU001 `i-h100` (nlp): USD 8,640.00" in text
    assert text.endswith("<https://finops.example.com/r/2026-W48/report-full.md|everything in Markdown>")


def test_a_weekly_post_too_long_for_4_kb_drops_team_lines_first_and_keeps_the_links(built: Built) -> None:
    """60 currencies and long team names: the teams are cut first, then the other sections;
    each cut section says how many lines it left out, and the links stay."""
    report = many_teams(built, 40)
    headline = [replace(built.report.headline[0], currency=f"C{i:02d}", waste_findings=i) for i in range(60)]
    long_names = [replace(row, team=row.team * 3) for row in report.by_project]
    report = replace(report, headline=headline, by_project=long_names)
    [post] = slack_posts(report, NotifyConfig())
    text = post.payload()["text"]
    assert problems(post.payload()) == [] and len(text.encode("utf-8")) <= 4096
    assert "• team-0039" not in text and "*Teams by waste* (15 of 40)\n… 15 in the report" in text
    assert text.count("Spend C") >= 10 and "Spend C00 21,564.00" in text
    kept = text.count("Spend C")
    assert kept == 60 or f"… {60 - kept} more in the report" in text
    assert text.rstrip().endswith("`report-full.md` (everything in Markdown)")
    assert f"In `{report.directory}`: `report.html` (the report)" in text


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


def long_message(n: int) -> list[Any]:
    """A message of `n` lines too long for one post (what the daily alert sends for a large fleet)."""
    return split_message("*t*", [Section("*h*", tuple(f"line {i:05d} " + "x" * 100 for i in range(n)))])


def test_the_parts_are_posted_a_pace_apart_and_a_failed_part_stops_the_rest(timed: tuple[str, Any]) -> None:
    url, handler = timed
    posts = long_message(250)
    assert len(posts) == 3 and all(problems(p.payload()) == [] for p in posts)
    sent: list[int] = []
    assert post_parts(url, posts, timeout=5, pace_s=0.3, on_sent=lambda p: sent.append(p.number)) == 3
    assert [p["body"] for p in handler.received] == [p.payload() for p in posts] and sent == [1, 2, 3]
    gaps = [b - a for a, b in zip(handler.at, handler.at[1:], strict=False)]
    assert len(gaps) == 2 and all(g >= 0.3 for g in gaps), gaps
    # the second part refused: the third is not posted, the message says which went
    handler.received.clear()
    handler.fail = {2: 400}
    sent.clear()
    with pytest.raises(NotifyError, match="part 2 of 3 not posted, part 1 was posted"):
        post_parts(url, posts, timeout=5, pace_s=0, on_sent=lambda p: sent.append(p.number))
    assert sent == [1] and len(handler.received) == 2
    handler.received.clear()
    handler.fail = {1: 400}
    with pytest.raises(NotifyError, match="part 1 of 3 not posted, none was posted"):
        post_parts(url, posts, timeout=5, pace_s=0)


def test_the_weekly_post_is_sent_once_and_again_after_a_failure(built: Built, timed: tuple[str, Any]) -> None:
    url, handler = timed
    report = many_teams(built, 200)
    [post] = slack_posts(report, NotifyConfig())
    done, failed = deliver(report, NotifyConfig(webhook_url=url), pace_s=0)
    assert failed == [] and done == [f"posted to {url_label(url)}"]
    assert [p["body"] for p in handler.received] == [post.payload()]
    # the report run again: the post the webhook took is recorded beside the report, nothing is re-sent
    handler.received.clear()
    done, failed = deliver(report, NotifyConfig(webhook_url=url), pace_s=0)
    assert failed == [] and handler.received == []
    assert done == [f"already posted to {url_label(url)}: nothing sent again"]
    assert url not in (report.directory / POSTED_FILE).read_text()  # the URL's digest, never the URL
    # a fresh week's folder and a refused post: the run says so, the next run posts it
    (report.directory / POSTED_FILE).unlink()
    handler.fail = {1: 400}
    done, failed = deliver(report, NotifyConfig(webhook_url=url), pace_s=0)
    assert done == [] and failed == [f"webhook {url_label(url)}: HTTP 400 Bad Request: invalid_payload"]
    handler.received.clear()
    handler.fail = {}
    done, failed = deliver(report, NotifyConfig(webhook_url=url), pace_s=0)
    assert failed == [] and done == [f"posted to {url_label(url)}"] and len(handler.received) == 1
    (report.directory / POSTED_FILE).unlink()  # the built report is shared with other tests
