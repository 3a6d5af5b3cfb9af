"""`showback:` in wastewatch.yaml: ordered named rules, checked when the file is read; a rule that cannot be
applied (unknown key, percentages not summing to 100, a split without what it needs) names the file, the
line and the key, and the CLI exits 2 having done nothing."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import ConfigError, load_config
from tests.helpers.config import write_config

GOOD = """
showback:
  - name: support
    match: {service: "AWS Support*", charge_category: [Usage, Tax]}
    split: even
  - name: monitoring
    match: {resource: "*monitoring*"}
    split: proportional
    by: spend
    teams: [ml, infra]
  - name: gpu-cluster
    match: {tag_present: cluster, tag_absent: [team]}
    split: proportional
    by: busy_gpu_hours
    cluster: shared-a100
  - name: tax
    match: {charge_category: Tax}
    split: fixed
    shares: {ml: 62.5, infra: 37.5}
"""


def test_the_rules_are_read_in_order_with_single_globs_as_lists(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, GOOD))
    assert [r.name for r in config.showback] == ["support", "monitoring", "gpu-cluster", "tax"]
    assert config.showback[0].match.service == ["AWS Support*"]
    assert config.showback[0].match.charge_category == ["Usage", "Tax"]
    assert config.showback[2].match.tag_present == ["cluster"]
    assert config.showback[3].shares == {"ml": Decimal("62.5"), "infra": Decimal("37.5")}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "  - {name: tax, match: {charge_category: Tax}, split: fixed,\n     shares: {a: 50, b: 40}}\n",
            "wastewatch.yaml:4: showback[0].shares: shares sum to 90 percent, not 100",
        ),
        (
            "  - name: tax\n    match:\n      chargecategory: Tax\n    split: even\n",
            "wastewatch.yaml:5: showback[0].match.chargecategory: unknown key",
        ),
        (
            "  - {name: s, match: {service: x}, split: even, weight: 2}\n",
            "wastewatch.yaml:3: showback[0].weight: unknown key",
        ),
        (
            "  - {name: s, match: {service: x}, split: proportional}\n",
            "split: proportional needs by:",
        ),
        (
            "  - {name: s, match: {service: x}, split: proportional, by: busy_gpu_hours}\n",
            "by: busy_gpu_hours needs cluster:",
        ),
        (
            "  - {name: s, match: {service: x}, split: fixed}\n",
            "split: fixed needs shares:",
        ),
        (
            "  - {name: s, match: {}, split: even}\n",
            "match needs at least one of",
        ),
        (
            "  - {name: s, match: {service: x}, split: even}\n  - {name: s, match: {service: y}, split: even}\n",
            "two showback rules are named 's'",
        ),
        (
            "  - {name: s, match: {service: x}, split: weighted}\n",
            "wastewatch.yaml:3: showback[0].split:",
        ),
    ],
)
def test_a_rule_that_cannot_be_applied_names_file_line_and_key(
    tmp_path: Path, body: str, expected: str
) -> None:
    path = write_config(tmp_path, "warehouse: w.duckdb\nshowback:\n" + body)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert expected in str(err.value)
    assert str(err.value).startswith(str(path))


def test_the_cli_exits_2_with_one_line_naming_the_line(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        "showback:\n  - name: tax\n    match: {charge_category: Tax}\n    split: fixed\n"
        "    shares: {ml: 60, infra: 60}\n",
    )
    result = CliRunner().invoke(main, ["--config", str(path), "evaluate", "--week", "2026-W48"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "wastewatch.yaml:5: showback[0].shares: shares sum to 120" in lines[0]
    assert "Traceback" not in result.output
    assert not (tmp_path / "warehouse").exists()  # nothing done
