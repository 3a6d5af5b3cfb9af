"""The ten example questions: listed with their SQL in docs/schema.md, and they run (on an empty built
warehouse and on the demo's published copy, read-only) and answer something."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipelines.report.questions import questions, render_markdown
from pipelines.transform import build_marts
from pipelines.warehouse import connect, header, sql_root
from tests.helpers.paths import REPO

SCHEMA_DOC = REPO / "docs" / "schema.md"

pytestmark = pytest.mark.e2e


def test_there_are_ten_documented_questions() -> None:
    qs = questions()
    assert len(qs) == 10
    for path in sorted((sql_root() / "reports" / "questions").glob("q*.sql")):
        meta = header(path.read_text(encoding="utf-8"))
        assert {"question", "grain", "depends_on"} <= set(meta), path.name
    md = render_markdown()
    assert md.count("```sql") == 10 and all(q.question in md for q in qs)


def _documented_questions() -> list[tuple[str, str]]:
    """(question, SQL) pairs of docs/schema.md's "Example questions" section, in order."""
    text = SCHEMA_DOC.read_text(encoding="utf-8")
    assert "\n## Example questions\n" in text
    section = text.split("\n## Example questions\n", 1)[1]
    return re.findall(r"^\d+\. \*\*(.+?)\*\*\n\n```sql\n(.*?)\n```$", section, re.MULTILINE | re.DOTALL)


def test_the_schema_reference_lists_the_ten_questions_with_their_sql() -> None:
    documented = _documented_questions()
    assert len(documented) == 10
    assert documented == [(q.question, q.sql) for q in questions()]
    assert all(sql.lstrip().lower().startswith(("select", "with")) for _, sql in documented)


def test_the_documented_sql_runs_on_a_freshly_built_warehouse(tmp_path: Path) -> None:
    con = connect(tmp_path / "wastewatch.duckdb")
    try:
        build_marts(con)
        for question, sql in _documented_questions():
            cur = con.execute(sql)
            assert cur.description, question
            cur.fetchall()
    finally:
        con.close()


def test_every_question_runs_on_the_published_demo_warehouse(demo_dir: tuple[Path, str]) -> None:
    directory, _ = demo_dir
    con = connect(directory / "warehouse" / "wastewatch.published.duckdb", read_only=True)
    try:
        answered = {}
        for q in questions():
            cur = con.execute(q.sql)
            answered[q.name] = cur.fetchall()
        # the published copy carries the schema notes for ad-hoc users (COMMENT ON, see docs/schema.md)
        commented = con.execute(
            "select count(*) from duckdb_columns() where comment is not null and table_name = 'billing_line_items'"
        ).fetchall()[0][0]
        mart = con.execute("select comment from duckdb_tables() where table_name = 'cost_hourly'").fetchall()
    finally:
        con.close()
    # the demo has waste, GPUs, untagged spend and weekly spend: those questions have answers
    for name in (
        "q01_waste_by_team_last_week",
        "q02_longest_open_findings",
        "q03_idle_gpu_instances_last_7_days",
        "q04_cost_per_gpu_hour_by_model",
        "q05_untagged_spend_last_7_days",
        "q06_month_to_date_by_team",
        "q07_weekly_spend_by_service_category",
    ):
        assert answered[name], name
    by_model = {(r[0], r[1]): r for r in answered["q04_cost_per_gpu_hour_by_model"]}
    assert {m for m, basis in by_model if basis == "bill"} == {"H100", "A100"}
    # the research cluster's hosts: priced by cost models, never counted as billed
    assert {basis for _, basis in by_model} == {"bill", "owned", "contract"}
    untagged = {r[0] for r in answered["q05_untagged_spend_last_7_days"]}
    assert "acme-scratch" in untagged
    assert commented >= 60 and mart[0][0].startswith("Grain: hour x resource_id")
