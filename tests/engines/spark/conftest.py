from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import spark as spark_helper


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local Spark session for the test process (it takes seconds to start)."""
    spark_helper.require_spark()
    session = spark_helper.start(tmp_path_factory.mktemp("spark-marts"))
    yield session
    session.stop()
