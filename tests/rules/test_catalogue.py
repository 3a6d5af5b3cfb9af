"""Invariants of the rule catalogue (Prowler's CheckID == folder, Custodian's doc examples, semgrep's lint).

Every registered rule: unique id and name, folder `<id lower>_<slug>`, kebab-case name, all docstring
headings in order, an "Example finding" that parses as a finding, a Params model that constructs with
its documented defaults and rejects unknown keys, required tables that are marts, YAML cases with a hit
and a non-hit, an empty schema-valid frame on an empty warehouse, and no Dagster anywhere in rules/.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest
import yaml
from pydantic import ValidationError

from pipelines.marts.registry import MARTS
from rules import ALL_RULES, DOC_HEADINGS, FINDING_COLUMNS, STATUSES, Rule, RuleParams, Window, get_rule
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.mart_rows import load_case_file

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "rules"
MARTS_DIR = ROOT / "sql" / "marts"
# the built-in catalogues every connection loads as temporary tables (pipelines/catalog/): reference data
# a rule may read beside its marts (the GPU rules' scheduler_names)
CATALOGUES = {p.stem for p in (ROOT / "sql" / "intermediate" / "catalog").glob("*.sql")}
CASES_DIR = ROOT / "tests" / "fixtures" / "rules"

KEBAB = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
RULE_ID = re.compile(r"[A-Z]{3,4}[0-9]{3}")
POLARS_TYPES = {
    "VARCHAR": pl.String,
    "JSON": pl.String,
    "DATE": pl.Date,
    "TIMESTAMP": pl.Datetime("us"),
    "DECIMAL(18,6)": pl.Decimal(18, 6),
}
# keys every documented example must show: what a reader needs to recognise a finding
EXAMPLE_REQUIRED = {"rule_id", "resource_id", "status", "reason", "estimated_waste", "currency"}

by_rule = pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.id)


def test_registry_is_not_empty() -> None:
    assert ALL_RULES
    assert all(isinstance(r, Rule) for r in ALL_RULES)


def test_ids_names_and_aliases_are_unique() -> None:
    keys = [k.lower() for r in ALL_RULES for k in (r.id, r.name, *r.aliases)]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    assert not dupes, f"ids, names and aliases must be unique across rules: {dupes}"


@by_rule
def test_identity(rule: Rule) -> None:
    assert RULE_ID.fullmatch(rule.id), f"{rule.id}: ids look like GPU001"
    assert KEBAB.fullmatch(rule.name), f"{rule.name!r} is not kebab-case"
    assert rule.folder == f"{rule.id.lower()}_{rule.name.replace('-', '_')}"
    assert rule.summary and "\n" not in rule.summary
    first_line = rule.doc.strip().splitlines()[0]
    assert first_line == f"{rule.id} {rule.name}: {rule.summary}", "docstring's first line and summary differ"
    for key in (rule.id, rule.id.lower(), rule.name, *rule.aliases):
        assert get_rule(key) is rule


@by_rule
def test_rule_lives_in_its_folder(rule: Rule) -> None:
    folder = RULES_DIR / rule.folder
    assert (folder / "__init__.py").is_file(), f"rules/{rule.folder}/__init__.py is missing"
    if rule.query is not None:
        assert rule.query.resolve().parent == folder.resolve(), (
            f"{rule.id}'s query is not in rules/{rule.folder}/"
        )
        assert rule.query.is_file()
    else:
        assert rule.evaluate_fn is not None, f"{rule.id} has neither a query nor an evaluate function"
        assert rule.evaluate_fn.__module__.startswith(f"rules.{rule.folder}"), (
            f"{rule.id}'s evaluate function lives in {rule.evaluate_fn.__module__}"
        )
        assert (folder / "evaluate.py").is_file()


def rule_folders() -> list[Path]:
    """Directories under rules/ that look like a rule (not private `_x`, not caches)."""
    return sorted(p for p in RULES_DIR.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def test_every_rule_folder_is_registered() -> None:
    folders = {p.name for p in rule_folders()}
    registered = {r.folder for r in ALL_RULES}
    assert folders, "no rule folders found"
    assert folders == registered, (
        f"unregistered folders: {sorted(folders - registered)}; "
        f"registered rules without a folder: {sorted(registered - folders)} (rules/_registry.py)"
    )


@by_rule
def test_docstring_has_every_heading_in_order(rule: Rule) -> None:
    lines = [line.strip() for line in rule.doc.splitlines()]
    positions = []
    for heading in DOC_HEADINGS:
        count = lines.count(heading)
        assert count == 1, f"{rule.id}: heading {heading!r} appears {count} times"
        positions.append(lines.index(heading))
    assert positions == sorted(positions), f"{rule.id}: headings out of order; expected {DOC_HEADINGS}"
    sections = rule.doc_sections()
    empty = [h for h in DOC_HEADINGS if not sections.get(h)]
    assert not empty, f"{rule.id}: empty section(s) {empty}"


@by_rule
def test_example_finding_parses_as_a_finding(rule: Rule) -> None:
    example = yaml.safe_load(rule.doc_sections()["Example finding"])
    assert isinstance(example, dict), f"{rule.id}: the example finding is not a YAML mapping"
    unknown = set(example) - set(FINDING_COLUMNS)
    assert not unknown, f"{rule.id}: example keys {sorted(unknown)} are not finding columns"
    missing = EXAMPLE_REQUIRED - set(example)
    assert not missing, f"{rule.id}: the example lacks {sorted(missing)}"
    assert example["rule_id"] == rule.id
    assert example["status"] in STATUSES
    assert isinstance(example["estimated_waste"], int | float) and example["estimated_waste"] >= 0
    if "rule_name" in example:
        assert example["rule_name"] == rule.name


@by_rule
def test_params_construct_with_defaults_and_reject_unknown_keys(rule: Rule) -> None:
    assert issubclass(rule.params, RuleParams)
    defaults = rule.params()
    assert rule.make_params() == defaults
    for name, info in rule.params.model_fields.items():
        assert not info.is_required(), f"{rule.id}.{name} has no default"
        assert info.description, f"{rule.id}.{name} has no description (rendered into docs/rules.md)"
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        rule.make_params({"no_such_threshold": 1})
    with pytest.raises(ValidationError):
        rule.params(no_such_threshold=1)
    if rule.params.model_fields:
        name = next(iter(rule.params.model_fields))
        with pytest.raises(ValidationError):  # frozen: the params a finding records cannot drift
            setattr(defaults, name, getattr(defaults, name))


@by_rule
def test_thresholds_section_documents_each_param_and_its_default(rule: Rule) -> None:
    text = rule.doc_sections()["Thresholds"]
    for name, info in rule.params.model_fields.items():
        assert re.search(rf"\b{name}\b", text), f"{rule.id}: Thresholds does not mention {name}"
        stated = re.search(rf"\b{name}\b\s*\(default\s+([^,)]+)", text)
        if stated:
            assert float(stated.group(1)) == float(info.get_default()), (
                f"{rule.id}: Thresholds says {name} defaults to {stated.group(1)}, Params says {info.get_default()}"
            )


@by_rule
def test_required_tables_are_marts(rule: Rule) -> None:
    assert rule.requires, f"{rule.id} declares no input tables"
    for table in rule.requires:
        assert table in MARTS, f"{rule.id} requires {table!r}, which is not a mart {MARTS}"
        assert (MARTS_DIR / f"{table}.sql").is_file(), f"sql/marts/{table}.sql is missing"


def tables_read(sql: str) -> set[str]:
    """Names after FROM/JOIN that are not the query's own CTEs (comments and string literals removed)."""
    sql = re.sub(r"--[^\n]*", "", sql)
    sql = re.sub(r"'(?:[^']|'')*'", "''", sql)
    ctes = set(re.findall(r"\b([a-z_][a-z0-9_]*)\s+as\s*(?:not\s+)?(?:materialized\s*)?\(", sql, flags=re.I))
    named = set(re.findall(r"\b(?:from|join)\s+([a-z_][a-z0-9_.]*)", sql, flags=re.I))
    return {n.lower() for n in named} - {c.lower() for c in ctes}


