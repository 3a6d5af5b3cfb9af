"""Finding a source's files (local paths or s3:// prefixes) and fingerprinting them for the ledger."""

from __future__ import annotations

import glob
import gzip
import hashlib
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.config import Config, Source
from pipelines.net import s3 as s3mod
from pipelines.sources.registry import source_kind


@dataclass(frozen=True)
class SourceFile:
    """One file of a source, as the ledger sees it."""

    uri: str  # absolute path (or s3://bucket/key)
    local_path: Path  # where the bytes are on this machine
    relative: str  # path relative to the source's root, for host/period patterns
    size: int
    modified_at: datetime
    etag: str | None = None
    remote: s3mod.S3Object | None = None  # for s3:// files: the object; local_path is its place in the cache

    @property
    def is_remote(self) -> bool:
        return self.remote is not None

    @property
    def fetched(self) -> bool:
        return self.local_path.is_file()

    @property
    def name(self) -> str:
        return self.local_path.name

    @property
    def compressed(self) -> bool:
        """Whether the file is gzip by its name, in any case (`.csv.gz`, `.CSV.GZ`: the listing matches
        names ignoring case too)."""
        return self.local_path.name.lower().endswith(".gz")

    def checksum(self) -> str:
        """The sha256 of the file's bytes, hashed once per listing (the ledger and the load both ask)."""
        digest = self.__dict__.get("_sha256")
        if digest is None:
            h = hashlib.sha256()
            with self.local_path.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            digest = h.hexdigest()
            object.__setattr__(self, "_sha256", digest)
        return str(digest)

    def knows_checksum(self, digest: str) -> None:
        """Keep the sha256 a read made for another purpose (the text sniff's), so checksum() reads nothing."""
        object.__setattr__(self, "_sha256", digest)

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


def _listable(path: Path) -> bool:
    """Whether a file no reader claims is worth a word: hidden and marker files (`.DS_Store`,
    `_SUCCESS`) are not, and neither are the checksums and manifests that exports write beside data."""
    name = path.name.lower()
    return not name.startswith((".", "_")) and not name.endswith((".json", ".md5", ".crc", ".sha256"))


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


def unclaimed_reason(name: str, kind: str) -> str:
    """Why a file in a source folder is not read: no reader of the source's kind claims its name."""
    patterns = ", ".join(p for p in source_kind(kind).patterns if p.startswith("."))
    low = name.lower()
    if low.endswith(".gz"):
        what = "a gzip file whose name does not say what it holds (name it .csv.gz)"
    elif low.endswith((".zip", ".tar", ".tgz", ".7z")):
        what = "an archive (unpack it into the folder)"
    elif low.endswith((".xlsx", ".xls", ".xlsb", ".ods")):
        what = "a spreadsheet (export it as CSV)"
    else:
        what = "not a file type the reader knows"
    return f"{what}; kind {kind} reads {patterns}"


def list_files(
    config: Config, source: Source, s3: Any = None, skipped: list[tuple[str, str]] | None = None
) -> list[SourceFile]:
    """Files of a source: local (see list_local) or every wanted object under an s3:// prefix. Files in
    the folder that the kind does not read are appended to `skipped` as (uri, why) when it is given.

    S3 files are not downloaded here: their `local_path` is where `fetch` puts them in the cache.
    """
    if not source.is_s3:
        return list_local(config, source, skipped)
    suffixes = source_kind(source.kind).patterns
    cache = source_cache(config, source)
    _, prefix = s3mod.split_uri(source.uri)
    out = []
    for obj in s3mod.list_objects(s3, source.uri):
        if not _wanted(Path(obj.key), suffixes):
            if skipped is not None and _listable(Path(obj.key)):
                skipped.append((obj.uri, unclaimed_reason(Path(obj.key).name, source.kind)))
            continue
        rel = obj.key[len(prefix) :].lstrip("/") if obj.key.startswith(prefix) else obj.key
        out.append(
            SourceFile(
                uri=obj.uri,
                local_path=cache / obj.bucket / obj.key,
                relative=rel or Path(obj.key).name,
                size=obj.size,
                modified_at=obj.last_modified,
                etag=obj.etag,
                remote=obj,
            )
        )
    return out


def source_cache(config: Config, source: Source) -> Path:
    """Where a source's downloaded objects are cached during a run."""
    return config.cache_path / source.name


def clean_cache(folder: Path) -> None:
    """Delete what a run downloaded or decompressed into a source's cache folder."""
    shutil.rmtree(folder, ignore_errors=True)


def fetch(file: SourceFile, s3: Any) -> Path:
    """Make sure the file's bytes are on this machine (downloads an s3:// object once); its local path."""
    if file.remote is not None and not file.local_path.is_file():
        s3mod.download(s3, file.remote, file.local_path)
    return file.local_path


def list_local(
    config: Config, source: Source, skipped: list[tuple[str, str]] | None = None
) -> list[SourceFile]:
    """Files of a local source: a file, a folder (walked recursively) or a glob. Sorted by path. Files of
    a folder that the kind does not read are appended to `skipped` as (uri, why) when it is given."""
    location = config.source_location(source)
    suffixes = source_kind(source.kind).patterns
    if any(ch in location for ch in "*?["):
        root = config.source_root(source)
        paths = [Path(p) for p in glob.glob(location, recursive=True) if Path(p).is_file()]
        return sorted((_as_file(p, root) for p in paths), key=lambda f: f.uri)
    path = Path(location)
    if path.is_file():
        return [_as_file(path, path.parent)]
    if path.is_dir():
        every = sorted(p for p in path.rglob("*") if p.is_file())
        found = [p for p in every if _wanted(p, suffixes)]
        if skipped is not None:
            for p in every:
                if _wanted(p, suffixes):
                    continue
                if _listable(p):
                    skipped.append((str(p.resolve()), unclaimed_reason(p.name, source.kind)))
                elif p.name.lower().endswith(".json"):
                    # a side file (a manifest) is not worth a word, Google's legacy billing export is
                    from pipelines.ingest.billing.foreign import legacy_google_json

                    legacy = legacy_google_json(p)
                    if legacy is not None:
                        skipped.append((str(p.resolve()), f"{legacy}; kind {source.kind} reads no .json"))
        return sorted((_as_file(p, path) for p in found), key=lambda f: f.uri)
    return []
