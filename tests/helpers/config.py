"""Writing a project's `wastewatch.yaml`."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_config(directory: Path, body: str) -> Path:
    """Write `wastewatch.yaml` into `directory` (dedented) and return its path."""
    path = directory / "wastewatch.yaml"
    path.write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")
    return path
