"""Source-format facts the marts need live in pipelines/catalog/source_formats.csv, one row per billing kind of
the registry, not as literal lists in mart SQL."""

from __future__ import annotations

from pathlib import Path

from pipelines.sources.registry import kinds_of
from pipelines.warehouse import connect, rows


def test_one_row_per_billing_kind_and_only_aws_bills_an_unused_commitment_on_its_fee(tmp_path: Path) -> None:
    con = connect(tmp_path / "w.duckdb")
    try:
        got = rows(con, "select format, unused_commitment_on_fee from source_formats order by format")
    finally:
        con.close()
    assert sorted(r["format"] for r in got) == sorted(kinds_of("billing"))
    assert {r["format"] for r in got if r["unused_commitment_on_fee"]} == {"aws_cur", "aws_cur2"}


def test_no_mart_lists_source_formats_literally() -> None:
    marts = Path(__file__).parents[2] / "sql" / "marts"
    kinds = kinds_of("billing")
    for path in marts.glob("*.sql"):
        text = path.read_text(encoding="utf-8")
        assert not any(f"'{k}'" in text for k in kinds), (
            f"{path.name} names a source format: use source_formats"
        )
