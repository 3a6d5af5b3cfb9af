"""The property tests' workspace: one per test module (xdist runs a module in one worker)."""

from __future__ import annotations

import pytest

from tests.helpers.fuzz import Workspace


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("fuzz"))
