"""One ingest of a project written on the fly: its files, its `sources:`, and the rows a query reads back."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import load_config
from pipelines.ingest import IngestReport, ingest
from pipelines.warehouse import rows
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse


def ingest_project(
    tmp_path: Path, sources: str, files: Mapping[str, str | Path], query: str
) -> tuple[IngestReport, list[dict[str, Any]]]:
    """Write `files` (text, or a fixture to copy) under `tmp_path`, configure `sources`, ingest once and
    return the run's report with the rows `query` reads."""
    for name, content in files.items():
        dst = tmp_path / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copyfile(content, dst)
        else:
            dst.write_text(content, encoding="utf-8")
    write_config(tmp_path, "sources:\n" + sources)
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        return ingest(con, config), rows(con, query)
    finally:
        con.close()


def ingest_sources(tmp_path: Path, sources: str) -> tuple[IngestReport, duckdb.DuckDBPyConnection]:
    """Configure `sources` under `tmp_path` and ingest once; the caller closes the connection."""
    write_config(tmp_path, f"sources:\n{sources}")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    return ingest(con, config), con


def only_outcome(report: IngestReport) -> tuple[str, str]:
    """The status and error of the run's one file."""
    assert len(report.outcomes) == 1, report.summary()
    return report.outcomes[0].status, report.outcomes[0].error or ""
