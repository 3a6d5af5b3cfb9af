"""A 200 KB value in any field of a valid export of every delimited format (past Python's csv default
field limit, 131,072, which once aborted the whole billing step; within DuckDB's line limit).

What must hold (as for every mutation, tests/helpers/fuzz.py `check`): the ingest never raises, the other
sources are unchanged, and the file either loads consistently or is rejected in one line naming it;
and that line never carries the 200 KB value.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.fuzz import FORMATS, Mutated, Workspace, check, encode, join_csv, plain, split_csv

pytestmark = pytest.mark.fuzz

DELIMITED = [n for n, f in FORMATS.items() if f.layout == "csv"]
LONG = 200_000


def long_field(name: str, record: int, column: int) -> Mutated:
    fmt = FORMATS[name]
    pre, header, rows = split_csv(fmt, plain(fmt).decode("utf-8"))
    row = [r for r in rows if r][record % len([r for r in rows if r])]
    i = column % len(row)
    row[i] = (row[i] or "x") * (LONG // max(1, len(row[i] or "x")) + 1)
    return Mutated({fmt.file: encode(fmt, join_csv(fmt, pre, header, rows).encode("utf-8"))}, "any")


@pytest.mark.parametrize("name", DELIMITED)
@given(data=st.data())
def test_a_200_kb_field_anywhere(ws: Workspace, name: str, data: st.DataObject) -> None:
    record = data.draw(st.integers(0, 1000), label="record")
    column = data.draw(st.integers(0, 1000), label="column")
    out = check(ws, FORMATS[name], long_field(name, record, column))
    for o in out.report.outcomes:
        assert o.error is None or len(o.error) < 2_000, o.error[:300]
        assert "field larger than field limit" not in (o.error or "")
