"""A misbehaving HTTP peer on 127.0.0.1: it answers every request (any path, GET, HEAD or POST) with 200 and a body
it either drips (one byte per `interval` seconds) or sends at once however large, for the bounded-read
tests (pipelines/net/limits.py). It speaks enough HTTP for urllib and for boto3 (an S3 GetObject or
ListObjectsV2, an EC2 DescribeInstances): headers are sent at once, only the body drips."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Peer:
    url: str = ""
    paths: list[str] = field(default_factory=list)  # the path of each request, in order


@contextmanager
def slow_peer(
    body: bytes,
    interval: float = 0.0,
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
    fast: dict[str, bytes] | None = None,
) -> Iterator[Peer]:
    """Serve `body` to every request: dripped a byte per `interval` seconds (0: all at once); the paths in
    `fast` get their own body at once. The drip stops when the client hangs up or the server closes."""
    peer = Peer()
    stop = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            self._answer()

        def do_HEAD(self) -> None:  # noqa: N802 - the http.server API
            peer.paths.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()

        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._answer()

        def _answer(self) -> None:
            peer.paths.append(self.path)
            path = self.path.split("?")[0]
            data, drip = ((fast or {})[path], 0.0) if path in (fast or {}) else (body, interval)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            try:
                if not drip:
                    self.wfile.write(data)
                    return
                for i in range(len(data)):
                    if stop.is_set():
                        return
                    self.wfile.write(data[i : i + 1])
                    self.wfile.flush()
                    time.sleep(drip)
            except OSError:  # the client gave up: what the tests expect
                self.close_connection = True

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the http.server API
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    peer.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield peer
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
