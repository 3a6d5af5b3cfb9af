"""The retention of raw GPU samples: days older than `retention: gpu_samples_days` are dropped.

At 4,000 GPUs sampled every minute `gpu_samples` grows by 5.76 M rows a day, while the rules read the
hourly roll-up (`int_gpu_slices`) and the marts built on it. Once a day is rolled up and older than the
retention, its raw rows are deleted and the day is recorded in `gpu_samples_pruned`: from then on the
roll-up keeps that day as it is (`pipelines.transform.days.refresh_rollups`), and late samples for it are dropped
in turn. A job record that arrives after its day was dropped can no longer cut that day's hours.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

import duckdb

from pipelines.config import Config
from pipelines.warehouse import one, sql_text, table_exists, transaction, utcnow

LAYER = "intermediate/retention"
# the asset that runs it after each ingest's roll-up (pipelines/defs/transform/assets.py)
RETENTION_ASSET = "gpu_samples_retention"


@dataclass(frozen=True)
class PruneStats:
    """What one retention pass did: the cut-off day (samples before it go), the days and rows dropped."""

    before: date | None
    days: int = 0
    rows: int = 0


def retention_cutoff(config: Config, today: date) -> date | None:
    """The first sample day kept, or None when the config keeps every sample."""
    days = config.retention.gpu_samples_days
    return None if days is None else today - timedelta(days=days)


def prune_samples(con: duckdb.DuckDBPyConnection, config: Config, today: date) -> PruneStats:
    """Drop the rolled-up sample days before the retention's cut-off, recording them (one transaction)."""
    before = retention_cutoff(config, today)
    if before is None:
        return PruneStats(None)
    if not table_exists(con, "int_incremental_days"):  # no roll-up yet: nothing may go
        return PruneStats(before)
    with transaction(con):
        counted = one(con, sql_text(LAYER, "prunable"), {"before": before})
        days, n = (int(counted[0]), int(counted[1])) if counted else (0, 0)
        if n:
            con.execute(sql_text(LAYER, "record_pruned_days"), {"before": before, "now": utcnow()})
            con.execute(sql_text(LAYER, "delete_pruned_samples"), {"before": before})
    return PruneStats(before, days, n)
