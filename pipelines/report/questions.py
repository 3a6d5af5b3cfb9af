"""Ten example questions for ad-hoc querying, each a SQL file in `sql/reports/questions/`.

`render_markdown()` is the "Example questions" section for docs/schema.md (pipelines/schema_docs.py can
append it); every query runs unchanged in `wastewatch sql "..."` or any DuckDB client on the published copy
(tests/report/test_questions.py runs them all on the demo warehouse).
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
        'Each runs as is in `wastewatch sql "..."` (on the published read-only copy) or any DuckDB client; '
        "relative periods are measured from the newest data, not from today (except the ack query). "
        "Source: `sql/reports/questions/`.\n",
    ]
    for i, q in enumerate(questions(), 1):
        parts.append(f"{i}. **{q.question}**\n\n```sql\n{q.sql}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render_markdown())
