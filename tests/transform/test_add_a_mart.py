"""docs/architecture.md's "Add a mart" recipe, followed on a copy of the code: a mart is its SQL file and one
registry line, and nothing else needs touching for it to be built, documented and an asset in Dagster's graph."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import REPO

SCRATCH_SQL = """\
-- grain: one row per GPU x day with telemetry (a scratch mart of the recipe's test)
-- depends_on: gpu_hours
-- gpu_days_note: the hours of the day the GPU reported
select gpu_uuid, hour::date as day, count(*) as hours from gpu_hours group by all
"""
SCRATCH_LINE = '    Mart("scratch_gpu_days", "marts", "full", _D, "GPU-days with telemetry (the recipe test\'s scratch mart)."),\n'

PROBE = """
import json
from pipelines.cli.schema_docs import render
from pipelines.definitions import defs

text = render()
spec = next(s for s in defs().resolve_all_asset_specs() if s.key.to_user_string() == "scratch_gpu_days")
print(json.dumps({
    "documented": "`scratch_gpu_days`" in text,
    "deps": sorted(d.asset_key.to_user_string() for d in spec.deps),
    "description": spec.description,
    "group": spec.group_name,
}))
"""


def _copy(tmp: Path) -> Path:
    root = tmp / "checkout"
    for part in ("pipelines", "rules", "sql"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")  # Dagster finds the project by it
    return root


def _changed(copy: Path) -> list[str]:
    """The files of the copy that differ from (or are not in) the checkout."""
    out = []
    for path in sorted(p for p in copy.rglob("*") if p.is_file()):
        rel = path.relative_to(copy)
        original = REPO / rel
        if not original.exists() or original.read_bytes() != path.read_bytes():
            out.append(rel.as_posix())
    return out


def test_a_mart_is_its_sql_file_and_one_registry_line(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    (copy / "sql" / "marts" / "scratch_gpu_days.sql").write_text(SCRATCH_SQL)
    registry = copy / "pipelines" / "marts" / "registry.py"
    text = registry.read_text()
    anchor = '    Mart("gpu_purchase_hours"'
    at = text.index("\n", text.index(anchor)) + 1
    registry.write_text(text[:at] + SCRATCH_LINE + text[at:])

    assert _changed(copy) == ["pipelines/marts/registry.py", "sql/marts/scratch_gpu_days.sql"]
    env = {**os.environ, "PYTHONPATH": str(copy)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=copy, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    # built by the transform (schema docs build every mart on an empty warehouse), documented, an asset
    assert seen == {
        "documented": True,
        "deps": ["gpu_hours"],
        "description": "GPU-days with telemetry (the recipe test's scratch mart).",
        "group": "transform",
    }