def test_tables_read_helper() -> None:
    sql = "with a as (select 1 from raw_x) select * from a join marts_y as m on true -- from comment_z"
    assert tables_read(sql) == {"raw_x", "marts_y"}
    sql = "with a as not materialized (select 1 from raw_x), b as materialized (select 1 from a) select * from b"
    assert tables_read(sql) == {"raw_x"}


@by_rule
def test_query_reads_only_its_declared_marts(rule: Rule) -> None:
    if rule.query is None:
        pytest.skip("a Polars rule; its reads are covered by the empty-warehouse run")
    read = tables_read(rule.query.read_text(encoding="utf-8")) - CATALOGUES
    assert read <= set(rule.requires), f"{rule.id} reads {sorted(read - set(rule.requires))} undeclared"
    assert set(rule.requires) <= read, (
        f"{rule.id} declares {sorted(set(rule.requires) - read)} but never reads it"
    )


@by_rule
def test_rule_has_yaml_cases_with_a_hit_and_a_non_hit(rule: Rule) -> None:
    path = CASES_DIR / f"{rule.id}.yml"
    assert path.is_file(), f"{rule.id} has no tests/fixtures/rules/{rule.id}.yml"
    doc = load_case_file(path)
    assert doc.get("rule") == rule.id
    cases = [v for k, v in doc.items() if k.startswith("test_")]
    hits = [c for c in cases if any(e.get("status") == "waste" for e in c.get("expect") or [])]
    misses = [c for c in cases if c.get("expect_none") is True]
    assert hits, f"{path.name}: no case expects a `waste` finding"
    assert misses, f"{path.name}: no `expect_none: true` case"


