"""`dagster dev` serves the code location: its UI and GraphQL API on a free local port, the asset graph,
jobs, schedules and the sensor as a user sees them, and nothing left running afterwards. One `make dev` (the
way a user starts it) serves both end-to-end tests: it takes most of their time to start and to stop.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from pipelines.defs.resources import CONFIG_ENV
from tests.helpers.asset_graph import snapshot_assets
from tests.helpers.config import write_config
from tests.helpers.dagster_dev import DagsterDev, group_members
from tests.helpers.paths import FOCUS_SAMPLE, REPO, copy_into
from tests.helpers.sensor import evaluate_sensor, requested

FINDINGS_GPU001 = "findings/gpu001_idle_gpu_instance"
SOURCES = """
sources:
  - {name: focus, kind: focus, uri: landing/billing/}
  - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
"""  # tests/dagster/conftest.py's `sensor_config`, made once for the module

DEV_QUERY = """
query Wastewatch($cursor: Float) {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError { __typename ... on PythonError { message } }
      }
    }
  }
  assetNodes { assetKey { path } groupName isPartitioned }
  repositoriesOrError {
    ... on RepositoryConnection {
      nodes {
        name
        location { name }
        jobs { name }
        sensors { name sensorState { status } }
        schedules { name cronSchedule executionTimezone }
      }
    }
  }
  scheduleOrError(scheduleSelector: {
    repositoryName: "__repository__", repositoryLocationName: "wastewatch",
    scheduleName: "weekly_report_schedule"
  }) {
    __typename
    ... on Schedule {
      futureTicks(cursor: $cursor, limit: 1) {
        results {
          timestamp
          evaluationResult { runRequests { runKey tags { key value } } skipReason error { message } }
        }
      }
    }
  }
}
"""

SENSOR_DRY_RUN = """
mutation {
  sensorDryRun(
    selectorData: {repositoryName: "__repository__", repositoryLocationName: "wastewatch",
                   sensorName: "new_files_sensor"},
    cursor: null
  ) {
    __typename
    ... on DryRunInstigationTick {
      evaluationResult { runRequests { runKey tags { key value } } skipReason cursor error { message } }
    }
    ... on PythonError { message }
  }
}
"""


@dataclass
class Served:
    """`make dev` running on a project (nothing ingested yet; history_start gives the weeks the schedule's
    Monday tick reports on), with the config the sensor reads."""

    dev: DagsterDev
    config: Path
    sensor_config: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One `make dev` (which execs `dagster dev -w workspace.yaml`) for the module's two tests: the first
    reads what it serves, the second stops it with SIGTERM; stopped here if the second did not run. `make
    dev` as a user runs it: this venv's bin, the install stamp taken as done."""
    root = tmp_path_factory.mktemp("dev")
    copy_into(FOCUS_SAMPLE, root / "landing" / "billing")
    (root / "landing" / "telemetry").mkdir(parents=True)
    sensor_config = write_config(root, SOURCES)
    config = sensor_config.with_name("dev.yaml")
    config.write_text("history_start: 2023-01-02\n" + sensor_config.read_text(encoding="utf-8"))
    make = ["make", "-s", "-o", ".venv/.installed", f"BIN={Path(sys.executable).parent}"]
    dev = DagsterDev(
        root / "dev", env={CONFIG_ENV: str(config)}, command=lambda port: [*make, f"PORT={port}", "dev"]
    )
    try:
        with dev:
            assert dev.process is not None
            dev.wait_ready(timeout=180)  # its start takes a minute at a load of 12 on 2 cores
            yield Served(dev, config, sensor_config)
    finally:
        dev.stop()
        if dev.process is not None:
            assert group_members(dev.process.pid) == [], "dagster dev left processes behind"


def _ours(log: str) -> list[str]:
    """Warnings the log attributes to our code (deprecation warnings are switched on for these processes)."""
    return [
        line
        for line in log.splitlines()
        if re.search(r"deprecat|BetaWarning|PreviewWarning|SupersessionWarning", line, re.IGNORECASE)
        and re.search(rf"{re.escape(str(REPO))}/(pipelines|rules)/", line)
    ]


