"""Shared fixtures: real DuckDB files under tmp_path, real config files, real fixture data."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from pipelines.config import Config, load_config
from pipelines.warehouse import connect

FIXTURES = Path(__file__).parent / "fixtures"
FOCUS_SAMPLE = FIXTURES / "billing" / "focus_sample_1.0.csv"
H200 = FIXTURES / "telemetry" / "h200"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


def write_config(directory: Path, body: str) -> Path:
    """Write `wastewatch.yaml` into `directory` (dedented) and return its path."""
    path = directory / "wastewatch.yaml"
    path.write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project folder with landing zones for billing and telemetry."""
    (tmp_path / "landing" / "billing").mkdir(parents=True)
    (tmp_path / "landing" / "telemetry").mkdir(parents=True)
    write_config(
        tmp_path,
        """
        sources:
          - {name: focus, kind: focus, uri: landing/billing/}
          - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
        """,
    )
    return tmp_path


@pytest.fixture
def config(project: Path) -> Config:
    return load_config(project / "wastewatch.yaml")


@pytest.fixture
def con(config: Config) -> Iterator[duckdb.DuckDBPyConnection]:
    c = connect(config.warehouse_path)
    yield c
    c.close()


def copy_into(src: Path, directory: Path, name: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    dst = directory / (name or src.name)
    shutil.copyfile(src, dst)
    return dst


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`wastewatch demo` for one week (2026-W48), run once per session: (folder, CLI output).

    One week keeps the suite fast; `make demo` runs four (the README gives its timing).
    """
    from click.testing import CliRunner

    from pipelines.cli import main

    directory = tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(main, ["demo", "--dir", str(directory), "--week", "2026-W48", "--weeks", "1"])
    assert result.exit_code == 0, result.output
    return directory, result.output


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """A real S3 (and EC2) HTTP endpoint on 127.0.0.1: moto's server mode, for everything boto3 touches.

    Yields the endpoint URL. Credentials are dummies set in the environment for the session; tests create
    their own buckets (use unique names: the server is shared by the session).
    """
    import os
    import socket

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
