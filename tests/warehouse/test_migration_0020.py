"""Version 20 (sql/raw/migrations/0020_train_log_checkpoints.sql): a warehouse written by version 19 keeps its
training-log lines, which read as steps, and takes checkpoint saves and configuration lines from then on."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from pipelines.warehouse import SCHEMA_VERSION, connect
from tests.helpers.paths import FIXTURES


def test_a_version_19_warehouse_keeps_its_train_log_lines_as_steps(tmp_path: Path) -> None:
    snap = json.loads((FIXTURES / "schema" / "v19.json").read_text())
    path = tmp_path / "v19.duckdb"
    old = duckdb.connect(str(path))
    for table, cols in snap["tables"].items():
        old.execute(f"create table {table} ({', '.join(cols)})")
    old.execute("insert into schema_version values (19, 'v19', now()::timestamp)")
    old.execute(
        "insert into train_steps (ts, host, step, steps, tokens, params, source, x_source_file, x_file_id, x_line) "
        "values ('2026-11-30 09:00:40', 'dgx-01', 20, 10, 20971520, 7e10, 'log', 'm.log', 'f1', 16)"
    )
    old.close()
    con = connect(path)
    try:
        assert con.execute("select max(version) from schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert con.execute(
            "select step, tokens, event, save_s, model, global_batch, seq_len, parallel from train_steps"
        ).fetchall() == [(20, 20971520.0, "step", None, None, None, None, None)]
        con.execute(
            "insert into train_steps (ts, event, save_s, source, x_source_file, x_file_id, x_line) "
            "values ('2026-11-30 09:01:20', 'checkpoint', 30.4, 'log', 'm.log', 'f1', 20)"
        )
        assert con.execute("select count(*) from train_steps where event = 'checkpoint'").fetchall() == [(1,)]
    finally:
        con.close()
