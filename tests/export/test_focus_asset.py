"""The `exports/focus` Dagster asset: a billing-period partition materialised for real writes that period's
partition through the same code as the CLI, and says what it wrote."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import dagster as dg
import duckdb

from pipelines.config import load_config
from pipelines.defs.exports.assets import _focus_export_asset, monthly_partitions_from
from pipelines.defs.resources import WastewatchResource
from pipelines.ingest import ingest
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FIXTURES


def test_materialising_a_billing_period_writes_its_partition(tmp_path: Path) -> None:
    (tmp_path / "landing").mkdir()
    shutil.copyfile(FIXTURES / "billing" / "focus_sample_1.0.csv", tmp_path / "landing" / "sample.csv")
    config_path = write_config(tmp_path, "sources:\n  - {name: bill, kind: focus, uri: landing/}\n")
    config = load_config(config_path)
    con = new_warehouse(config.warehouse_path)
    assert not ingest(con, config).rejected
    con.close()

    asset = _focus_export_asset(monthly_partitions_from(date(2024, 9, 17)))
    assert asset.partitions_def is not None
    assert asset.partitions_def.get_partition_keys()[:2] == ["2024-09", "2024-10"]
    out = tmp_path / "focus"
    result = dg.materialize(
        [asset],
        partition_key="2024-09",
        resources={"wastewatch": WastewatchResource(config_path=str(config_path))},
        run_config={"ops": {"exports__focus": {"config": {"out": str(out), "format": "csv"}}}},
    )
    assert result.success
    (event,) = result.get_asset_materialization_events()
    meta = {k: v.value for k, v in event.materialization.metadata.items()}
    assert meta["period"] == "2024-09" and meta["lines"] == 999 and meta["replaced"] is False
    assert meta["files"] == "billing_period=2024-09/part-0.csv"
    assert meta["billed_cost_USD"] == "20.28022672899"
    assert sorted(p.name for p in out.iterdir()) == ["_manifest.json", "billing_period=2024-09"]
    lines = duckdb.connect().execute(
        "select count(*), sum(BilledCost::decimal(38, 12))::varchar from read_csv($p, all_varchar = true)",
        {"p": str(out / "billing_period=2024-09" / "part-0.csv")},
    )
    assert lines.fetchone() == (999, "20.280226728990")

    # a period without lines writes nothing and says so
    empty = dg.materialize(
        [asset],
        partition_key="2024-11",
        resources={"wastewatch": WastewatchResource(config_path=str(config_path))},
        run_config={"ops": {"exports__focus": {"config": {"out": str(out)}}}},
    )
    (event,) = empty.get_asset_materialization_events()
    assert event.materialization.metadata["lines"].value == 0
    assert sorted(p.name for p in out.iterdir()) == ["_manifest.json", "billing_period=2024-09"]
