"""`wastewatch --help` and `--version` start without the heavy imports a run needs, and an ingest without
those only other commands need (issue 41, item 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import FOCUS_SAMPLE, REPO, copy_into

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


def _imported(*args: str, code: str = _IMPORTED_BY, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_help_and_version_import_neither_dagster_duckdb_nor_the_config_models() -> None:
    assert _imported("--help") == "[]"
    assert _imported("--version") == "[]"
    # a command's own help runs the group first, which finds the config: that needs the config's models
    assert "dagster" not in _imported("ingest", "--help")


# what an ingest imports that only a rule, a report or a template error needs: polars (the rules' frames),
# the notify module's HTTP client and Mako's Pygments highlighting (Alembic imports Mako's errors)
_INGEST_IMPORTS = """
import sys
from click.testing import CliRunner
from pipelines.cli import main
result = CliRunner().invoke(main, sys.argv[1:])
assert result.exit_code == 0, result.output
assert "1,000 rows" in result.output, result.output
unneeded = ("polars", "pipelines.report.notify", "mako.ext.pygmentplugin", "pygments.lexers.agile")
print(sorted(m for m in unneeded if m in sys.modules))
"""


def test_an_ingest_imports_neither_polars_nor_what_only_reports_need(tmp_path: Path) -> None:
    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "billing")
    config = tmp_path / "wastewatch.yaml"
    config.write_text("sources:\n  - {name: focus, kind: focus, uri: landing/billing/}\n", encoding="utf-8")
    env = {**os.environ, "WASTEWATCH_RUN_HISTORY": "off"}
    assert _imported("-q", "--config", str(config), "ingest", code=_INGEST_IMPORTS, env=env) == "[]"
