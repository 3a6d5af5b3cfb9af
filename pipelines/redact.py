"""Redaction: the one function every message, log line, exception text, report line and link passes through
before it reaches a person, a file or a log, so that no credential is ever shown.

`redact(text)` replaces, with `***`:
- the user info of a URL (`http://user:pass@host` -> `http://***@host`);
- the values of signing and credential query parameters (`X-Amz-Signature=`, `X-Amz-Credential=`,
  `X-Amz-Security-Token=`, `sig=`, `token=`, `key=`, ...);
- the secret path of a webhook URL (Slack `hooks.slack.com/services/...`, Discord `/api/webhooks/...`,
  Microsoft Teams `webhook.office.com/webhookb2/...`, Mattermost and Rocket.Chat `/hooks/...`);
- the value of every credential environment variable that is set (AWS_SECRET_ACCESS_KEY,
  AWS_SESSION_TOKEN, and any `*_TOKEN`, `*_SECRET`, `*_PASSWORD`, `*_SECRET_KEY`, `*_API_KEY`);
- any value registered with `remember()` (a secret from the configuration).

It reads the environment on each call (a variable set after start-up is covered) and has no state at
import time beyond the patterns.
"""

from __future__ import annotations

import os
import re
import threading

MASK = "***"

# scheme://user[:password]@ -> scheme://***@ (the user info ends at the first `@` before any `/`)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]+@")
# query parameters that carry a signature, a credential or a bearer secret
_QUERY_SECRETS = (
    "x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|"
    "signature|awsaccesskeyid|sig|token|access_token|refresh_token|id_token|api[_-]?key|key|"
    "secret|client_secret|password|passwd|pwd|auth|code"
)
_QUERY = re.compile(rf"(?i)([?&;](?:{_QUERY_SECRETS})=)[^&;#\s\"'<>|]+")
# webhook URLs whose path is the secret: keep the host and the fixed part, drop the rest
_WEBHOOK_PATHS = re.compile(
    r"(?i)("
    r"hooks\.slack(?:-gov)?\.com/(?:services|workflows|triggers)/"
    r"|discord(?:app)?\.com/api/webhooks/"
    r"|\.webhook\.office\.com/webhook(?:b2)?/"
    r"|outlook\.office(?:365)?\.com/webhook(?:b2)?/"
    r"|/hooks/"
    r")[^\s\"'<>|?#]+"
)
# environment variables whose values are credentials
_SECRET_ENV = re.compile(
    r"(?i)^(?:AWS_SECRET_ACCESS_KEY|AWS_SESSION_TOKEN|AWS_SECURITY_TOKEN"
    r"|.*_(?:TOKEN|SECRET|PASSWORD|PASSWD|SECRET_KEY|API_KEY|ACCESS_TOKEN|WEBHOOK_URL))$"
)
# shorter values would mask ordinary words and digits
_MIN_SECRET_LEN = 4

_remembered: set[str] = set()
_lock = threading.Lock()


def remember(*values: str | None) -> None:
    """Register secret values from the configuration (e.g. a webhook URL, a password) for redaction."""
    with _lock:
        for v in values:
            if v and len(v) >= _MIN_SECRET_LEN:
                _remembered.add(v)


def _secret_values() -> list[str]:
    found = {v for k, v in os.environ.items() if v and len(v) >= _MIN_SECRET_LEN and _SECRET_ENV.match(k)}
    with _lock:
        found |= _remembered
    # longest first, so a secret that contains another is masked whole
    return sorted(found, key=len, reverse=True)


def redact(text: object) -> str:
    """`text` as a string with every credential it contains replaced by `***` (see the module docstring)."""
    out = str(text)
    if not out:
        return out
    for value in _secret_values():
        if value in out:
            out = out.replace(value, MASK)
    out = _USERINFO.sub(rf"\1{MASK}@", out)
    out = _WEBHOOK_PATHS.sub(rf"\1{MASK}", out)
    return _QUERY.sub(rf"\1{MASK}", out)


def url_label(url: str) -> str:
    """A URL as it may be shown: scheme and host only, its path and query hidden (`https://host/***`).

    For URLs whose path is itself the secret (any webhook: providers' patterns are not all known).
    """
    m = re.match(r"(?i)([a-z][a-z0-9+.-]*://)(?:[^/\s@?#]+@)?([^/\s?#]*)(.*)", url.strip())
    if not m:
        return MASK
    rest = m.group(3)
    return f"{m.group(1)}{m.group(2)}" + (f"/{MASK}" if rest.strip("/") else "")
