"""A webhook post has a total deadline and reads back a bounded answer: against a real HTTP server on
127.0.0.1 (http.server in a thread) that drips its answer one byte at a time or floods it, the post returns
within its deadline, never held by the peer. Each server handler stops by itself after 15 s."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pipelines.redact import url_label
from pipelines.report.notify import MAX_RETRY_AFTER_S, NotifyError, post_webhook, post_with_retry

PAYLOAD = {"text": "hello", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "hello"}}]}
STATUS_500 = b"HTTP/1.1 500 Internal Server Error\r\n"


class Peer(BaseHTTPRequestHandler):
    """Reads the POST, then writes `head` at once and `drip` one byte every 0.1 s, or `flood` over and over,
    until the client goes, the test ends or 15 s pass."""

    head = b""
    drip = b""
    flood = b""
    stop = threading.Event()

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["Content-Length"]))
        cls = type(self)
        end = time.monotonic() + 15
        try:
            self.wfile.write(cls.head)
            self.wfile.flush()
            for byte in cls.drip:
                if cls.stop.is_set() or time.monotonic() > end:
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.1)
            while cls.flood and not cls.stop.is_set() and time.monotonic() < end:
                self.wfile.write(cls.flood)
        except OSError:
            return  # the client shut the connection: what the deadline does

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def peer() -> Iterator[tuple[str, type[Peer]]]:
    handler = type("P", (Peer,), {"stop": threading.Event()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hooks/T000/B000/XXXX", handler
    handler.stop.set()
    server.shutdown()
    server.server_close()


def timed_post(url: str, timeout: float) -> tuple[float, NotifyError | None]:
    started = time.monotonic()
    try:
        post_webhook(url, PAYLOAD, timeout)
        error = None
    except NotifyError as exc:
        error = exc
    return time.monotonic() - started, error


def test_a_peer_that_drips_its_answer_is_cut_off_at_the_total_deadline(peer: tuple[str, type[Peer]]) -> None:
    url, handler = peer
    # the status line, one byte every 0.1 s: each read succeeds well inside a socket timeout, forever
    handler.drip = b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 400
    elapsed, error = timed_post(url, timeout=1.0)
    assert error is not None and 0.9 < elapsed < 2.5, elapsed
    assert str(error) == f"webhook {url_label(url)}: no complete answer within 1 s" and error.retryable
    # an error whose body drips: the message has what came within the deadline
    handler.head, handler.drip = STATUS_500 + b"Content-Length: 100000\r\n\r\n", b"overloaded" + b"." * 400
    elapsed, error = timed_post(url, timeout=1.0)
    assert error is not None and elapsed < 2.5, elapsed
    assert str(error).startswith(f"webhook {url_label(url)}: HTTP 500 Internal Server Error: overloaded")


def test_what_is_read_back_is_capped(peer: tuple[str, type[Peer]]) -> None:
    url, handler = peer
    # an error answer without end: read up to the cap, at once, not until the deadline
    handler.head, handler.flood = STATUS_500 + b"Connection: close\r\n\r\n", b"a" * 65536
    elapsed, error = timed_post(url, timeout=10.0)
    assert error is not None and elapsed < 3, elapsed
    assert str(error) == f"webhook {url_label(url)}: HTTP 500 Internal Server Error: {'a' * 200}"
    # headers without end: http.client stops at its own cap (100 headers)
    handler.head, handler.flood = b"HTTP/1.1 200 OK\r\n", b"X-Pad: aaaa\r\n" * 1000
    elapsed, error = timed_post(url, timeout=10.0)
    assert error is not None and elapsed < 3, elapsed
    assert str(error) == f"webhook {url_label(url)}: cannot post: got more than 100 headers"
    # a 2xx is taken at its status line: a body that drips after it does not hold the post
    handler.head, handler.flood = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", b""
    handler.drip = b"o" * 400
    elapsed, error = timed_post(url, timeout=10.0)
    assert error is None and elapsed < 1, elapsed


def test_a_redirect_is_not_followed(peer: tuple[str, type[Peer]]) -> None:
    url, handler = peer
    handler.head = (
        b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:9/elsewhere\r\nContent-Length: 0\r\n\r\n"
    )
    elapsed, error = timed_post(url, timeout=5.0)
    assert error is not None and not error.retryable
    assert str(error) == f"webhook {url_label(url)}: HTTP 302 Found"


def test_a_retry_waits_as_long_as_the_receivers_retry_after_says_up_to_a_cap(
    peer: tuple[str, type[Peer]],
) -> None:
    url, handler = peer
    waits: list[float] = []
    for asked, expected in (("3", 3.0), ("86400", MAX_RETRY_AFTER_S), ("soon", 0.5)):
        handler.head = (
            f"HTTP/1.1 429 Too Many Requests\r\nRetry-After: {asked}\r\nContent-Length: 0\r\n\r\n".encode()
        )
        waits.clear()
        with pytest.raises(NotifyError, match=r"HTTP 429 Too Many Requests \(after 2 attempts\)$"):
            post_with_retry(url, PAYLOAD, timeout=5, retries=1, backoff_s=0.5, sleep=waits.append)
        assert waits == [expected], asked  # never less than the backoff, never more than the cap
