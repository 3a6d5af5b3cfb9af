"""Try everything on the demo (issue 43, items 5 and 6): `wastewatch remediate plan` on the demo's week
prints a summary and the actions worth acting on, at most 40 lines, while its JSON plan keeps every action;
`wastewatch alert --dry-run` works out of the box, the demo's config having an `alert:` that writes to a
local file. Both run through the CLI on a copy of the demo's warehouse (the shared demo is only read)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pipelines.cli import main

WEEK = "2026-W48"  # the demo's week (tests/conftest.py's demo_dir)
PLAN_LINES = 40

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def demo_copy(demo_dir: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's config and live warehouse, copied: plan records its actions there."""
    source, _ = demo_dir
    copy = tmp_path_factory.mktemp("demo-copy")
    shutil.copy(source / "wastewatch.yaml", copy)
    (copy / "warehouse").mkdir()
    shutil.copy(source / "warehouse" / "wastewatch.duckdb", copy / "warehouse")
    return copy


def _cli(directory: Path, *args: str) -> Result:
    config = ["--config", str(directory / "wastewatch.yaml")]
    return CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(main, [*config, *args], catch_exceptions=False)


def test_remediate_plan_on_the_demo_is_a_screen_and_its_json_keeps_every_action(demo_copy: Path) -> None:
    result = _cli(demo_copy, "remediate", "plan", "--week", WEEK)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) <= PLAN_LINES, "\n".join(lines)
    total = int(lines[0].split(": ", 1)[1].split(" action(s)", 1)[0])
    assert lines[1] == "by rule and kind:" and total > PLAN_LINES  # more actions than lines printed
    # each action listed is executable and worth at least the default USD 10 a week
    listed = [x for x in lines if x[:16].isalnum() and len(x.split()[0]) == 16]
    assert listed and all(
        float(x.rsplit("USD ", 1)[1].split("/", 1)[0].replace(",", "")) >= 10 for x in listed
    )
    plan = json.loads((demo_copy / "reports" / WEEK / "remediation-plan.json").read_text(encoding="utf-8"))
    assert plan["actions"] == total
    everything = _cli(demo_copy, "remediate", "plan", "--week", WEEK, "--all").stdout.splitlines()
    assert len(everything) > total  # --all lists every action


def test_the_daily_alert_works_on_the_demo_out_of_the_box(demo_copy: Path) -> None:
    result = _cli(demo_copy, "alert", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "wastewatch alert:" in result.stdout
    assert not (demo_copy / "reports" / "alerts.jsonl").exists()  # a dry run writes nothing
