"""Delivery of the weekly report: a Slack-compatible webhook post and an e-mail-ready HTML file.

Configured by an optional `notify:` section of wastewatch.yaml (NotifyConfig, unknown keys rejected):

    notify:
      webhook_url: https://hooks.slack.com/services/T000/B000/XXXX   # Slack, Mattermost, Rocket.Chat, ...
      email_html: true          # also write <reports_dir>/<week>/email.html (inline styles, tables only)
      teams: true               # one line per team in the post
      report_url: https://finops.example.com/reports   # where reports/<week>/ is served, for links

The post is `{"text": ..., "blocks": [...]}`: `text` is the whole message in Slack mrkdwn (what
Slack-compatible receivers that ignore blocks show), `blocks` the same in sections. A failed post never
loses the report: delivery returns the problems and the report files stay written.

Text is escaped for its medium: in the post every string from the data (team names, resource ids, rule
names, currencies) has `&`, `<` and `>` escaped as Slack asks, so `<!channel>` or `<url|label>` in a tag
value is shown, never acted on, and a backtick cannot end a code span; the e-mail HTML is autoescaped by
Jinja. The webhook URL is a secret (its path is the token): messages name it by scheme and host only, and
links pass through `redact()`.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pipelines.config import NotifyConfig
from pipelines.redact import redact, remember, url_label
from pipelines.report.render import environment

if TYPE_CHECKING:
    from pipelines.report.model import WeeklyReport

EMAIL_FILE = "email.html"


class NotifyError(Exception):
    """A delivery failed; the message names the target and the problem. `retryable`: the receiver may take
    the same post later (a connection error, a timeout, HTTP 429 or 5xx), not a post it refused (4xx)."""

    def __init__(self, message: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


def _money(value: Any, currency: str) -> str:
    return f"{currency} {Decimal(value):,.2f}"


def mrkdwn(value: Any) -> str:
    """A string from the data made inert in Slack mrkdwn: `&`, `<`, `>` escaped (Slack's own rule)."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def code_span(value: Any) -> str:
    """A string shown in a mrkdwn code span: escaped, and without backticks (which would end the span)."""
    return mrkdwn(value).replace("`", "'").replace("\n", " ")


def headline_lines(report: WeeklyReport) -> list[str]:
    out = []
    savings = report.savings()
    for h in report.headline:
        cur = h["currency"]
        pct = f" ({h['waste_pct']} % of spend)" if h["waste_pct"] is not None else ""
        prev = (
            "last week not evaluated"
            if h["prev_waste"] is None
            else f"last week {_money(h['prev_waste'], cur)}"
        )
        out.append(
            f"Spend {_money(h['spend'], cur)}, waste {_money(h['waste'], cur)}{pct} in "
            f"{h['waste_findings']} finding(s); {prev}; "
            f"waste that stopped since last week {_money(savings.get(cur, 0), cur)}."
        )
    return out or ["No spend and no findings this week."]


def team_lines(report: WeeklyReport) -> list[str]:
    lines = []
    for t in report.by_team():
        pct = f" ({t['waste_pct']} %)" if t["waste_pct"] is not None else ""
        burn = ""
        if t["budget"] and t["budget"]["burn_pct"] is not None:
            burn = f", budget {t['budget']['burn_pct']:.0f} % used"
        lines.append(
            f"{t['team']}: waste {_money(t['waste'], t['currency'])}{pct} of {_money(t['spend'], t['currency'])}{burn}"
        )
    return lines


def action_lines(report: WeeklyReport, top: int = 5) -> list[str]:
    """The week's biggest remediation actions (id, kind, target, owner, weekly waste, state) and, per
    currency, the waste that actions applied before the week stopped in it; in mrkdwn, escaped."""
    lines = [
        f"`{code_span(a['action_id'])}` {mrkdwn(a['kind'])} `{code_span(a['target'])}` "
        f"({mrkdwn(a['owner'] or a['team'] or 'unassigned')}): "
        f"{mrkdwn(_money(a['estimated_waste'], a['currency'] or ''))} a week, {mrkdwn(a['state'])}"
        for a in report.actions[:top]
    ]
    saved: dict[str, tuple[Decimal, int]] = {}
    for r in report.realised:
        if r["realised_saving"]:
            amount, count = saved.get(r["currency"] or "", (Decimal(0), 0))
            saved[r["currency"] or ""] = (amount + r["realised_saving"], count + 1)
    lines.extend(
        f"saved this week by {count} applied action(s): {mrkdwn(_money(amount, cur))}"
        for cur, (amount, count) in sorted(saved.items())
    )
    return lines


def _link(config: NotifyConfig, report: WeeklyReport, page: str = "report.html") -> str | None:
    """The link to a report page; credentials in `report_url` (user info, tokens) are never sent on."""
    if not config.report_url:
        return None
    return redact(f"{config.report_url.rstrip('/')}/{report.week}/{page}")


def slack_payload(report: WeeklyReport, config: NotifyConfig) -> dict[str, Any]:
    """A Slack-compatible message: headline, top findings, top actions, attention count, per-team lines."""
    title = f"*wastewatch {report.week}*"
    link = _link(config, report)
    if link:
        title += f" <{link.replace('|', '%7C').replace('>', '%3E')}|open the report>"
    sections = [title, "\n".join(mrkdwn(line) for line in headline_lines(report))]
    top = report.top[:5]
    if top:
        sections.append(
            "*Top findings*\n"
            + "\n".join(
                f"• {mrkdwn(f['rule_id'])} `{code_span(f['resource_id'])}` ({mrkdwn(f['team'])}): "
                f"{mrkdwn(_money(f['estimated_waste'], f['currency'] or ''))}"
                for f in top
            )
        )
    actions = action_lines(report)
    if actions:
        sections.append(
            "*Top actions* (`wastewatch remediate`)\n" + "\n".join(f"• {line}" for line in actions)
        )
    attention = [a for a in report.attention_by_rule() if a["findings"]]
    if attention:
        sections.append(
            "*Needs attention (not waste)*\n"
            + "\n".join(
                f"• {mrkdwn(a['rule_id'])} {mrkdwn(a['rule_name'])}: {a['findings']} item(s), "
                f"{mrkdwn(_money(a['at_stake'], a['currency'] or ''))} at stake"
                for a in attention
            )
        )
    if config.teams:
        teams = team_lines(report)
        if teams:
            sections.append("*By team*\n" + "\n".join(f"• {mrkdwn(line)}" for line in teams))
    return {
        "text": "\n\n".join(sections),
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": s}} for s in sections],
    }


def post_webhook(url: str, payload: dict[str, Any], timeout: float) -> None:
    """POST the payload; NotifyError names the webhook by scheme and host only (its path is the secret)."""
    data = json.dumps(payload).encode("utf-8")
    where = url_label(url)
    request = urllib.request.Request(  # noqa: S310 - the URL is the operator's configured webhook
        url, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            status = response.status
    except urllib.error.HTTPError as exc:
        body = exc.read(200).decode("utf-8", "replace")
        text = " ".join(body.split())
        raise NotifyError(
            redact(f"webhook {where}: HTTP {exc.code} {exc.reason}: {text}"),
            retryable=exc.code == 429 or exc.code >= 500,
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise NotifyError(
            redact(f"webhook {where}: cannot post: {reason}"), retryable=not isinstance(exc, ValueError)
        ) from None
    if not 200 <= status < 300:
        raise NotifyError(f"webhook {where}: HTTP {status}")


def post_with_retry(
    url: str,
    payload: dict[str, Any],
    timeout: float,
    retries: int,
    backoff_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """post_webhook, tried again up to `retries` times while the failure is retryable, waiting `backoff_s`
    seconds and twice as long before each next attempt; returns the attempts made. The last failure is
    raised (its message redacted, naming the webhook by scheme and host and the attempts)."""
    remember(url)
    attempt, wait = 1, backoff_s
    while True:
        try:
            post_webhook(url, payload, timeout)
            return attempt
        except NotifyError as exc:
            if not exc.retryable or attempt > retries:
                suffix = f" (after {attempt} attempts)" if attempt > 1 else ""
                raise NotifyError(f"{exc}{suffix}", retryable=exc.retryable) from None
        sleep(wait)
        attempt, wait = attempt + 1, wait * 2


def email_html(report: WeeklyReport, config: NotifyConfig) -> str:
    return (
        environment()
        .get_template("email.html.j2")
        .render(
            r=report,
            headline=headline_lines(report),
            teams=team_lines(report) if config.teams else [],
            link=_link(config, report),
        )
    )


def deliver(
    report: WeeklyReport, config: NotifyConfig | dict[str, Any] | None
) -> tuple[list[str], list[str]]:
    """Post and/or write as configured; returns (what was done, problems). Never raises for delivery."""
    if config is None:
        return [], []
    cfg = config if isinstance(config, NotifyConfig) else NotifyConfig.model_validate(config)
    done: list[str] = []
    problems: list[str] = []
    if cfg.email_html:
        path = report.directory / EMAIL_FILE
        tmp = path.with_suffix(".html.tmp")
        tmp.write_text(email_html(report, cfg), encoding="utf-8")
        tmp.replace(path)
        done.append(f"wrote {path}")
    if cfg.webhook_url:
        remember(cfg.webhook_url)
        try:
            post_webhook(cfg.webhook_url, slack_payload(report, cfg), cfg.timeout_s)
            done.append(f"posted to {url_label(cfg.webhook_url)}")
        except NotifyError as exc:
            problems.append(str(exc))
    return done, problems
