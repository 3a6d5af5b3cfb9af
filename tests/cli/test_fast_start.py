"""`wastewatch --help` and `--version` start without the heavy imports a run needs, and the code location a
run loads without those only other commands need (issue 41, item 1)."""

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


def _imported(*args: str, code: str = _IMPORTED_BY) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_help_and_version_import_neither_dagster_duckdb_nor_the_config_models() -> None:
    assert _imported("--help") == "[]"
    assert _imported("--version") == "[]"
    # a command's own help runs the group first, which finds the config: that needs the config's models
    assert "dagster" not in _imported("ingest", "--help")


# the Dagster code location as the CLI loads it for a run (its definitions, then the in-memory instance an
# ingest with run history off opens): no deprecation warning from our modules, and none of what only a rule,
# a report or a template error needs: polars (the rules' frames) and Mako's Pygments highlighting (Alembic,
# which Dagster's storages import, imports Mako's errors). One process for both checks: its imports are the cost.
_CODE_LOCATION = """
import sys
import warnings
from pathlib import Path
warnings.filterwarnings("error", category=DeprecationWarning, module=r"pipelines\\..*")
import pipelines.runner
from pipelines.definitions import defs
from pipelines.instance import open_instance
defs()
with open_instance(Path("wastewatch.yaml"), history="off"):
    pass
unneeded = ("polars", "mako.ext.pygmentplugin", "pygments.lexers.agile")
print(sorted(m for m in unneeded if m in sys.modules))
"""


def test_the_code_location_loads_without_deprecation_warnings_polars_or_makos_highlighting() -> None:
    assert _imported(code=_CODE_LOCATION) == "[]"
