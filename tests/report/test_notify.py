"""Delivery: the Slack-compatible webhook post (to a real HTTP server on 127.0.0.1) and the e-mail HTML."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pipelines.redact import url_label
from pipelines.report.notify import NotifyConfig, deliver, slack_payload
from tests.helpers.report import Built
from tests.helpers.webhook import WebhookReceiver


def test_webhook_posts_headline_top_findings_attention_and_teams(
    built: Built,
    receiver: tuple[str, type[WebhookReceiver]],
) -> None:
    url, handler = receiver
    done, problems = deliver(
        built.report, {"webhook_url": url, "report_url": "https://finops.example.com/r/"}
    )
    # the webhook's path is its secret: messages name the scheme and host only
    assert problems == [] and done == [f"posted to {url_label(url)}"]
    assert done[0].endswith(":" + url.split(":")[2].split("/")[0] + "/***")
    [post] = handler.received
    assert post["path"] == "/hooks/T000/B000/XXXX" and post["type"] == "application/json"
    text = post["body"]["text"]
    assert "<https://finops.example.com/r/2026-W48/report.html|open the report>" in text
    assert "Spend USD 21,564.00, waste USD 8,640.00 (40.1 % of spend) in 1 finding" in text
    assert "• GPU001 `i-h100` (nlp): USD 8,640.00" in text
    assert "COST001 unattributed-spend: 2 item(s), USD 2,496.00 at stake" in text
    assert "nlp: waste USD 8,640.00 (63.9 %) of USD 13,524.00, budget 135 % used" in text
    blocks = post["body"]["blocks"]
    assert all(b["type"] == "section" and b["text"]["type"] == "mrkdwn" for b in blocks)
    assert "\n\n".join(b["text"]["text"] for b in blocks) == text


def test_a_failing_webhook_is_reported_and_the_report_stays(
    built: Built,
    receiver: tuple[str, type[WebhookReceiver]],
) -> None:
    url, handler = receiver
    handler.status = 400
    done, problems = deliver(built.report, NotifyConfig(webhook_url=url))
    assert done == [] and problems == [f"webhook {url_label(url)}: HTTP 400 Bad Request: invalid_payload"]
    assert "T000" not in problems[0] and "XXXX" not in problems[0]
    assert (built.directory / "report.html").is_file()
    done, problems = deliver(built.report, NotifyConfig(webhook_url="http://127.0.0.1:9/none", timeout_s=2))
    assert problems and problems[0].startswith("webhook http://127.0.0.1:9/***: cannot post:")


def test_email_html_is_self_contained(built: Built) -> None:
    done, problems = deliver(built.report, {"email_html": True, "teams": False})
    path = built.directory / "email.html"
    assert done == [f"wrote {path}"] and not problems
    html = path.read_text(encoding="utf-8")
    assert "<style" not in html and "<script" not in html and "src=" not in html  # inline styles only
    assert "Spend USD 21,564.00, waste USD 8,640.00" in html and "i-h100" in html
    assert "Teams by waste" not in html


def test_notify_config_rejects_unknown_keys_and_nothing_configured_does_nothing(
    built: Built,
) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        NotifyConfig.model_validate({"webhook": "http://x"})
    assert deliver(built.report, None) == ([], [])
    payload = slack_payload(built.report, NotifyConfig(teams=False))
    assert "*By team*" not in payload["text"]
