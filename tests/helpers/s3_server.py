"""A real S3 (and EC2) HTTP endpoint on 127.0.0.1: moto's server mode, for everything boto3 touches."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def moto_server() -> Iterator[str]:
    """Start moto's threaded server on a free local port; yield its endpoint URL.

    Credentials are dummies set in the environment while it runs (and restored after); callers create
    their own buckets.
    """
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    saved = {
        k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")
    }
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1"
    )
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
