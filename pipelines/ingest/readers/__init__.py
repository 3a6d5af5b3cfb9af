"""One reader per source kind; the registry (pipelines/sources/registry.py) says where each one lives."""

from __future__ import annotations

import importlib
from functools import cache

from pipelines.ingest.readers.base import Reader
from pipelines.sources.registry import source_kind


@cache
def get_reader(kind: str) -> Reader:
    """The reader instance for a registered kind, its module imported on first use."""
    module_name, _, cls = source_kind(kind).reader.partition(":")
    reader = getattr(importlib.import_module(module_name), cls)()
    assert isinstance(reader, Reader), f"{kind}: {cls} is not a Reader"
    return reader
