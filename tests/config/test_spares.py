"""`spares:` (hot-spare pools): read at load into the hosts or tags they name and the policy share; an unknown
key or a share outside 0..1 is a config error naming the file, the line and the key (the CLI exits 2 with that
one line, nothing done)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import ConfigError, load_config
from tests.helpers.config import write_config


def test_hosts_or_a_tag_and_the_policy_share_are_read(tmp_path: Path) -> None:
    config = load_config(
        write_config(tmp_path, 'spares:\n  match: {host: "gpu-spare-*"}\n  policy_share: 0.05\n')
    )
    assert config.spares is not None
    assert config.spares.match.host == ["gpu-spare-*"] and config.spares.match.tag is None
    assert config.spares.policy_share == 0.05
    config = load_config(
        write_config(
            tmp_path,
            "spares:\n  match: {host: [spare-a, spare-b], tag: {role: hot-spare}}\n  policy_share: 0\n",
        )
    )
    assert config.spares is not None
    assert config.spares.match.host == ["spare-a", "spare-b"]
    assert config.spares.match.tag == {"role": "hot-spare"} and config.spares.policy_share == 0
    assert load_config(write_config(tmp_path, "sources: []\n")).spares is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("  match: {host: spare-*}\n  policy_share: 1.5\n", ":3: spares.policy_share: "),
        ("  match: {host: spare-*}\n  policy_share: -0.1\n", ":3: spares.policy_share: "),
        ("  match: {host: spare-*}\n  policy_share: 0.05\n  pool: a\n", ":4: spares.pool: unknown key"),
        ("  match: {hosts: spare-*}\n  policy_share: 0.05\n", ":2: spares.match.hosts: unknown key"),
        ("  match: {}\n  policy_share: 0.05\n", "match needs host (a glob or a list of globs) or tag"),
        ("  match: {host: spare-*}\n", "spares.policy_share: required key is missing"),
    ],
)
def test_a_spares_section_that_cannot_be_names_file_line_and_key(
    tmp_path: Path, body: str, expected: str
) -> None:
    path = write_config(tmp_path, "spares:\n" + body)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert expected in str(err.value)
    assert str(err.value).startswith(str(path))


def test_the_cli_exits_2_with_one_line_naming_the_share(tmp_path: Path) -> None:
    path = write_config(tmp_path, "spares:\n  match: {tag: {role: hot-spare}}\n  policy_share: 5\n")
    result = CliRunner().invoke(main, ["--config", str(path), "evaluate", "--week", "2026-W48"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "wastewatch.yaml:3: spares.policy_share:" in lines[0]
    assert "Traceback" not in result.output
    assert not (tmp_path / "warehouse").exists()  # nothing done
