"""Finding a source's files and fingerprinting them for the ledger."""

from __future__ import annotations

import glob
import gzip
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pipelines.config import Config, Source

# what each reader kind picks up inside a folder
PATTERNS: dict[str, tuple[str, ...]] = {
    "focus": (".csv", ".csv.gz", ".parquet"),
    "nvidia_smi": (".csv", ".csv.gz", ".txt", ".txt.gz", ".log"),
}
DEFAULT_PATTERNS = (".csv", ".csv.gz", ".parquet", ".json", ".txt")


@dataclass(frozen=True)
class SourceFile:
    """One file of a source, as the ledger sees it."""

    uri: str  # absolute path (or s3://bucket/key)
    local_path: Path  # where the bytes are on this machine
    relative: str  # path relative to the source's root, for host/period patterns
    size: int
    modified_at: datetime
    etag: str | None = None

    @property
    def name(self) -> str:
        return self.local_path.name

    @property
    def compressed(self) -> bool:
        return self.local_path.name.endswith(".gz")

    def checksum(self) -> str:
        h = hashlib.sha256()
        with self.local_path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()

    def first_line(self) -> str:
        """The first line of text (decompressed); raises OSError/EOFError on unreadable files."""
        opener = gzip.open if self.compressed else open
        with opener(self.local_path, "rt", encoding="utf-8-sig", errors="replace") as f:
            return f.readline().rstrip("\r\n")


def _wanted(path: Path, suffixes: tuple[str, ...]) -> bool:
    name = path.name.lower()
    if name.startswith((".", "_")):
        return False
    return any(name.endswith(s) for s in suffixes)


def _as_file(path: Path, root: Path) -> SourceFile:
    st = path.stat()
    try:
        rel = str(path.relative_to(root))
    except ValueError:
        rel = path.name
    return SourceFile(
        uri=str(path.resolve()),
        local_path=path,
        relative=rel,
        size=st.st_size,
        modified_at=datetime.fromtimestamp(st.st_mtime, UTC).replace(tzinfo=None),
    )


def list_local(config: Config, source: Source) -> list[SourceFile]:
    """Files of a local source: a file, a folder (walked recursively) or a glob. Sorted by path."""
    location = config.source_location(source)
    suffixes = PATTERNS.get(source.kind, DEFAULT_PATTERNS)
    if any(ch in location for ch in "*?["):
        root = Path(location.split("*")[0].rsplit("/", 1)[0] or "/")
        paths = [Path(p) for p in glob.glob(location, recursive=True) if Path(p).is_file()]
        return sorted((_as_file(p, root) for p in paths), key=lambda f: f.uri)
    path = Path(location)
    if path.is_file():
        return [_as_file(path, path.parent)]
    if path.is_dir():
        found = [p for p in path.rglob("*") if p.is_file() and _wanted(p, suffixes)]
        return sorted((_as_file(p, path) for p in found), key=lambda f: f.uri)
    return []
