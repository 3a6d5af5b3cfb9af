"""The hand-over folders under the marts folder: a build's own is removed when it ends (the Spark tests check
that), and one a killed build left is removed by the next build once it is a day old. No Spark needed."""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipelines.config import load_config
from pipelines.transform.spark.handover import Handover
from tests.helpers.config import write_config


def test_a_killed_builds_hand_over_folder_is_removed_by_the_next_build_once_a_day_old(tmp_path: Path) -> None:
    write_config(tmp_path, 'engine: spark\nspark: {url: "local[2]"}\n')
    config = load_config(tmp_path / "wastewatch.yaml")
    parent = Path(config.spark_marts_dir) / "_handover"
    old = parent / "20261101T000000Z-0badf00d"
    recent = parent / "29991231T000000Z-12345678"  # a build running now, by its name
    other = parent / "notes"  # not a build's folder
    for folder in (old, recent, other):
        folder.mkdir(parents=True)
        (folder / "001-rows.parquet").write_bytes(b"PAR1")
    with Handover(None, duckdb.connect(), config) as hand:  # type: ignore[arg-type]
        assert Path(hand.folder).parent == parent
        assert sorted(p.name for p in parent.iterdir()) == sorted([recent.name, other.name])
    assert sorted(p.name for p in parent.iterdir()) == sorted([recent.name, other.name])