@pytest.fixture(scope="module")
def empty_warehouse(
    tmp_path_factory: pytest.TempPathFactory, empty_marts: Path
) -> Iterator[duckdb.DuckDBPyConnection]:
    con = open_copy(empty_marts, tmp_path_factory.mktemp("empty") / "wastewatch.duckdb")
    yield con
    con.close()


@by_rule
def test_empty_warehouse_gives_an_empty_schema_valid_frame(
    rule: Rule, empty_warehouse: duckdb.DuckDBPyConnection
) -> None:
    # the query itself, run on empty marts (a run skips it there: tests/rules/test_small_empty_marts.py)
    frame = rule.evaluate(empty_warehouse, Window.iso_week("2026-W48"), run_on_empty=True)
    assert frame.height == 0
    assert frame.columns == list(FINDING_COLUMNS)
    wrong = {
        name: (str(frame.schema[name]), kind)
        for name, kind in FINDING_COLUMNS.items()
        if frame.schema[name] != POLARS_TYPES[kind]
    }
    assert not wrong, f"{rule.id}: column types differ from FINDING_COLUMNS: {wrong}"


def dagster_imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found += [n for n in names if n == "dagster" or n.startswith(("dagster.", "dagster_"))]
    return found


def test_dagster_import_scanner() -> None:
    src = "import os\nimport dagster as dg\nfrom dagster_duckdb import DuckDBResource\nfrom .x import y\n"
    assert dagster_imports(src) == ["dagster", "dagster_duckdb"]
    assert dagster_imports("import dagsterish\nfrom polars import col\n") == []


def test_rules_never_import_dagster() -> None:
    files = sorted(RULES_DIR.rglob("*.py"))
    assert files
    offenders = {
        str(p.relative_to(ROOT)): found
        for p in files
        if (found := dagster_imports(p.read_text(encoding="utf-8")))
    }
    assert not offenders, f"rules/ must not import Dagster: {offenders}"
