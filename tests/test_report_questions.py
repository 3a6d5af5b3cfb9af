"""The ten example questions run on the demo warehouse, read-only, and answer something."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.report.questions import questions, render_markdown
from pipelines.warehouse import connect, header, sql_root

pytestmark = pytest.mark.e2e


def test_there_are_ten_documented_questions() -> None:
    qs = questions()
    assert len(qs) == 10
    for path in sorted((sql_root() / "reports" / "questions").glob("q*.sql")):
        meta = header(path.read_text(encoding="utf-8"))
        assert {"question", "grain", "depends_on"} <= set(meta), path.name
    md = render_markdown()
    assert md.count("```sql") == 10 and all(q.question in md for q in qs)


def test_every_question_runs_on_the_published_demo_warehouse(demo_dir: tuple[Path, str]) -> None:
    directory, _ = demo_dir
    con = connect(directory / "warehouse" / "wastewatch.published.duckdb", read_only=True)
    try:
        answered = {}
        for q in questions():
            cur = con.execute(q.sql)
            answered[q.name] = cur.fetchall()
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
    by_model = {r[0]: r for r in answered["q04_cost_per_gpu_hour_by_model"]}
    assert set(by_model) == {"H100", "A100"}
    untagged = {r[0] for r in answered["q05_untagged_spend_last_7_days"]}
    assert "acme-scratch" in untagged
