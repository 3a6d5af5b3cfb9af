"""Where things are: the repository, the committed real-format fixtures, and copying one into a project."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
FOCUS_SAMPLE = FIXTURES / "billing" / "focus_sample_1.0.csv"
H200 = FIXTURES / "telemetry" / "h200"


def copy_into(src: Path, directory: Path, name: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    dst = directory / (name or src.name)
    shutil.copyfile(src, dst)
    return dst


def put_back(pristine: Path, place: Path) -> None:
    """A module's project as its set-up left it, copied back to `place` from `pristine` (file times and
    symlinks kept), whatever the last test did there: at the place it was ingested, as the ledger records
    absolute uris and a copy elsewhere would be a moved project."""
    shutil.rmtree(place, ignore_errors=True)
    shutil.copytree(pristine, place, symlinks=True)
