"""docs/architecture.md's "Add a rule" recipe, followed on a copy of the code: a rule is its folder, one entry
in rules/_registry.py and its YAML cases; with nothing else touched it is documented, listed and a weekly
findings asset in Dagster's graph."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import REPO

PROBE = """
import json
from pipelines.definitions import defs
from rules import _docs
from rules._registry import get_rule

rule = get_rule("STO099")
keys = {s.key.to_user_string(): s for s in defs().resolve_all_asset_specs()}
spec = keys.get("findings/sto099_scratch_upload")
print(json.dumps({
    "name": rule.name,
    "asset": spec is not None,
    "partitioned": spec is not None and spec.partitions_def is not None,
    "documented": "STO099" in _docs.render_catalogue(),
}))
"""


def _copy(tmp: Path) -> Path:
    root = tmp / "checkout"
    for part in ("pipelines", "rules", "sql"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "tests" / "fixtures" / "rules").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")  # Dagster finds the project by it
    return root


def _changed(copy: Path) -> list[str]:
    return sorted(
        p.relative_to(copy).as_posix()
        for p in copy.rglob("*")
        if p.is_file()
        and (
            not (REPO / p.relative_to(copy)).exists()
            or (REPO / p.relative_to(copy)).read_bytes() != p.read_bytes()
        )
    )


def test_a_rule_is_its_folder_one_registry_entry_and_its_cases(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    # the new rule: STO004's folder under a new id and name (its own docstring, params and query)
    src, folder = (
        REPO / "rules" / "sto004_incomplete_multipart_upload",
        copy / "rules" / "sto099_scratch_upload",
    )
    folder.mkdir()
    for name in ("__init__.py", "query.sql"):
        text = (src / name).read_text()
        (folder / name).write_text(
            text.replace("STO004", "STO099").replace("incomplete-multipart-upload", "scratch-upload")
        )
    cases = (REPO / "tests" / "fixtures" / "rules" / "STO004.yml").read_text().replace("STO004", "STO099")
    (copy / "tests" / "fixtures" / "rules" / "STO099.yml").write_text(cases)
    registry = copy / "rules" / "_registry.py"
    text = registry.read_text()
    text = text.replace(
        "from rules.sto005_log_retention import RULE as STO005\n",
        "from rules.sto005_log_retention import RULE as STO005\nfrom rules.sto099_scratch_upload import RULE as STO099\n",
    )
    registry.write_text(
        text.replace(
            "STO001, STO002, STO003, STO004, STO005,\n", "STO001, STO002, STO003, STO004, STO005, STO099,\n"
        )
    )

    assert _changed(copy) == [
        "rules/_registry.py",
        "rules/sto099_scratch_upload/__init__.py",
        "rules/sto099_scratch_upload/query.sql",
        "tests/fixtures/rules/STO099.yml",
    ]
    env = {**os.environ, "PYTHONPATH": str(copy)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=copy, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen == {"name": "scratch-upload", "asset": True, "partitioned": True, "documented": True}
