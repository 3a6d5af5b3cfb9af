"""The property tests' workspace: one per test process, shared by the modules here (each example resets its
warehouse to a copy of the template, so the oracles, the unmutated exports' loads, are worked out once)."""

from __future__ import annotations

import pytest

from tests.helpers.fuzz import Workspace


@pytest.fixture(scope="session")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("fuzz"))
