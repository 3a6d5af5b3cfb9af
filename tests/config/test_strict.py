"""A strict `wastewatch.yaml`: a key given twice at any level is an error naming both lines (YAML itself keeps
the last one silently), and `warehouse:` naming something that is not a DuckDB file is refused at load."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import ConfigError, load_config
from pipelines.errors import WarehouseError
from pipelines.warehouse import connect
from tests.helpers.config import write_config

DUPLICATES: dict[str, tuple[str, list[str]]] = {
    "two sources: blocks": (
        """
        sources:
          - {name: focus, kind: focus, uri: landing/billing/}
        warehouse: w.duckdb
        sources:
          - {name: smi, kind: nvidia_smi, uri: landing/telemetry/}
        """,
        ["4: sources: given twice (lines 1 and 4); YAML would keep only the second silently: keep one"],
    ),
    "a key twice inside a section": (
        """
        notify:
          teams: true
          email_html: true
          teams: false
        """,
        ["4: notify.teams: given twice (lines 2 and 4); YAML would keep only the second silently: keep one"],
    ),
    "a key twice inside a source, and one in a nested mapping": (
        """
        sources:
          - name: focus
            kind: focus
            uri: landing/billing/
            uri: landing/other/
        budgets:
          team: {nlp: 100, nlp: 200}
        """,
        [
            "5: sources[0].uri: given twice (lines 4 and 5); YAML would keep only the second silently: keep one",
            "7: budgets.team.nlp: given twice on line 7; YAML would keep only the second silently: keep one",
        ],
    ),
}


@pytest.mark.parametrize("case", list(DUPLICATES))
def test_a_key_given_twice_is_an_error_naming_both_lines(tmp_path: Path, case: str) -> None:
    body, lines = DUPLICATES[case]
    path = write_config(tmp_path, body)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value).splitlines() == [f"{path}:{line}" for line in lines]


def test_keys_beside_a_yaml_merge_override_it_without_an_error(tmp_path: Path) -> None:
    """`<<: *anchor` then a key of the anchor: YAML's way to override a shared block, not a duplicate."""
    path = write_config(
        tmp_path,
        """
        sources:
          - &base {name: a, kind: focus, uri: landing/a/, expected_every: 36h}
          - <<: *base
            name: b
            uri: landing/b/
        """,
    )
    config = load_config(path)
    assert [(s.name, s.uri, s.expected_every) for s in config.sources] == [
        ("a", "landing/a/", "36h"),
        ("b", "landing/b/", "36h"),
    ]


@pytest.mark.parametrize("what", ["device", "folder", "text file"])
def test_a_warehouse_that_is_not_a_duckdb_file_is_refused_at_load_and_by_connect(
    tmp_path: Path, what: str
) -> None:
    target = {"device": Path("/dev/null"), "folder": tmp_path / "wh", "text file": tmp_path / "notes.txt"}[
        what
    ]
    if what == "folder":
        target.mkdir()
    elif what == "text file":
        target.write_text("not a database, and longer than a DuckDB header\n", encoding="utf-8")
    why = {
        "device": f"{target} is not a DuckDB file (a device, pipe or socket): name a DuckDB file, or where to "
        "create one",
        "folder": f"{target} is a folder, not a DuckDB file: name the file in it, e.g. {target / 'wastewatch.duckdb'}",
        "text file": f"{target} is not a DuckDB file (it holds something else): name a DuckDB file, or where to "
        "create one",
    }[what]
    path = write_config(tmp_path, f"currency: USD\nwarehouse: {target}\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == f"{path}:2: warehouse: {why}"
    # a run the Dagster UI starts opens the warehouse without the CLI's load: connect says the same
    with pytest.raises(WarehouseError) as opened:
        connect(target)
    assert str(opened.value) == why
    if what == "text file":
        assert target.read_text(encoding="utf-8").startswith("not a database")  # left as it was


def test_a_duckdb_file_and_a_path_yet_to_exist_load(tmp_path: Path) -> None:
    path = write_config(tmp_path, "warehouse: wh/w.duckdb\n")
    config = load_config(path)
    assert not config.warehouse_path.exists()
    connect(config.warehouse_path).close()  # creates it
    assert load_config(path).warehouse_path == config.warehouse_path


def test_the_default_warehouse_path_as_a_folder_is_named_without_a_line(tmp_path: Path) -> None:
    folder = tmp_path / "warehouse" / "wastewatch.duckdb"
    folder.mkdir(parents=True)
    path = write_config(tmp_path, "currency: USD\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == (
        f"{path}: warehouse: {folder} is a folder, not a DuckDB file: name the file in it, "
        f"e.g. {folder / 'wastewatch.duckdb'}"
    )
