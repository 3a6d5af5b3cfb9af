"""The daily alert for live, expensive waste (`wastewatch alert`, the `daily_alert_schedule`; docs/alerts.md).

A weekly report lets an idle 8-GPU instance burn for a week; this check posts, to the same Slack-compatible
webhook as the weekly summary (pipelines/report/notify.py: its transport, escaping and redaction), the GPU001
and GPU004 waste that is still running and costs at least `alert.min_daily_waste` a day, once per finding
until it changes, with the remediation action `wastewatch remediate plan` gives it.

The data's "now" (`as_of`) is the end of the newest hour both the bill and the GPU telemetry reach
(sql/alerts/as_of.sql says why). Each watched rule runs, with the config's params, over two windows that
end there:
- the day, [as_of - 24 h, as_of): the finding's daily waste, compared with the threshold;
- the newest `live_hours` hours: a finding is *still running* when the rule still prices waste on the same
  resource in them (GPU001: an idle stretch of at least min_idle_hours reaches into them; GPU004: a zombie
  stretch does, or a failed job or a crash loop's attempt ran in them).
The rules take any window (rules._contract.Window; their stretches are followed 48 h past its edges and
only in-window hours are priced), so these are the rules' own queries, not copies.

A finding is sent when it is running, its daily waste is at least the threshold, it is not acknowledged
(`wastewatch ack`) and it changed since it was last sent (sql/raw/alerts_sent.sql): never sent before; a
check after the last send found it not running (it stopped and came back); its status or currency differs;
or its daily waste moved by at least `change_pct` percent of the amount last sent, up or down.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import duckdb
import polars as pl

from pipelines.config import AlertConfig, Config
from pipelines.redact import url_label
from pipelines.report.acks import in_force
from pipelines.report.notify import (
    PACE_S,
    NotifyError,
    Post,
    Section,
    code_span,
    mrkdwn,
    post_parts,
    split_message,
)
from pipelines.warehouse import one, rows, scalar, sql_text, transaction, utcnow
from rules import Window, get_rule
from rules._contract import finding_key

SEND, BELOW, ACKED, UNCHANGED = "send", "below_threshold", "acknowledged", "unchanged"


class AlertError(Exception):
    """The alert could not be posted; nothing was recorded as sent. The message is redacted."""


@dataclass(frozen=True)
class LiveFinding:
    """A watched finding that is still running, with what the check decided for it and why."""

    finding_key: str
    rule_id: str
    rule_name: str
    resource_id: str | None
    resource_type: str | None
    team: str | None
    owner: str | None
    status: str
    reason: str
    daily_waste: Decimal
    live_waste: Decimal
    currency: str | None
    action_kind: str | None
    action_id: str | None
    action_state: str | None
    verdict: str  # SEND, BELOW, ACKED or UNCHANGED
    why: str  # the change that makes it worth a post, or why it is not sent


@dataclass
class AlertCheck:
    """One check: the data's now, the day judged, and every watched finding still running."""

    as_of: datetime | None
    settings: AlertConfig
    live: list[LiveFinding] = field(default_factory=list)

    @property
    def day_start(self) -> datetime | None:
        return self.as_of - timedelta(hours=24) if self.as_of else None

    @property
    def to_send(self) -> list[LiveFinding]:
        return [f for f in self.live if f.verdict == SEND]


def _money(value: Decimal, currency: str | None) -> str:
    return f"{currency or ''} {value:,.2f}".strip()


def _moved(now: Decimal, before: Decimal, pct: Decimal) -> bool:
    return abs(now - before) >= before * pct / 100 if before > 0 else now > 0


def _verdict(
    f: dict[str, Any], sent: dict[str, Any] | None, acked: bool, settings: AlertConfig
) -> tuple[str, str]:
    """Whether a running finding is posted, and why (docs/alerts.md "What a change is")."""
    amount = _money(f["daily_waste"], f["currency"])
    if acked:
        return ACKED, "acknowledged (`wastewatch ack`): a known exception"
    if f["daily_waste"] < settings.min_daily_waste:
        return BELOW, f"{amount} in the last 24 h, under min_daily_waste {settings.min_daily_waste}"
    if sent is None:
        return SEND, "new"
    if sent["stopped_since_sent"]:
        return (
            SEND,
            f"running again: it had stopped since it was sent at {sent['sent_at']:%Y-%m-%d %H:%M} UTC",
        )
    if sent["status"] != f["status"] or (sent["currency"] or "") != (f["currency"] or ""):
        return SEND, f"changed from {sent['status']} in {sent['currency']}"
    before = Decimal(sent["daily_waste"])
    if _moved(f["daily_waste"], before, settings.change_pct):
        return (
            SEND,
            f"{'up' if f['daily_waste'] > before else 'down'} from {_money(before, sent['currency'])}",
        )
    return UNCHANGED, f"sent at {sent['sent_at']:%Y-%m-%d %H:%M} UTC with {_money(before, sent['currency'])}"


