"""A Slack-compatible webhook endpoint for the delivery tests: records every POST it receives."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


class WebhookReceiver(BaseHTTPRequestHandler):
    received: list[dict[str, Any]] = []
    status = 200

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers["Content-Length"])
        type(self).received.append(
            {
                "path": self.path,
                "type": self.headers["Content-Type"],
                "body": json.loads(self.rfile.read(length)),
            }
        )
        self.send_response(type(self).status)
        self.end_headers()
        self.wfile.write(b"ok" if type(self).status == 200 else b"invalid_payload")

    def log_message(self, *args: Any) -> None:
        pass
