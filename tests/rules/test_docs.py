"""docs/rules.md is generated from the rules (`python -m rules docs`); it must not rot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rules import ALL_RULES, DOC_HEADINGS
from rules.__main__ import main
from rules._docs import anchor, param_bounds, params_rows, render_catalogue

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "rules.md"


def test_docs_rules_md_is_up_to_date() -> None:
    assert DOCS.is_file(), "docs/rules.md is missing: run `make docs`"
    assert DOCS.read_text(encoding="utf-8") == render_catalogue(), (
        "docs/rules.md is out of date: run `make docs` (python -m rules docs > docs/rules.md)"
    )


def test_catalogue_covers_every_rule_section_and_param() -> None:
    text = render_catalogue()
    for rule in ALL_RULES:
        assert f"## {rule.id} {rule.name}\n" in text
        assert f"(#{anchor(rule)})" in text
        for heading in DOC_HEADINGS:
            assert f"### {heading}\n" in text
        for row in params_rows(rule):
            assert f"| `{row['name']}` | {row['type']} | `{row['default']}` |" in text
            assert row["description"] in text
        assert rule.doc_sections()["Example finding"] in text


def test_param_bounds_render_from_the_field() -> None:
    fields = ALL_RULES[0].params.model_fields
    assert param_bounds(fields["max_util_pct"]) == "0 ≤ x ≤ 100"
    assert param_bounds(fields["min_coverage"]) == "0 < x ≤ 1"


def test_python_m_rules_docs_prints_the_file() -> None:
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}  # the output is UTF-8 whatever the locale says
    done = subprocess.run(
        [sys.executable, "-m", "rules", "docs"], cwd=ROOT, capture_output=True, check=False, env=env
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode("utf-8") == DOCS.read_text(encoding="utf-8")


def test_docs_check_flags_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "rules.md"
    stale.write_text(render_catalogue().replace("idle", "busy"), encoding="utf-8")
    assert main(["docs", "--check", str(stale)]) == 1
    assert main(["docs", "--check", str(DOCS)]) == 0


def test_list_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == [r.id for r in ALL_RULES]
    rule = ALL_RULES[0]
    assert main(["show", rule.name]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"{rule.id} {rule.name}")
    for name in rule.params.model_fields:
        assert f"  {name} = " in shown
    assert main(["show", "NOPE999"]) == 2
    assert "unknown rule 'NOPE999'" in capsys.readouterr().err


def test_the_readmes_rules_table_is_the_registrys(tmp_path: Path) -> None:
    readme = ROOT / "README.md"
    assert main(["readme", "--check", str(readme)]) == 0, (
        "README's rules table is out of date: run `make docs`"
    )
    text = readme.read_text(encoding="utf-8")
    for rule in ALL_RULES:  # every registered rule has its row, linked to its section of docs/rules.md
        assert f"| [{rule.id}](docs/rules.md#{anchor(rule)}) | {rule.name} |" in text
    stale = tmp_path / "README.md"
    stale.write_text(text.replace("| [GPU005]", "| [GPU006]"), encoding="utf-8")
    assert main(["readme", "--check", str(stale)]) == 1
    assert main(["readme", "--write", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == text
    (tmp_path / "bare.md").write_text("# no table here\n", encoding="utf-8")
    assert main(["readme", "--check", str(tmp_path / "bare.md")]) == 2
