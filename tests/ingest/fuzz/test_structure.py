"""Structural changes to a valid export of every format: columns reordered, records written twice, the
whole file delivered twice (other encodings: test_encodings.py).

What must hold: a column reordering (header and rows alike; JSON keys; Parquet columns) loads exactly as
the original; a repeated billing line is rejected as a duplicate line item where the format has line
item ids, else it is one more charge; a repeated sample or job record is loaded at most once more; a
second copy of a billing file is never counted twice. Never a traceback; a rejected file leaves the warehouse as it was.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.fuzz import (
    BILLING_FORMATS,
    FORMATS,
    Mutated,
    Workspace,
    check,
    columns_shuffled,
    encode,
    file_duplicated,
    lines_duplicated,
    plain,
    width,
    without_fz_ledger,
)

pytestmark = pytest.mark.fuzz

WITH_COLUMNS = [n for n, f in FORMATS.items() if f.layout in ("csv", "json", "ndjson", "binary")]
WITH_RECORDS = [n for n, f in FORMATS.items() if f.layout in ("csv", "lines", "ndjson")]


@pytest.mark.parametrize("name", WITH_COLUMNS)
@given(data=st.data())
def test_columns_in_any_order_load_the_same(ws: Workspace, name: str, data: st.DataObject) -> None:
    fmt = FORMATS[name]
    n = width(fmt)
    # the simplest draw reverses the columns: the shortest run still moves every one of them
    order = data.draw(st.permutations(list(reversed(range(n)))), label="order")
    seed = data.draw(st.integers(0, 2**16), label="json key seed")
    check(ws, fmt, columns_shuffled(fmt, order, seed))


@pytest.mark.parametrize("name", WITH_RECORDS)
@given(data=st.data())
def test_records_written_twice(ws: Workspace, name: str, data: st.DataObject) -> None:
    picks = data.draw(st.lists(st.integers(0, 1000), min_size=1, max_size=3), label="records")
    check(ws, FORMATS[name], lines_duplicated(FORMATS[name], picks))


@pytest.mark.parametrize("name", BILLING_FORMATS)
def test_a_billing_file_delivered_again_later_is_not_counted_twice(ws: Workspace, name: str) -> None:
    fmt = FORMATS[name]
    oracle = ws.oracle(fmt)
    copy = file_duplicated(fmt)
    ws.reset(fmt)
    folder = ws.fz_dir(fmt)
    (folder / fmt.file).write_bytes(encode(fmt, plain(fmt)))
    ws.ingest()
    for file, data in copy.files.items():
        (folder / file).write_bytes(data)
    out = ws.ingest("billing_line_items")
    statuses = sorted(o.status for o in out.report.outcomes if o.source == "fz")
    assert statuses == ["duplicate", "unchanged"], out.report.summary()
    assert without_fz_ledger(out.tables) == without_fz_ledger(oracle.tables)
    assert (out.landed, out.landed_billed) == (oracle.landed, oracle.landed_billed)


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_file_delivered_twice_in_one_run(ws: Workspace, name: str) -> None:
    """Billing: the copy is recorded `duplicate`, the totals are the original's. Telemetry, jobs and hosts
    keep their own semantics (two files may hold the same samples): both load, nothing else moves."""
    fmt = FORMATS[name]
    m = file_duplicated(fmt)
    if fmt.billing:
        out = ws.run(fmt, m.files)
        oracle = ws.oracle(fmt)
        assert sorted(o.status for o in out.report.outcomes if o.source == "fz") == ["duplicate", "loaded"]
        assert without_fz_ledger(out.tables) == without_fz_ledger(oracle.tables)
        assert (out.landed, out.landed_billed) == (oracle.landed, oracle.landed_billed)
    else:
        out = check(ws, fmt, Mutated(m.files, "any"))
        assert all(o.status == "loaded" for o in out.report.outcomes if o.source == "fz")
