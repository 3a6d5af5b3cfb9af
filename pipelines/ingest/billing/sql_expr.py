"""SQL over a billing file's columns, shared by the readers and the load: the `_src` CTE every staging SQL
reads, the values a statement binds, and a JSON object of the non-empty values of some columns.
"""

from __future__ import annotations

from typing import Any

from pipelines.ingest.billing.lines import Spec
from pipelines.ingest.billing.relation import Relation
from pipelines.ingest.readers.base import quote_ident, quote_literal


def src_cte(from_clause: str, row_expr: str, columns: dict[str, str]) -> str:
    """`with _src as (...)`: the file's columns as `spec.columns` names them, and `_row`, its data row."""
    select = ",\n        ".join(f"{expr} as {quote_ident(name)}" for name, expr in columns.items())
    return f"with _src as not materialized (\n    select {row_expr} as _row,\n        {select}\n    from {from_clause}\n)\n"  # noqa: S608 - identifiers only, values are bound


def file_params(rel: Relation, spec: Spec, sql: str) -> dict[str, Any]:
    """The file's bound values (its path, delimiter, ...) and the spec's that `sql` names."""
    return {k: v for k, v in {**rel.params, **spec.bind}.items() if f"${k}" in sql}


def json_nonnull(pairs: list[tuple[str, str]]) -> str:
    """A JSON object (VARCHAR) of the non-empty values of (key, SQL expression) pairs; NULL when none."""
    if not pairs:
        return "null::varchar"
    entries = ", ".join(
        f"{{'key': {quote_literal(key)}, 'value': nullif(trim_text({expr}::varchar), '')}}"
        for key, expr in pairs
    )
    return f"nullif(to_json(map_from_entries(list_filter([{entries}], lambda e: e.value is not null)))::varchar, '{{}}')"
