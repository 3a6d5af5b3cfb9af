"""Shared fixtures: real DuckDB files under tmp_path, real config files, real fixture data.

Fixtures only: the helpers they use (paths, config writing, the S3 server) are plain modules in
tests/helpers/, which tests import directly.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, settings

from pipelines.config import Config, load_config
from pipelines.transform import build_marts
from pipelines.warehouse import connect
from tests.helpers.config import write_config
from tests.helpers.paths import FIXTURES
from tests.helpers.s3_server import moto_server


def pytest_configure(config: pytest.Config) -> None:
    """The `fuzz` marker, and Hypothesis' profiles: derandomised always (the same examples on every run),
    a short run by default (`make test`: one example per property and format) and a longer one in CI
    (`.ci/run` sets HYPOTHESIS_PROFILE=ci)."""
    config.addinivalue_line(
        "markers", "fuzz: property-based ingest tests (Hypothesis; longer with HYPOTHESIS_PROFILE=ci)"
    )
    slow = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]
    settings.register_profile(
        "default", derandomize=True, database=None, deadline=None, max_examples=1, suppress_health_check=slow
    )
    settings.register_profile("ci", settings.get_profile("default"), max_examples=15)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


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


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`wastewatch demo` for one week (2026-W48), run once per test run: (folder, CLI output).

    One week keeps the suite fast; `make demo` runs four (the README gives its timing). Under xdist the
    first worker to need it builds it under the run's shared temporary folder while holding a lock; the
    others wait and read it. Tests only read the demo (its warehouses read-only).
    """
    from click.testing import CliRunner

    from pipelines.cli import main

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # one folder above every worker's own
    directory, output = shared / "demo", shared / "demo.output"
    with open(shared / "demo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not output.exists():
            result = CliRunner().invoke(
                main, ["demo", "--dir", str(directory), "--week", "2026-W48", "--weeks", "1"]
            )
            assert result.exit_code == 0, result.output
            output.write_text(result.output)
    return directory, output.read_text()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """A real S3 (and EC2) HTTP endpoint on 127.0.0.1: moto's server mode, for everything boto3 touches.

    Yields the endpoint URL. Credentials are dummies set in the environment for the session; tests create
    their own buckets (use unique names: the server is shared by the session).
    """
    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def empty_marts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse file with today's schema and every mart built empty, made once per test process.

    Building the marts of an empty warehouse costs seconds; tests copy this file instead (tests/helpers/empty_warehouse.py).
    """
    path = tmp_path_factory.mktemp("empty_marts") / "wastewatch.duckdb"
    con = connect(path)
    build_marts(con)
    con.close()
    return path
