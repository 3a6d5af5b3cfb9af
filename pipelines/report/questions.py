"""Ten example questions for ad-hoc querying, each a SQL file in `sql/reports/questions/`.

`render_markdown()` is the "Example questions" section for docs/schema.md (pipelines/cli/schema_docs.py can
append it). A question about a week takes it as named parameters ($week_start, $week_end: pipelines/report/
adhoc.py), so each file runs as shipped with `wastewatch sql --file PATH --week 2026-W48`
(tests/report/test_questions.py runs them all on the demo and compares their answers with the report's).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from pipelines.warehouse import header, sql_root


@dataclass(frozen=True)
class Question:
    name: str
    question: str
    sql: str


def questions() -> list[Question]:
    out = []
    for path in sorted((sql_root() / "reports" / "questions").glob("q*.sql")):
        text = path.read_text(encoding="utf-8")
        meta = header(text)
        body = "\n".join(line for line in text.splitlines() if not re.match(r"\s*--", line)).strip()
        out.append(Question(path.stem, meta.get("question", path.stem), body))
    return out


def render_markdown() -> str:
    parts = [
        "## Example questions\n",
        "Each file of `sql/reports/questions/` runs as shipped on the published read-only copy, e.g. "
        "`wastewatch sql --file sql/reports/questions/q01_waste_by_team.sql --week 2026-W48`. A question "
        "about a week takes it as named parameters: `$week_start` (its Monday) and `$week_end` (the Monday "
        "after, exclusive), which `--week` (or `--param week=...`) binds; in another DuckDB client, bind them "
        "yourself. Its answers are the report's figures for that week.\n",
    ]
    for i, q in enumerate(questions(), 1):
        parts.append(f"{i}. **{q.question}**\n\n```sql\n{q.sql}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render_markdown())
