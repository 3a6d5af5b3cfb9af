"""Delivery of the weekly report: a Slack-compatible webhook post and an e-mail-ready HTML file.

Configured by an optional `notify:` section of wastewatch.yaml (NotifyConfig, unknown keys rejected):

    notify:
      webhook_url: https://hooks.slack.com/services/T000/B000/XXXX   # Slack, Mattermost, Rocket.Chat, ...
      email_html: true          # also write <reports_dir>/<week>/email.html (inline styles, tables only)
      teams: true               # the teams with the most waste in the post, one line each
      report_url: https://finops.example.com/reports   # where reports/<week>/ is served, for links

A post is `{"text": ..., "blocks": [...]}`: `blocks` the message in sections, `text` the same in Slack
mrkdwn (what Slack-compatible receivers that ignore blocks show, and Slack's notification). The weekly
message is the digest (report.md's: headline, top 5, the teams with the most waste, links), at most
CHAT_BYTES of text for any fleet (slack_posts). Any message is kept within Slack's limits (the constants below): a section too long is cut into several, a section line
too long is shortened, and a message that needs more blocks or text than one post takes is sent as
several posts, each titled "part k of n", `pace_s` apart. A failed post never loses the report: delivery
returns the problems and the report files stay written.

Each attempt at a post has a total deadline (`timeout`: connecting, sending and reading the answer; a
peer that answers one byte a second is cut off when it passes) and reads back at most MAX_ANSWER_BYTES of
the answer's body. Redirects are not followed (a webhook that moved is an error naming it).

Text is escaped for its medium: in the post every string from the data (team names, resource ids, rule
names, currencies) has `&`, `<` and `>` escaped as Slack asks, so `<!channel>` or `<url|label>` in a tag
value is shown, never acted on, and a backtick cannot end a code span; the e-mail HTML is autoescaped by
Jinja. The webhook URL is a secret (its path is the token): messages name it by scheme and host only, and
links pass through `redact()`.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import math
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.config import NotifyConfig
from pipelines.redact import redact, remember, url_label
from pipelines.report.model import MAIN_TEAMS
from pipelines.report.render import DIGEST_BYTES, environment, shorten_middle

if TYPE_CHECKING:
    from pipelines.report.model import WeeklyReport

EMAIL_FILE = "email.html"

# Slack's limits for one message (docs.slack.dev/reference/block-kit/blocks: at most 50 blocks;
# .../block-kit/blocks/section-block: a section's text at most 3,000 characters; .../methods/chat.postMessage:
# `text` at most 40,000). Slack also refuses blocks whose texts add up to more than about 13,000 characters
# (`msg_blocks_too_long`, slackapi/bolt-js#2509), so a post keeps its block text to 12,000. Characters are
# counted as Slack counts them, in UTF-16 code units (slack_len).
MAX_BLOCKS = 50
MAX_SECTION_CHARS = 3_000
MAX_BLOCKS_CHARS = 12_000
MAX_TEXT_CHARS = 40_000
# Slack's incoming webhooks take one message a second: the parts of a long message are posted this far apart
PACE_S = 1.0
# what is read back of a webhook's answer: enough for an error's text, never a peer's stream
MAX_ANSWER_BYTES = 4_096
# the longest wait a receiver's Retry-After obtains before a retry (Slack sends one with HTTP 429)
MAX_RETRY_AFTER_S = 30.0
# the longest "(part k of n)" suffix a title is given, reserved in each post's budget
_PART_RESERVE = len(" (part 9999 of 9999)")


class NotifyError(Exception):
    """A delivery failed; the message names the target and the problem. `retryable`: the receiver may take
    the same post later (a connection error, a timeout, HTTP 429 or 5xx), not a post it refused (4xx)."""

    def __init__(self, message: str, retryable: bool = False, retry_after_s: float = 0.0) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after_s = retry_after_s  # the receiver's Retry-After (429, 503), at most MAX_RETRY_AFTER_S


def _money(value: Any, currency: str) -> str:
    return f"{currency} {Decimal(value):,.2f}"


def mrkdwn(value: Any) -> str:
    """A string from the data made inert in Slack mrkdwn: `&`, `<`, `>` escaped (Slack's own rule)."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def code_span(value: Any) -> str:
    """A string shown in a mrkdwn code span: escaped, and without backticks (which would end the span)."""
    return mrkdwn(value).replace("`", "'").replace("\n", " ")


def slack_len(text: str) -> int:
    """Characters as Slack counts them: UTF-16 code units (an emoji beyond the BMP counts two)."""
    return len(text.encode("utf-16-le")) // 2


def shorten(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters (slack_len) ending in "…": never inside an escape (`&amp;`),
    and a code span the cut left open is closed."""
    if slack_len(text) <= limit:
        return text
    keep, used, end = limit - 2, 0, 0  # room for "…" and a closing backtick
    for ch in text:
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > keep:
            break
        end += 1
    cut = text[:end]
    amp = cut.rfind("&")
    if amp >= 0 and len(cut) - amp < len("&amp;") and ";" not in cut[amp:]:
        cut = cut[:amp]
    cut += "…"
    return cut + "`" if cut.count("`") % 2 else cut


@dataclass(frozen=True)
class Section:
    """A section of a message: an optional heading and its lines in mrkdwn. `keys`, when given, names what
    each line reports (the alert's finding keys), so that each post knows what it carries. A section too
    long for one block continues in the next, its heading repeated with "(continued)"."""

    heading: str | None
    lines: tuple[str, ...]
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Block:
    """One section block of a post: its mrkdwn text and the keys of the lines it holds."""

    text: str
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Post:
    """One post of a message: its title block (with "part k of n" when the message takes several posts),
    then its blocks; within MAX_BLOCKS, MAX_SECTION_CHARS, MAX_BLOCKS_CHARS and MAX_TEXT_CHARS."""

    title: str
    blocks: tuple[Block, ...]
    number: int = 1
    total: int = 1

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(k for b in self.blocks for k in b.keys)

    def payload(self) -> dict[str, Any]:
        texts = [self.title, *(b.text for b in self.blocks)]
        return {
            "text": "\n\n".join(texts),
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": t}} for t in texts],
        }


def _blocks(section: Section) -> list[Block]:
    """A section's lines packed into blocks of at most MAX_SECTION_CHARS; a line longer than a block holds
    is shortened (a section's heading is ours and short)."""
    heading = shorten(section.heading, 200) if section.heading else None
    continued = f"{heading} (continued)" if heading else None
    room = MAX_SECTION_CHARS - (slack_len(continued) + 1 if continued else 0)
    blocks: list[Block] = []
    lines: list[str] = []
    keys: list[str] = []

    def head() -> list[str]:
        if heading is None or continued is None:
            return []
        return [continued if blocks else heading]

    for i, line in enumerate(section.lines):
        line = shorten(line, room)
        if lines and slack_len("\n".join([*head(), *lines, line])) > MAX_SECTION_CHARS:
            blocks.append(Block("\n".join([*head(), *lines]), tuple(keys)))
            lines, keys = [], []
        lines.append(line)
        if section.keys:
            keys.append(section.keys[i])
    if lines or not blocks:
        blocks.append(Block("\n".join([*head(), *lines]), tuple(keys)))
    return [b for b in blocks if b.text]


def split_message(title: str, sections: Sequence[Section]) -> list[Post]:
    """A message as the posts Slack takes: every line once, in order, each post headed by the title (and
    "(part k of n)" when there are several) and within Slack's limits."""
    title = shorten(title, MAX_SECTION_CHARS // 3 - _PART_RESERVE)
    # a post's `text` is its blocks' texts joined by blank lines: within MAX_TEXT_CHARS with them
    budget = min(MAX_BLOCKS_CHARS, MAX_TEXT_CHARS - 2 * MAX_BLOCKS) - slack_len(title) - _PART_RESERVE
    parts: list[list[Block]] = [[]]
    used = 0
    for block in (b for s in sections for b in _blocks(s)):
        size = slack_len(block.text)
        if parts[-1] and (len(parts[-1]) >= MAX_BLOCKS - 1 or used + size > budget):
            parts.append([])
            used = 0
        parts[-1].append(block)
        used += size
    n = len(parts)
    return [
        Post(title if n == 1 else f"{title} (part {k} of {n})", tuple(blocks), k, n)
        for k, blocks in enumerate(parts, 1)
    ]


def headline_lines(report: WeeklyReport) -> list[str]:
    """Per currency: spend, waste and its findings, last week's waste and what stopped since (or what the
    findings resolved since are, when none of them stopped priced waste)."""
    out = []
    for h in report.headline:
        cur = h["currency"]
        pct = f" ({h['waste_pct']} % of spend)" if h["waste_pct"] is not None else ""
        previous = report.previous_data(cur)  # last week's waste is compared only as a whole week's
        if h["prev_waste"] is None:
            prev = "last week not evaluated"
        elif previous == "none":
            prev = "new: the data starts this week"
        else:
            partial = " (a partial week)" if previous == "partial" else ""
            prev = f"last week {_money(h['prev_waste'], cur)}{partial}"
        line = (
            f"Spend {_money(h['spend'], cur)}, waste {_money(h['waste'], cur)}{pct} in "
            f"{report.finding_count(cur)}; {prev}"
        )
        if report.previous_evaluated:
            stop = report.stopped(cur)
            if stop["amount"]:
                line += f"; waste that stopped since last week {_money(stop['amount'], cur)}"
            else:
                line += f"; waste that stopped since last week: none ({stop['note']})"
        out.append(line + ".")
    return out or ["No spend and no findings this week."]


def team_lines(report: WeeklyReport, top: int | None = None) -> list[str]:
    """One line per team with spend or waste (listed_teams: a team with neither is never listed), most waste
    first; the first `top` of them when given."""
    lines = []
    for t in report.listed_teams()[:top]:
        pct = f" ({t['waste_pct']} %)" if t["waste_pct"] is not None else ""
        burn = ""
        if t["budget"] and t["budget"]["burn_pct"] is not None:
            burn = f", budget {t['budget']['burn_pct']:.0f} % used"
        lines.append(
            f"{shorten_middle(str(t['team']), 60)}: waste {_money(t['waste'], t['currency'])}{pct} of "
            f"{_money(t['spend'], t['currency'])}{burn}"
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


def _page(config: NotifyConfig, report: WeeklyReport, page: str, label: str) -> str:
    """A report page in mrkdwn: a link `<url|label>` with `report_url`, else the file's name in a code span
    and the label (the report's folder is named once, before the files)."""
    link = _link(config, report, page)
    if link is None:
        return f"`{code_span(page)}` ({mrkdwn(label)})"
    return f"<{link.replace('|', '%7C').replace('>', '%3E')}|{mrkdwn(label)}>"


# the weekly post's size: the digest's (report.md), a message a person reads whole
CHAT_BYTES = DIGEST_BYTES
TOP_FINDINGS = 5  # the biggest findings the post names, as report.md does


# the order a weekly post too long for CHAT_BYTES loses lines in, first to last (the links never)
_CUT_ORDER = ("teams", "actions", "attention", "top", "headline")


def _weekly_sections(report: WeeklyReport, config: NotifyConfig) -> list[tuple[str, Section]]:
    """The weekly message as report.md has it, each section with its name in _CUT_ORDER: headline,
    attention, the top findings, the teams with the most waste (MAIN_TEAMS) with the way to all of them,
    the biggest actions, then the links to the report."""
    sections = [("headline", Section(None, tuple(mrkdwn(line) for line in headline_lines(report))))]
    attention = [a for a in report.attention_by_rule() if a["findings"]]
    if attention:
        lines = tuple(
            f"• {mrkdwn(a['rule_id'])} {mrkdwn(a['rule_name'])}: {a['findings']} item(s), "
            f"{mrkdwn(_money(a['at_stake'], a['currency'] or ''))} at stake"
            for a in attention
        )
        sections.append(("attention", Section("*Needs attention (not waste)*", lines)))
    top = report.top[:TOP_FINDINGS]
    if top:
        lines = tuple(
            f"• {mrkdwn(f['rule_id'])} `{code_span(shorten_middle(str(f['resource_id']), 40))}` "
            f"({mrkdwn(shorten_middle('untagged' if f['team'] == '(untagged)' else str(f['team']), 30))}): "
            f"{mrkdwn(_money(f['estimated_waste'], f['currency'] or ''))}"
            for f in top
        )
        sections.append(("top", Section("*Top findings*", lines)))
    if config.teams:
        listed = len(report.listed_teams())
        teams = team_lines(report, MAIN_TEAMS)
        if teams:
            heading = "*Teams by waste*" + (f" ({len(teams)} of {listed:,})" if listed > len(teams) else "")
            sections.append(("teams", Section(heading, tuple(f"• {mrkdwn(line)}" for line in teams))))
    actions = action_lines(report, 3)
    if actions:
        heading = "*Top actions* (`wastewatch remediate`)"
        sections.append(("actions", Section(heading, tuple(f"• {line}" for line in actions))))
    links = " · ".join(
        _page(config, report, page, label)
        for page, label in (
            ("report.html", "the report"),
            ("findings.html", f"all {len(report.findings):,} findings"),
            ("teams.html", f"all {len(report.listed_teams()):,} teams"),
            ("actions.html", "actions and advice"),
            ("report-full.md", "everything in Markdown"),
        )
    )
    where = "" if config.report_url else f"In `{code_span(report.directory)}`: "
    sections.append(("links", Section(None, (f"{where}{links}",))))
    return sections


def _size(title: str, sections: Sequence[Section]) -> int:
    """The bytes of a message's text (UTF-8), its parts joined."""
    return len(whole_payload(split_message(title, sections))["text"].encode("utf-8"))


def slack_posts(report: WeeklyReport, config: NotifyConfig) -> list[Post]:
    """The weekly message as the post Slack takes: the digest (report.md's), at most CHAT_BYTES of text for
    any fleet. When a fleet's names or currencies make it longer, lines are dropped from the end of the
    teams, then the actions, the attention items, the top findings and the headline (_CUT_ORDER), each
    cut section ending in "… N more in the report"; the links to the report always stay."""
    title = f"*wastewatch {report.week}*"
    link = _link(config, report)
    if link:
        title += f" <{link.replace('|', '%7C').replace('>', '%3E')}|open the report>"
    named = _weekly_sections(report, config)
    dropped = [0] * len(named)

    def shown() -> list[Section]:
        out = []
        for (_, sec), n in zip(named, dropped, strict=True):
            more = (f"… {n}{' more' if n < len(sec.lines) else ''} in the report",) if n else ()
            out.append(Section(sec.heading, sec.lines[: len(sec.lines) - n] + more))
        return out

    for name in _CUT_ORDER:
        for i, (kind, sec) in enumerate(named):
            while kind == name and dropped[i] < len(sec.lines) and _size(title, shown()) > CHAT_BYTES:
                dropped[i] += 1
    return split_message(title, shown())


def whole_payload(posts: Sequence[Post]) -> dict[str, Any]:
    """A message's posts as one payload, to read the message whole; what is posted is each post's own."""
    payloads = [p.payload() for p in posts]
    return {
        "text": "\n\n".join(p["text"] for p in payloads),
        "blocks": [b for p in payloads for b in p["blocks"]],
    }


def slack_payload(report: WeeklyReport, config: NotifyConfig) -> dict[str, Any]:
    """The weekly message whole (whole_payload of slack_posts), to read; delivery posts slack_posts."""
    return whole_payload(slack_posts(report, config))


class _Deadline:
    """The total deadline of one request: when it passes, every socket the request opened is shut down, so
    a read or a write blocked on it returns at once (a socket timeout alone bounds each read, not a peer
    that sends one byte a second)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def remaining(self) -> float:
        return max(self.end - time.monotonic(), 0.001)

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if not self.expired:
                return
        self._shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed


def _connection_class(base: type[http.client.HTTPConnection], deadline: _Deadline) -> type[Any]:
    """`base` with every socket it opens watched by `deadline` (TLS handshake included) and a socket
    timeout no longer than what is left of it."""

    class Bounded(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["timeout"] = min(kwargs.get("timeout") or deadline.seconds, deadline.remaining())
            super().__init__(*args, **kwargs)
            create = self._create_connection  # http.client's hook for opening the TCP connection

            def create_watched(*a: Any, **kw: Any) -> socket.socket:
                sock = create(*a, **kw)
                deadline.watch(sock)
                return sock

            self._create_connection = create_watched

    return Bounded


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not followed: urllib would turn the POST into a GET without the payload."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _opener(deadline: _Deadline) -> urllib.request.OpenerDirector:
    class Http(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(_connection_class(http.client.HTTPConnection, deadline), req)

    class Https(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(
                _connection_class(http.client.HTTPSConnection, deadline), req, context=self._context
            )

    return urllib.request.build_opener(Http(), Https(), _NoRedirect())


def _answer(response: Any) -> str:
    """The start of an answer's body (at most MAX_ANSWER_BYTES read), on one line."""
    try:
        body = response.read(MAX_ANSWER_BYTES)
    except (OSError, http.client.HTTPException):
        return ""
    return " ".join(body.decode("utf-8", "replace").split())[:200]


def _retry_after(value: str | None) -> float:
    """A Retry-After header in seconds (its date form is not used by chat webhooks: 0), at most
    MAX_RETRY_AFTER_S so that a receiver cannot hold the run."""
    try:
        seconds = float(value or 0)
    except ValueError:
        return 0.0
    return 0.0 if math.isnan(seconds) else min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def post_webhook(url: str, payload: dict[str, Any], timeout: float) -> None:
    """POST the payload within a total deadline of `timeout` seconds (connect, send, answer); NotifyError
    names the webhook by scheme and host only (its path is the secret)."""
    data = json.dumps(payload).encode("utf-8")
    where = url_label(url)
    request = urllib.request.Request(  # noqa: S310 - the URL is the operator's configured webhook
        url, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    with _Deadline(timeout) as deadline:
        try:
            with _opener(deadline).open(request, timeout=timeout) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            text = _answer(exc)
            raise NotifyError(
                redact(f"webhook {where}: HTTP {exc.code} {exc.reason}" + (f": {text}" if text else "")),
                retryable=exc.code == 429 or exc.code >= 500,
                retry_after_s=_retry_after(exc.headers.get("Retry-After")),
            ) from None
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            if deadline.expired:
                raise NotifyError(
                    f"webhook {where}: no complete answer within {timeout:g} s", retryable=True
                ) from None
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
    seconds and twice as long before each next attempt (longer when the receiver's Retry-After says so);
    returns the attempts made. The last failure is raised (its message redacted, naming the webhook by
    scheme and host and the attempts)."""
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
            asked = exc.retry_after_s
        sleep(max(wait, asked))
        attempt, wait = attempt + 1, wait * 2


def post_parts(
    url: str,
    posts: Sequence[Post],
    timeout: float,
    retries: int = 0,
    backoff_s: float = 0.0,
    pace_s: float = PACE_S,
    sleep: Callable[[float], None] = time.sleep,
    on_sent: Callable[[Post], None] | None = None,
) -> int:
    """Post a message's parts in order, `pace_s` seconds apart, each by post_with_retry; `on_sent(post)`
    runs as soon as the webhook took a part. The first part that fails stops the rest: its NotifyError says
    which parts were posted. Returns the attempts made."""
    attempts = 0
    for post in posts:
        if post.number > 1 and pace_s > 0:
            sleep(pace_s)
        try:
            attempts += post_with_retry(url, post.payload(), timeout, retries, backoff_s, sleep)
        except NotifyError as exc:
            if post.total == 1:
                raise
            k, n = post.number, post.total
            done = {1: "none was posted", 2: "part 1 was posted"}.get(k, f"parts 1 to {k - 1} were posted")
            raise NotifyError(f"{exc}; part {k} of {n} not posted, {done}", retryable=exc.retryable) from None
        if on_sent is not None:
            on_sent(post)
    return attempts


def email_html(report: WeeklyReport, config: NotifyConfig) -> str:
    """email.html: the digest as an e-mail (tables and inline styles only): headline, attention, the top
    findings, the teams with the most waste and the way to all of them."""
    return (
        environment()
        .get_template("email.html.j2")
        .render(
            r=report,
            headline=headline_lines(report),
            teams=team_lines(report, MAIN_TEAMS) if config.teams else [],
            listed_teams=len(report.listed_teams()),
            top=report.top[:TOP_FINDINGS],
            link=_link(config, report),
            teams_link=_link(config, report, "teams.html"),
        )
    )


def deliver(
    report: WeeklyReport, config: NotifyConfig | dict[str, Any] | None, pace_s: float = PACE_S
) -> tuple[list[str], list[str]]:
    """Post and/or write as configured, a long post's parts `pace_s` seconds apart; returns (what was
    done, problems). Never raises for delivery."""
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
        posts = slack_posts(report, cfg)
        ledger = PostedParts(report.directory / POSTED_FILE, cfg.webhook_url)
        left = [p for p in posts if not ledger.has(p)]
        try:
            post_parts(cfg.webhook_url, left, cfg.timeout_s, pace_s=pace_s, on_sent=ledger.add)
            parts = f" in {len(posts)} parts" if len(posts) > 1 else ""
            if not left:
                done.append(f"already posted to {url_label(cfg.webhook_url)}{parts}: nothing sent again")
            elif len(left) < len(posts):
                done.append(
                    f"posted the {len(left)} part(s) of {len(posts)} not yet posted to {url_label(cfg.webhook_url)}"
                )
            else:
                done.append(f"posted to {url_label(cfg.webhook_url)}{parts}")
        except NotifyError as exc:
            problems.append(str(exc))
    return done, problems


# which parts of the week's post the webhook took, kept beside the report (our own file): a re-run after a
# failed part sends only the parts not yet taken; a changed report is a new message and is posted again
POSTED_FILE = ".chat-posted.json"


class PostedParts:
    """The digests of the posts a webhook took for one report folder (the URL's digest, never the URL)."""

    def __init__(self, path: Path, url: str) -> None:
        self.path = path
        self.url = hashlib.sha256(url.encode()).hexdigest()[:16]
        try:
            every = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            every = {}
        self.every: dict[str, list[str]] = every if isinstance(every, dict) else {}
        taken = self.every.get(self.url)
        self.taken = set(taken) if isinstance(taken, list) else set()

    @staticmethod
    def digest(post: Post) -> str:
        text = json.dumps(post.payload(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def has(self, post: Post) -> bool:
        return self.digest(post) in self.taken

    def add(self, post: Post) -> None:
        self.taken.add(self.digest(post))
        self.every[self.url] = sorted(self.taken)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.every, indent=1) + "\n", encoding="utf-8")
        tmp.replace(self.path)
