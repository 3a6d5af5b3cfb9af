"""A recording HTTP proxy on 127.0.0.1 in front of moto's server: what calls did the code under test make?

boto3 is pointed at the proxy as its endpoint; every request is forwarded to moto unchanged and its
operation recorded: EC2's query `Action=` (StopInstances, ...), S3's method, path and sub-resource
(`POST /bucket?delete` is DeleteObjects).
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Recording:
    url: str
    calls: list[str] = field(default_factory=list)

    def made(self, *operations: str) -> list[str]:
        """The recorded calls naming any of `operations` (EC2 actions, or e.g. `POST ?delete`)."""
        return [c for c in self.calls if any(op in c for op in operations)]


@contextmanager
def recording_proxy(upstream: str) -> Iterator[Recording]:
    target = urllib.parse.urlsplit(upstream)
    recording = Recording("")

    class Handler(BaseHTTPRequestHandler):
        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            form = urllib.parse.parse_qs(body.decode("utf-8", "replace")) if body else {}
            action = form.get("Action", [""])[0]
            recording.calls.append(f"{self.command} {self.path} {action}".strip())
            conn = HTTPConnection(target.hostname, target.port, timeout=30)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
            conn.request(self.command, self.path, body=body or None, headers=headers)
            answer = conn.getresponse()
            data = answer.read()
            self.send_response(answer.status)
            for k, v in answer.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            conn.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    recording.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recording
    finally:
        server.shutdown()
        server.server_close()
