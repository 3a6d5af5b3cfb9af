"""Fixtures of the report tests: the hand-worked fleet's report for 2026-W48, webhook receivers, and a real
headless Chromium (Debian's; without it the browser tests skip, unless WASTEWATCH_REQUIRE_BROWSER=1)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import HTTPServer
from pathlib import Path
from typing import Any

import pytest

from pipelines.config import load_config
from pipelines.report import write_report
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.report import W48, Built, evaluate_attention, fleet, put_findings
from tests.helpers.webhook import WebhookReceiver


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, empty_marts: Path) -> Iterator[Built]:
    directory = tmp_path_factory.mktemp("report")
    write_config(
        directory,
        """
        budgets:
          team: {nlp: 10000, vision: 50000}
          project: {vit: 20000}
        """,
    )
    config = load_config(directory / "wastewatch.yaml")
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        fleet(con)
        con.execute(
            "insert into ingest_files (file_id, source, kind, uri, status, error, first_seen_at, checked_at) "
            "values ('x', 'focus-main', 'focus', '/landing/bad.csv', 'rejected', "
            "'/landing/bad.csv:12:4: BilledCost: ''abc'' is not a number', now()::timestamp, now()::timestamp)"
        )
        put_findings(
            con, W48, "GPU001",
            [
                {"resource_id": "i-h100", "team": "nlp", "project": "llm", "estimated_waste": 8640,
                 "evidence": {"idle_hours": 108, "host": "i-h100"}},
                {"resource_id": "i-untagged", "status": "insufficient_data", "estimated_waste": 0,
                 "evidence": {"hours_without_telemetry": 72}},
            ],
        )  # fmt: skip
        evaluate_attention(con, config, W48)
        report = write_report(con, config, W48)
    finally:
        con.close()
    yield Built(config, report, config.reports_path / "2026-W48")


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[WebhookReceiver]]]:
    handler = type("Receiver", (WebhookReceiver,), {"received": [], "status": 200})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hooks/T000/B000/XXXX", handler
    server.shutdown()
    server.server_close()


@pytest.fixture
def timed() -> Iterator[tuple[str, type[WebhookReceiver]]]:
    """The webhook receiver, also recording when each post arrived; a status per post number."""

    class Timed(WebhookReceiver):
        received: list[dict[str, Any]] = []
        at: list[float] = []
        fail: dict[int, int] = {}

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            type(self).status = type(self).fail.get(len(type(self).received) + 1, 200)
            type(self).at.append(time.monotonic())
            super().do_POST()

    server = HTTPServer(("127.0.0.1", 0), Timed)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hooks/T000/B000/XXXX", Timed
    server.shutdown()
    server.server_close()


CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    if executable is None:
        if os.environ.get("WASTEWATCH_REQUIRE_BROWSER") == "1":
            pytest.fail("no chromium on PATH, and WASTEWATCH_REQUIRE_BROWSER=1")
        pytest.skip("no chromium on PATH (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield b
        b.close()
