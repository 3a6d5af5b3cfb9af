"""`ingest` opens the warehouse once, for its check, its Dagster run and what it prints after; a warehouse
that cannot be opened fails the run as when the run opened it itself: one line naming the command, exit 1,
no Dagster run started."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import load_config
from pipelines.warehouse import SCHEMA_VERSION
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse


def test_a_warehouse_that_cannot_be_opened_is_one_line_and_exit_1(tmp_path: Path) -> None:
    (tmp_path / "landing").mkdir()
    config_path = write_config(tmp_path, "sources:\n  - {name: focus, kind: focus, uri: landing/}\n")
    con = new_warehouse(load_config(config_path).warehouse_path)
    con.execute(
        "insert into schema_version values ($v, 'from a newer wastewatch', now())", {"v": SCHEMA_VERSION + 1}
    )
    con.close()
    result = CliRunner(env={"WASTEWATCH_CONFIG": None, "WASTEWATCH_RUN_HISTORY": "off"}).invoke(
        main, ["--config", str(config_path), "ingest"], catch_exceptions=False
    )
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: ingest: "), result.stderr
    assert "newer than this wastewatch" in errors[0]
    assert "Traceback" not in result.output
