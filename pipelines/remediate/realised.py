"""The realised saving of applied actions in a later week (sql/reports/rpt_remediation_realised.sql): what
the report's actions section, or anyone querying the warehouse, counts as waste that stopped."""

from __future__ import annotations

from datetime import date
from typing import Any

import duckdb

from pipelines.warehouse import rows, sql_text


def realised_savings(con: duckdb.DuckDBPyConnection, week_start: date) -> list[dict[str, Any]]:
    """One row per action applied before the week: baseline weekly waste, the week's waste, the saving."""
    return rows(con, sql_text("reports", "rpt_remediation_realised"), {"week_start": week_start})
