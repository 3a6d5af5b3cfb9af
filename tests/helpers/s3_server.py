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

    share_botocore_loader()
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


def share_botocore_loader() -> None:
    """One botocore data loader for every botocore session of this test process.

    The code under test makes each boto3 client on a new session (pipelines/net/s3.py `client_at`), and a
    new session's loader parses the service's model again: 0.2-0.4 CPU s for EC2's, which `remediate apply`
    and the S3 sources pay per client. Botocore's own loader caches what it parsed; sharing it across the
    process's sessions (keyed, as botocore keys it, by the data path) skips the parsing only: every session,
    client and credential lookup is still made as the product makes it. Idempotent.
    """
    import botocore.loaders
    import botocore.session

    if getattr(botocore.session.create_loader, "_shared", False):
        return
    made: dict[object, botocore.loaders.Loader] = {}
    create = botocore.loaders.create_loader

    def shared(search_path_string: object = None) -> botocore.loaders.Loader:
        if search_path_string not in made:
            made[search_path_string] = create(search_path_string)
        return made[search_path_string]

    shared._shared = True  # type: ignore[attr-defined]
    botocore.session.create_loader = shared  # type: ignore[assignment]
