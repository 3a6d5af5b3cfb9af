"""Byte-level damage to a valid export of every format: a file cut at any byte, bytes flipped anywhere.

Whatever the damage, the ingest never raises: the file is rejected with an error that names it and the
problem (and the warehouse is as it was), or it loads (a cut file at most the rows of the whole one,
and exactly what its ledger row counts). Hypothesis draws the positions (derandomised; the `ci` profile
draws many more examples than the default one, see tests/conftest.py).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.fuzz import FORMATS, Workspace, check, encode, flipped, plain, truncated

pytestmark = pytest.mark.fuzz


def _size(name: str) -> int:
    fmt = FORMATS[name]
    return len(encode(fmt, plain(fmt)))


@pytest.mark.parametrize("name", FORMATS)
@given(data=st.data())
def test_a_file_cut_at_any_byte(ws: Workspace, name: str, data: st.DataObject) -> None:
    n = _size(name)
    # the simplest draw (0) cuts the file in the middle, so the shortest run still cuts inside a record
    keep = data.draw(st.integers(0, n - 1).map(lambda k: (k + n // 2) % n), label="keep")
    check(ws, FORMATS[name], truncated(FORMATS[name], keep))


@pytest.mark.parametrize("name", FORMATS)
@given(data=st.data())
def test_bytes_flipped_anywhere(ws: Workspace, name: str, data: st.DataObject) -> None:
    n = _size(name)
    position = st.integers(0, n - 1).map(lambda k: (k + n // 2) % n)
    flips = data.draw(
        st.lists(st.tuples(position, st.integers(1, 255)), min_size=1, max_size=3), label="flips"
    )
    check(ws, FORMATS[name], flipped(FORMATS[name], flips))