@pytest.mark.e2e
def test_dagster_dev_serves_the_code_location(served: Served) -> None:
    dev = served.dev
    assert dev.process is not None and dev.process.poll() is None
    info = dev.wait_ready(timeout=60)
    assert info["dagster_version"] == dg.__version__

    status, content_type, page = dev.get("/")
    assert status == 200 and content_type.startswith("text/html") and "<html" in page

    cursor = datetime(2026, 11, 25, tzinfo=UTC).timestamp()
    data = dev.graphql(DEV_QUERY, {"cursor": cursor})
    [location] = data["workspaceOrError"]["locationEntries"]
    assert (location["name"], location["loadStatus"]) == ("wastewatch", "LOADED")
    assert location["locationOrLoadError"]["__typename"] == "RepositoryLocation", location

    nodes = {"/".join(n["assetKey"]["path"]): n for n in data["assetNodes"]}
    assert sorted(nodes) == snapshot_assets()
    assert nodes["billing_line_items"]["groupName"] == "ingest"
    assert nodes[FINDINGS_GPU001]["isPartitioned"] is True

    [repo] = data["repositoriesOrError"]["nodes"]
    assert repo["location"]["name"] == "wastewatch"
    assert {j["name"] for j in repo["jobs"]} >= {"nightly_ingest", "weekly_report"}
    assert repo["sensors"] == [{"name": "new_files_sensor", "sensorState": {"status": "STOPPED"}}]
    assert sorted((s["name"], s["cronSchedule"], s["executionTimezone"]) for s in repo["schedules"]) == [
        ("daily_alert_schedule", "0 5 * * *", "UTC"),
        ("nightly_ingest_schedule", "0 2 * * *", "UTC"),
        ("weekly_report_schedule", "0 6 * * 1", "UTC"),
    ]

    # Dagster's own cron iteration: after Wednesday 2026-11-25 comes Monday 2026-11-30 06:00 UTC,
    # and that tick asks for the week that just ended
    [tick] = data["scheduleOrError"]["futureTicks"]["results"]
    assert datetime.fromtimestamp(tick["timestamp"], UTC) == datetime(2026, 11, 30, 6, tzinfo=UTC)
    evaluation = tick["evaluationResult"]
    assert evaluation["error"] is None and evaluation["skipReason"] is None
    [request] = evaluation["runRequests"]
    assert {t["key"]: t["value"] for t in request["tags"]}["dagster/partition"] == "2026-11-23"

    # the code server finds the project through $WASTEWATCH_CONFIG
    dry = dev.graphql(SENSOR_DRY_RUN)["sensorDryRun"]
    assert dry["__typename"] == "DryRunInstigationTick", dry
    result = dry["evaluationResult"]
    assert result["error"] is None, result["error"]
    [sensor_request] = result["runRequests"]
    assert (
        sensor_request["runKey"]
        == result["cursor"]
        == requested(evaluate_sensor(served.sensor_config, None))[0]
    )

    # the log so far (the whole log, shutdown included, is checked again after the SIGTERM below)
    log = dev.log
    assert f"Serving dagster-webserver on http://127.0.0.1:{dev.port}" in log
    assert "Traceback" not in log, log
    assert _ours(log) == [], "\n".join(_ours(log))


@pytest.mark.e2e
def test_make_dev_names_its_config_warns_of_nothing_and_stops_on_sigterm(served: Served) -> None:
    dev = served.dev
    assert dev.process is not None
    pgid = dev.process.pid
    [location] = dev.graphql(DEV_QUERY, {"cursor": 0.0})["workspaceOrError"]["locationEntries"]
    assert location["loadStatus"] == "LOADED"
    started = time.monotonic()
    os.kill(dev.process.pid, signal.SIGTERM)  # make itself, as a service manager would
    dev.process.wait(timeout=30)
    while group_members(pgid) and time.monotonic() - started < 45:
        time.sleep(0.1)
    stopped_in = time.monotonic() - started
    assert group_members(pgid) == [], "make dev left processes behind"
    # Dagster's own shutdown (webserver, daemon, code server) takes seconds (27 s seen at a load of 23 on
    # 2 cores); a minute was the bug
    assert stopped_in < 45, f"Dagster took {stopped_in:.1f} s to stop"
    log = dev.log
    assert f"config: {served.config} (from WASTEWATCH_CONFIG)" in log
    assert f"dagster instance: {dev.home}" in log
    assert "superseded" not in log and "will not be used" not in log, log
    assert "Dagster services shut down" in log
    assert "Traceback" not in log, log
    assert _ours(log) == [], "\n".join(_ours(log))


def test_make_dev_falls_back_to_the_demo_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.cli.dev import choose_config

    monkeypatch.delenv(CONFIG_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert choose_config() == (
        Path("wastewatch.yaml"),
        "./wastewatch.yaml",
    )  # nothing anywhere: the error path
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "wastewatch.yaml").write_text("sources: []\n")
    path, origin = choose_config()
    assert path == Path("demo/wastewatch.yaml") and origin.startswith("make dev's default")
    (tmp_path / "wastewatch.yaml").write_text("sources: []\n")
    assert choose_config() == (Path("wastewatch.yaml"), "./wastewatch.yaml")
    monkeypatch.setenv(CONFIG_ENV, "elsewhere.yaml")
    assert choose_config() == (Path("elsewhere.yaml"), "WASTEWATCH_CONFIG")
