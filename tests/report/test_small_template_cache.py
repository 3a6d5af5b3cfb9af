"""The report's templates through Jinja's bytecode cache (pipelines/report/render.py): a template loaded from
the cache renders as one compiled afresh, and a changed source under the same name is compiled again."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.report import render
from pipelines.report.sections import SECTIONS

# the template files every report renders (report.md, report.html, the pages, a team's page)
FILES = ("report.md.j2", "report-full.md.j2", "report.html.j2", "team.html.j2", "statement.html.j2")


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cache in a folder of this test's own (Jinja's default is shared by the user's processes)."""
    folder = tmp_path / "jinja"
    folder.mkdir()
    monkeypatch.setattr(render, "_bytecode_cache", lambda: render._BytecodeCache(str(folder)))
    return folder


def _rendered(env: render.Environment) -> list[str]:
    out = [str(env.globals["section_html"](s.name, [])) for s in SECTIONS]
    out += [env.globals["section_md"](s.name, []) for s in SECTIONS]
    return out


def test_cached_templates_render_as_fresh_ones(cache_dir: Path) -> None:
    first = render.environment()
    fresh = _rendered(first)
    for name in FILES:
        first.get_template(name)
    written = sorted(p.name for p in cache_dir.iterdir())
    assert len(written) >= len(SECTIONS) * 2 + len(FILES)

    again = render.environment()  # another process's environment: every template from the cache
    assert _rendered(again) == fresh
    for name in FILES:
        again.get_template(name)
    assert sorted(p.name for p in cache_dir.iterdir()) == written  # nothing compiled again


def test_a_changed_source_is_compiled_again(cache_dir: Path) -> None:
    one = render.environment()
    assert render.generated(one, "probe", "one {{ v }}").render(v=1) == "one 1"
    other = render.environment()
    assert render.generated(other, "probe", "two {{ v }}").render(v=2) == "two 2"


def test_generated_templates_are_autoescaped_as_strings_were() -> None:
    env = render.environment()
    assert render.generated(env, "md/probe", "{{ v }}").render(v="<a>") == "&lt;a&gt;"
    assert env.from_string("{{ v }}").render(v="<a>") == "&lt;a&gt;"
