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
from pipelines.config.run_history import HISTORY_ENV
from pipelines.transform.build import build_marts
from tests.helpers import demo_build
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.full import FULL, full_run
from tests.helpers.paths import FIXTURES
from tests.helpers.s3_server import moto_server

pytest_plugins = ("tests.plugins.cpu_budget",)


def pytest_configure(config: pytest.Config) -> None:
    """The `fuzz` and `full` markers, and Hypothesis' profiles: derandomised always (the same examples on
    every run), a short run by default (`make test`: one example per property and format) and a longer one
    in CI (`HYPOTHESIS_PROFILE=ci`, which `WASTEWATCH_FULL_TESTS=1` implies)."""
    config.addinivalue_line(
        "markers", "fuzz: property-based ingest tests (Hypothesis; longer with HYPOTHESIS_PROFILE=ci)"
    )
    config.addinivalue_line(
        "markers",
        f"full: a repeated variant of a promise another test in `make test` proves; runs only with {FULL}=1 (CI)",
    )
    # CLI runs record no Dagster history (pipelines/instance.py) unless a test asks for it: the tests of
    # that history set WASTEWATCH_RUN_HISTORY=sqlite themselves; `WASTEWATCH_RUN_HISTORY=sqlite make test`
    # runs every test with it
    os.environ.setdefault(HISTORY_ENV, "off")
    slow = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]
    settings.register_profile(
        "default", derandomize=True, database=None, deadline=None, max_examples=1, suppress_health_check=slow
    )
    settings.register_profile("ci", settings.get_profile("default"), max_examples=15)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if full_run() else "default"))


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
    c = new_warehouse(config.warehouse_path)
    yield c
    c.close()


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`wastewatch demo` for one week (2026-W48), run once per test run: (folder, CLI output).

    One week keeps the suite fast; `make demo` runs four (the README gives its timing). The build starts in
    a background process when a test process collects a test that needs it (`pytest_collection_modifyitems`
    below, tests/helpers/demo_build.py), under the run's shared temporary folder; every process waits for
    it here and reads it. Without a started build (a test asking for it dynamically) this process builds it
    under the same lock. Tests only read the demo (its warehouses read-only).
    """
    shared = _shared_temp(tmp_path_factory)
    output = demo_build.wait(shared)
    if output is None:
        with open(shared / "demo.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            failed = shared / "demo.failed"
            assert not failed.exists(), failed.read_text()
            if (shared / "demo.started").exists() and not (shared / "demo.output").exists():
                pytest.fail("the background demo build ended without output:\n" + _tail(shared / "demo.log"))
            output = (
                (shared / "demo.output").read_text()
                if (shared / "demo.output").exists()
                else demo_build.build(shared)
            )
    return shared / "demo", output


def _shared_temp(factory: pytest.TempPathFactory) -> Path:
    """The run's temporary folder that every xdist worker (and the controller) sees."""
    shared = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # one folder above every worker's own
    return shared


def _tail(path: Path) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-40:]) if path.exists() else ""


@pytest.hookimpl(trylast=True)  # after `-k` and `-m` deselect: start the demo only if a kept test needs it
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Leave out the `full` tests unless this is CI's long form, order the run for two workers, and start
    the demo build if a collected test needs it.

    Files are sent to xdist workers in this order (`--dist loadfile --no-loadscope-reorder`): the
    end-to-end files first (the longest, so neither worker is left with one at the end), the files that
    read the demo last (its build runs in the background meanwhile), the rest between, each group in
    collection order. A plain `pytest` run keeps the same order.
    """

    def rank(item: pytest.Item) -> int:
        return 2 if item.path in demo_files else 0 if item.path in e2e_files else 1

    if not full_run():
        ci_only = [item for item in items if item.get_closest_marker("full")]
        if ci_only:
            config.hook.pytest_deselected(items=ci_only)
            items[:] = [item for item in items if not item.get_closest_marker("full")]
    demo_files = {item.path for item in items if "demo_dir" in getattr(item, "fixturenames", ())}
    e2e_files = {item.path for item in items if item.get_closest_marker("e2e")}
    items.sort(key=rank)
    if demo_files and not config.option.collectonly:
        demo_build.start(_shared_temp(config._tmp_path_factory))  # type: ignore[attr-defined]


# Files sharing a fixture made once per test process go to one xdist worker together, so it is made once per
# run, not once per worker: the property tests' workspace (`ws`, its template ingest and per-format oracles)
# and the H200 capture's warehouse (`h200`, tests/rules/conftest.py). In CI's long form the property tests
# draw 15 examples each (13 CPU minutes in all), more than the rest of a worker's share, so there they go
# file by file to both workers and each builds the workspace (`SPREAD_IN_FULL_RUN`).
SPREAD_IN_FULL_RUN = ("tests/ingest/fuzz/",)
SHARED_SCOPES = {
    "tests/ingest/fuzz/": "tests/ingest/fuzz/",
    "tests/rules/test_gpu_h200.py": "h200",
    "tests/rules/test_gpu005_h200.py": "h200",
    "tests/rules/test_gpu002_smaller_gpu.py": "h200",
}


@pytest.hookimpl(optionalhook=True)  # an xdist hook: a run without xdist (`-p no:xdist`) skips it
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadfile` (the Makefile's) with the files of `SHARED_SCOPES` each sent as one unit."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    shared = {p: s for p, s in SHARED_SCOPES.items() if not (full_run() and p in SPREAD_IN_FULL_RUN)}

    class SharedFixtureScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            for prefix, scope in shared.items():
                if path.startswith(prefix):
                    return scope
            return super()._split_scope(nodeid)

    return SharedFixtureScheduling(config, log)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop a background demo build still running when the whole run ends (the controller, or plain pytest)."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    if hasattr(session.config, "workerinput") or factory is None or factory._basetemp is None:
        return
    demo_build.stop(_shared_temp(factory))


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
    """A warehouse file with today's schema and every mart built empty, made once per test run.

    Building the marts of an empty warehouse costs seconds; tests copy this file instead (tests/helpers/empty_warehouse.py)
    and never write it. The first process to ask builds it under the run's shared temporary folder, holding a
    lock; the other xdist worker waits on the lock and reads the same file, rather than building its own.
    """
    shared = _shared_temp(tmp_path_factory)
    path = shared / "empty_marts" / "wastewatch.duckdb"
    with open(shared / "empty_marts.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            building = shared / f"empty_marts.{os.getpid()}" / "wastewatch.duckdb"
            con = new_warehouse(building)
            build_marts(con)
            con.close()  # checkpointed: the file is the whole warehouse, no WAL beside it
            building.parent.rename(path.parent)
    return path
