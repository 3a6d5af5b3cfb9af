"""`wastewatch --help` and `--version` start without the heavy imports a run needs (issue 41, item 1)."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers.paths import REPO

# the CLI's own entry point, then what it imported: none of the run's libraries, nor the config's models
_IMPORTED_BY = """
import sys
from click.testing import CliRunner
from pipelines.cli import main
result = CliRunner().invoke(main, sys.argv[1:])
assert result.exit_code == 0, result.output
heavy = ("dagster", "duckdb", "polars", "pyarrow", "pydantic", "yaml", "pipelines.config", "pipelines.runner")
print(sorted(m for m in sys.modules if m.split(".")[0] in heavy or m in heavy))
"""


def _imported(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORTED_BY, *args], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_help_and_version_import_neither_dagster_duckdb_nor_the_config_models() -> None:
    assert _imported("--help") == "[]"
    assert _imported("--version") == "[]"
    # a command's own help runs the group first, which finds the config: that needs the config's models
    assert "dagster" not in _imported("ingest", "--help")
