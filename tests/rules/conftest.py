"""Fixtures of the rule tests: the H200 capture's warehouse."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.ingest.billing.lines import insert_lines
from rules._claims import claiming_rules
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.h200_capture import BILLING
from tests.helpers.marts import build_only
from tests.helpers.paths import H200, copy_into


@pytest.fixture(scope="session")
def h200(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    """The H200 capture, its phases and steps ingested, its bill inserted and the marts the GPU rules read
    built: made once per test process and only read by the tests (their rules evaluate without writing
    findings)."""
    root = tmp_path_factory.mktemp("h200")
    copy_into(H200 / "nvidia_smi_query_gpu.csv", root / "landing" / "telemetry")
    copy_into(H200 / "phases.csv", root / "landing" / "jobs")
    copy_into(H200 / "train_log.csv", root / "landing" / "train")
    config = load_config(
        write_config(
            root,
            """
            sources:
              - {name: smi, kind: nvidia_smi, uri: landing/telemetry/, options: {host: h200-lab}}
              - name: phases
                kind: jobs_csv
                uri: landing/jobs/phases.csv
                options:
                  columns: {started_at: start_ts, ended_at: end_ts, state: exit_status, job_name: phase}
                  host: h200-lab
              - {name: steps, kind: train_log, uri: landing/train/, options: {host: h200-lab}}
            """,
        )
    )
    con = new_warehouse(config.warehouse_path)
    report = ingest(con, config)
    assert [o.status for o in report.outcomes] == ["loaded", "loaded", "loaded"], [
        o.error for o in report.outcomes
    ]
    insert_lines(con, BILLING)
    build_only(con, *{mart for rule in claiming_rules() for mart in rule.requires})  # what the GPU rules read
    yield con
    con.close()
