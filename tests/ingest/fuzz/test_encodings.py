"""A valid export of every text format in another encoding: a UTF-8 byte order mark loads exactly as the
original; Latin-1 and UTF-16 load as the original or are rejected as not UTF-8 text, naming the file.
Never a traceback; a rejected file leaves the warehouse as it was."""

from __future__ import annotations

import pytest

from tests.helpers.fuzz import FORMATS, Workspace, ascii_only, check, reencoded

pytestmark = pytest.mark.fuzz

TEXT = [n for n, f in FORMATS.items() if f.text_layout()]


@pytest.mark.parametrize("encoding", ["utf-8-sig", "latin-1", "utf-16"])
@pytest.mark.parametrize("name", TEXT)
def test_other_encodings_load_the_same_or_are_named(ws: Workspace, name: str, encoding: str) -> None:
    if encoding == "latin-1" and ascii_only(FORMATS[name]):
        return  # the same bytes as the oracle's
    check(ws, FORMATS[name], reencoded(FORMATS[name], encoding), encoding=encoding != "utf-8-sig")