def _waste(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter((pl.col("status") == "waste") & (pl.col("estimated_waste") > 0))


def check(con: duckdb.DuckDBPyConnection, config: Config, as_of: datetime | None = None) -> AlertCheck:
    """Evaluate the watched rules for the day up to `as_of` (default: sql/alerts/as_of.sql, the end of the
    newest hour both bill and telemetry reach) and decide, for each finding still running, whether to post
    it. Reads only."""
    settings = config.alert or AlertConfig()
    now = as_of or scalar(con, sql_text("alerts", "as_of"))
    result = AlertCheck(now, settings)
    if now is None:
        return result
    day = Window(now - timedelta(hours=24), now)
    newest = Window(now - timedelta(hours=settings.live_hours), now)
    sent = {r["finding_key"]: r for r in rows(con, sql_text("alerts", "sent"))}
    acked = {a["finding_key"] for a in in_force(con, now.date())}
    for rule_id in settings.rules:
        rule = get_rule(rule_id)
        params = rule.make_params(config.rule_overrides(rule.id), config)
        running = {
            r["resource_id"]: r["estimated_waste"]
            for r in _waste(rule.evaluate(con, newest, params)).iter_rows(named=True)
        }
        for f in _waste(rule.evaluate(con, day, params)).iter_rows(named=True):
            if f["resource_id"] not in running:
                continue  # it cost money today but no longer runs: the weekly report has it
            key = finding_key(rule.id, f["resource_id"])
            f["daily_waste"] = Decimal(f["estimated_waste"])
            verdict, why = _verdict(f, sent.get(key), key in acked, settings)
            action = one(
                con, sql_text("alerts", "action"), {"rule_id": rule.id, "resource_id": f["resource_id"]}
            )
            kind, action_id, state = action if action else (None, None, None)
            result.live.append(
                LiveFinding(
                    finding_key=key,
                    rule_id=rule.id,
                    rule_name=rule.name,
                    resource_id=f["resource_id"],
                    resource_type=f["resource_type"],
                    team=f["team"],
                    owner=f["owner"],
                    status=f["status"],
                    reason=f["reason"],
                    daily_waste=f["daily_waste"],
                    live_waste=Decimal(running[f["resource_id"]]),
                    currency=f["currency"],
                    action_kind=kind,
                    action_id=action_id,
                    action_state=state,
                    verdict=verdict,
                    why=why,
                )
            )
    result.live.sort(key=lambda f: (-f.daily_waste, f.rule_id, f.resource_id or ""))
    return result


def action_text(f: LiveFinding) -> str:
    """The remediation the finding calls for, as `wastewatch remediate` names it (plain text)."""
    if f.action_kind is None:
        return (
            f"no automatic action for {f.rule_id}: stop or release the node and fix the job "
            f"(`wastewatch rules show {f.rule_id}`, Remediation)"
        )
    if f.action_state is None:
        return (
            f"{f.action_kind} {f.action_id}, not planned yet: `wastewatch remediate plan`, then "
            f'`wastewatch remediate apply {f.action_id} --approve "why"`'
        )
    return f"{f.action_kind} {f.action_id} ({f.action_state}): `wastewatch remediate apply {f.action_id}`"


def headline(result: AlertCheck) -> str:
    assert result.as_of is not None
    s = result.settings
    return (
        f"wastewatch alert: {len(result.to_send)} live finding(s) costing at least {s.min_daily_waste} a day "
        f"(the 24 h of data to {result.as_of:%Y-%m-%d %H:%M} UTC; still running in its last {s.live_hours} h)"
    )


def finding_lines(f: LiveFinding) -> list[str]:
    """One finding in plain text: what, how much, why it is sent, the reason and the planned action."""
    who = "/".join(x for x in (f.team, f.owner) if x) or "unassigned"
    return [
        f"{f.rule_id} {f.rule_name} {f.resource_id} ({who}): {_money(f.daily_waste, f.currency)} in the last "
        f"24 h, {_money(f.live_waste, f.currency)} in the newest hours; {f.why}",
        f"  {f.reason}",
        f"  action: {action_text(f)}",
    ]


def slack_posts(result: AlertCheck) -> list[Post]:
    """The message: the headline, then one section per finding (data strings escaped for mrkdwn), as the
    posts Slack takes; each post names the findings it carries (Post.keys)."""
    sections = []
    for f in result.to_send:
        who = "/".join(x for x in (f.team, f.owner) if x) or "unassigned"
        sections.append(
            Section(
                None,
                (
                    f"• {mrkdwn(f.rule_id)} {mrkdwn(f.rule_name)} `{code_span(f.resource_id)}` ({mrkdwn(who)}): "
                    f"{mrkdwn(_money(f.daily_waste, f.currency))} in the last 24 h, still running ({mrkdwn(f.why)})\n"
                    f"{mrkdwn(f.reason)}\n"
                    f"Action: {mrkdwn(action_text(f))}",
                ),
                (f.finding_key,),
            )
        )
    return split_message(f"*{mrkdwn(headline(result))}*", sections)


@dataclass
class AlertRun:
    check: AlertCheck
    posted_to: str | None = None
    attempts: int = 0
    parts: int = 0  # the posts the message took (split_message)


def run_alert(
    con: duckdb.DuckDBPyConnection,
    config: Config,
    as_of: datetime | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    pace_s: float = PACE_S,
) -> AlertRun:
    """Check, and unless `dry_run`: record which sent findings still run, post what changed, and record
    each part's findings as sent once the webhook took that part (a long message's parts `pace_s` seconds
    apart). A failed part raises AlertError: the findings of the parts posted before it are recorded, the
    rest are not, so the next check posts only those."""
    result = check(con, config, as_of)
    run = AlertRun(result)
    if dry_run or result.as_of is None:
        return run
    with transaction(con):
        con.execute(
            sql_text("alerts", "mark_seen"),
            {"live": [f.finding_key for f in result.live], "as_of": result.as_of},
        )
    if not result.to_send:
        return run
    url = config.alert_webhook_url
    sink = config.resolve(config.alert.file) if config.alert is not None and config.alert.file else None
    if url is None and sink is None:  # the config's own check makes this unreachable from a loaded file
        raise AlertError(
            "alert.webhook_url: no webhook to post to (set alert.webhook_url or notify.webhook_url)"
        )
    settings = result.settings
    by_key = {f.finding_key: f for f in result.to_send}
    recorded: list[str] = []

    def record(post: Post) -> None:
        at = now or utcnow()
        with transaction(con):
            for key in post.keys:
                f = by_key[key]
                con.execute(
                    sql_text("alerts", "save_sent"),
                    {
                        "finding_key": f.finding_key,
                        "rule_id": f.rule_id,
                        "resource_id": f.resource_id,
                        "status": f.status,
                        "daily_waste": f.daily_waste,
                        "currency": f.currency,
                        "as_of": result.as_of,
                        "action_id": f.action_id,
                        "action_kind": f.action_kind,
                        "reason": f.reason,
                        "sent_at": at,
                    },
                )
        recorded.extend(post.keys)

    posts = slack_posts(result)
    run.parts = len(posts)
    if sink is not None:  # a file stands in for the webhook: every post one JSON line, recorded as sent
        sink.parent.mkdir(parents=True, exist_ok=True)
        with sink.open("a", encoding="utf-8") as out:
            for post in posts:
                out.write(json.dumps(post.payload(), ensure_ascii=False, separators=(",", ":")) + "\n")
                out.flush()
                record(post)
        run.posted_to = f"file {sink}"
        return run
    assert url is not None
    try:
        run.attempts = post_parts(
            url,
            posts,
            settings.timeout_s,
            settings.retries,
            settings.retry_backoff_s,
            pace_s=pace_s,
            on_sent=record,
        )
    except NotifyError as exc:
        left = len(result.to_send) - len(recorded)
        posted = f", {len(recorded)} posted and recorded" if recorded else ""
        raise AlertError(f"{exc}; {left} finding(s) not recorded as sent{posted}") from None
    run.posted_to = url_label(url)
    return run
