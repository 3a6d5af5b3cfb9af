"""What a file's bytes are, told before a reader parses them, and any reader error as one refusal.

Every text file of a source (billing and telemetry alike) is sniffed once: a UTF-16/32 byte order mark, a
file that is not text at all (NUL bytes only, as a crashed copy leaves; a Parquet file, a ZIP archive or a
gzip stream under a text name), UTF-16 without a byte order mark, Hive's `\\x01` field separator, and NUL
bytes inside the text (refused naming the line: no text export writes one, and a value holding one is
damaged). Each refusal names what was seen and what to do (docs/billing.md, "Refused files").

`refusal` turns whatever a reader raised into the file's rejection (`RejectedFile`), so that one bad file
is one refusal and never stops the other files or sources of a run. `csv_fields` lets Python's `csv`
module read fields as long as a real export writes them (tag JSON of a few hundred KB), within a bound.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import hashlib
import io
import logging
import re
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.readers.base import duckdb_problem

# the longest CSV field our own sampling reads (header repair, short-row check): a bound on memory, far
# above the longest value real exports write (resource tags as JSON: hundreds of KB)
FIELD_LIMIT = 64 << 20
HEAD_BYTES = 64 << 10  # what the sniff reads first: enough for a header and a few lines
CHUNK = 16 << 20

_BOMS = {
    b"\xff\xfe\x00\x00": "UTF-32", b"\x00\x00\xfe\xff": "UTF-32",
    b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16",
}  # fmt: skip
# the first bytes of files that are not text, whatever their name says: (magic, what it is, what to do)
_MAGIC = (
    (b"PAR1", "a Parquet file", "name it .parquet (billing kinds read Parquet by its name)"),
    (b"PK\x03\x04", "a ZIP archive (an Excel .xlsx workbook?)", "unzip it, or export the data as CSV"),
    (
        b"\x1f\x8b",
        "gzip-compressed data (a name without .gz, or compressed twice)",
        "name it .gz, or decompress it once",
    ),
)
_HIVE = "\x01"
_PARQUET = b"PAR1"

_log = logging.getLogger(__name__)
_limit_lock = threading.Lock()
_limit_users = 0
_limit_saved = 0


@contextmanager
def csv_fields() -> Iterator[None]:
    """Python's `csv` reads fields up to FIELD_LIMIT bytes inside the block (its default, 131,072, is
    below what real exports write); the module-wide limit is put back when the last user leaves."""
    global _limit_users, _limit_saved
    with _limit_lock:
        if _limit_users == 0:
            _limit_saved = csv.field_size_limit(FIELD_LIMIT)
        _limit_users += 1
    try:
        yield
    finally:
        with _limit_lock:
            _limit_users -= 1
            if _limit_users == 0:
                csv.field_size_limit(_limit_saved)


def open_bytes(path: Path) -> IO[bytes]:
    """The file's bytes, decompressed on the fly when its name ends in .gz."""
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rb")
    return path.open("rb")


def is_binary_name(name: str) -> bool:
    """Files a reader reads as binary (Parquet), which the text sniff leaves alone."""
    return name.lower().removesuffix(".gz").endswith((".parquet", ".orc"))


def bom_problem(head: bytes) -> tuple[str, int] | None:
    for bom, name in _BOMS.items():
        if head.startswith(bom):
            return (
                f"not UTF-8 text: {name} (byte order mark {bom.hex(' ').upper()} at byte 0); save or export the file as UTF-8",
                1,
            )
    return None


def encoding_problem(path: Path, scan: bool = True) -> tuple[str, int] | None:
    """(what is wrong, file line) when the file's text is not UTF-8: a UTF-16/32 byte order mark, else
    (with `scan`) the first byte that is not UTF-8, read in a streaming pass (only after a reader failed)."""
    with open_bytes(path) as f:
        head = f.read(4)
        found = bom_problem(head)
        if found is not None or not scan:
            return found
        decoder = codecs.getincrementaldecoder("utf-8")()
        offset, lines, chunk = 0, 1, head
        while chunk:
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                at = offset + exc.start
                bad = chunk[exc.start : exc.start + 1].hex().upper()
                lines += chunk[: exc.start].count(b"\n")
                return (
                    f"not UTF-8 text at byte {at} (0x{bad}): the file is in another encoding (Windows-1252 or "
                    "Latin-1?); export it as UTF-8",
                    lines,
                )
            lines += chunk.count(b"\n")
            offset += len(chunk)
            chunk = f.read(1 << 20)
    return None


def head_problem(head: bytes, whole: bool, delimiter: str | None = None) -> tuple[str, int | None] | None:
    """What the first bytes of a text file say is wrong with it, or None. `whole`: `head` is the whole
    file. `delimiter`: the source's configured one (a `\\x01` delimiter set on purpose is not refused)."""
    if not head:
        return None
    found = bom_problem(head)
    if found is not None:
        return found
    if head.count(0) == len(head):
        size = f"all {len(head):,} bytes" if whole else f"the first {len(head):,} bytes"
        return (
            f"not text: {size} are NUL (0x00), as an interrupted copy or a full disk leaves a file; "
            "copy it again from its source",
            None,
        )
    for magic, what, remedy in _MAGIC:
        if head.startswith(magic):
            return f"not text: {what}; {remedy}", None
    nuls = head.count(0)
    if nuls * 4 >= len(head) and (head[1::2].count(0) == nuls or head[0::2].count(0) == nuls):
        return (
            "not UTF-8 text: UTF-16 without a byte order mark (every other byte is NUL); export it as UTF-8",
            1,
        )
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    if (
        _HIVE in first
        and delimiter != _HIVE
        and first.count(_HIVE) > max(first.count(","), first.count("\t"))
    ):
        return (
            "not a CSV: fields separated by \\x01 (Hive's default field delimiter: a Hive text table's "
            "file?); export the table as comma-separated text with a header line (in Hive: INSERT OVERWRITE "
            "DIRECTORY ... ROW FORMAT DELIMITED FIELDS TERMINATED BY ','; or a query engine's CSV export)",
            1,
        )
    return None


def parquet_problem(path: Path) -> str | None:
    """What is wrong with a file named .parquet before DuckDB reads it, or None: NUL bytes only (an
    interrupted copy), not Parquet at all (text, gzip, ZIP), or cut short (no footer: a cut copy or a file
    still being written). DuckDB's own words for these name no remedy ("No magic bytes found")."""
    with path.open("rb") as f:
        head = f.read(HEAD_BYTES)
        if not head:
            return None
        if head.count(0) == len(head):
            return (
                f"not a Parquet file: the first {len(head):,} bytes are NUL (0x00), as an interrupted copy or a "
                "full disk leaves a file; copy it again from its source"
            )
        if not head.startswith(_PARQUET):
            seen = next((f"{what}; {fix}" for magic, what, fix in _MAGIC if head.startswith(magic)), None)
            if seen is None:
                text = head_problem(head, whole=False) is None and b"\0" not in head
                seen = (
                    "text (a CSV named .parquet?); name it after what it holds"
                    if text
                    else "bytes of no format wastewatch knows; export the file again as Parquet"
                )
            return f"not a Parquet file (it does not start with PAR1): {seen}"
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - len(_PARQUET)))
        if size < 2 * len(_PARQUET) or f.read(len(_PARQUET)) != _PARQUET:
            return (
                f"not a whole Parquet file: its {size:,} bytes do not end with Parquet's footer (PAR1), as a cut "
                "copy or a file still being written leaves it; copy it again from its source"
            )
    return None


def nul_problem(f: IO[bytes], start: bytes = b"") -> tuple[str, int] | None:
    """The first NUL byte in the text, with its line, or None. `start`: the file's first bytes, already
    read from `f` (which then goes on after them). Lines are counted only once a NUL byte is found."""
    offset, chunk = 0, start or f.read(CHUNK)
    while chunk:
        if b"\0" in chunk:
            at = offset + chunk.find(0)
            return (
                f"a NUL byte (0x00) at byte {at:,}: text exports write none (a damaged copy, or a "
                "writer that pads values with NULs); copy the file again from its source, or delete the "
                "NUL bytes (tr -d '\\000')",
                _line_of(f, start, at),
            )
        offset += len(chunk)
        chunk = f.read(CHUNK)
    return None


def _line_of(f: IO[bytes], start: bytes, at: int) -> int:
    """The 1-based line holding byte `at` of the file `f` (whose first bytes are `start`)."""
    if at < len(start):
        return start.count(b"\n", 0, at) + 1
    f.seek(0)
    lines, offset = 1, 0
    while offset < at:
        chunk = f.read(min(CHUNK, at - offset))
        if not chunk:
            break
        lines += chunk.count(b"\n")
        offset += len(chunk)
    return lines


def text_problem(
    path: Path, delimiter: str | None = None, full: bool = True
) -> tuple[str, int | None] | None:
    """What is wrong with a text file before any reader parses it (see the module docstring): (problem,
    line or None), or None. `full`: also scan the whole text for NUL bytes (else only its first bytes).
    A damaged or cut .gz stops the sniff where it breaks: the reader's own message names the damage."""
    try:
        with open_bytes(path) as f:
            return _problem_of(f, delimiter, full)
    except (OSError, EOFError, zlib.error):
        return None


def _problem_of(f: IO[bytes], delimiter: str | None, full: bool) -> tuple[str, int | None] | None:
    """text_problem() of the text `f` reads (decompressed)."""
    head = f.read(HEAD_BYTES)
    more = f.read(1)
    found = head_problem(head, whole=not more, delimiter=delimiter)
    if found is not None:
        return found
    return nul_problem(f if full else io.BytesIO(), head + more)


class _Hashed(io.RawIOBase):
    """A file's bytes as they are read, fed to a sha256 on the way; `rewound` once anything seeks it."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw, self.digest, self.rewound = raw, hashlib.sha256(), False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.digest.update(data)
        return data

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        self.rewound = True
        return self.raw.seek(offset, whence)

    def rest(self) -> str:
        """The sha256 of the whole file: what was not read yet is read now."""
        if self.rewound:  # a NUL byte's line was counted by reading again: hash the file on its own
            self.raw.seek(0)
            self.digest, self.rewound = hashlib.sha256(), False
        for chunk in iter(lambda: self.raw.read(1 << 20), b""):
            self.digest.update(chunk)
        return self.digest.hexdigest()


def checksum_and_problem(
    path: Path, delimiter: str | None = None
) -> tuple[str, tuple[str, int | None] | None]:
    """The file's sha256 (of its bytes on disk) and text_problem()'s answer, in one read of the file: a
    telemetry file was read twice before its load, once for the ledger's checksum and once for NUL bytes."""
    with path.open("rb") as raw:
        hashed = _Hashed(raw)
        try:
            if path.name.lower().endswith(".gz"):
                with gzip.GzipFile(fileobj=hashed, mode="rb") as text:
                    found = _problem_of(text, delimiter, True)
            else:
                found = _problem_of(hashed, delimiter, True)
        except (EOFError, zlib.error, gzip.BadGzipFile):
            found = None  # a damaged or cut .gz: the reader's own message names the damage
        return hashed.rest(), found


SHOWN = 60  # characters of a long quoted value a message keeps
_LONG_QUOTED = re.compile(r"'([^'\n]{200,})'|\"([^\"\n]{200,})\"")


def shorten(message: str) -> str:
    """A rejection as one readable line: a quoted value of 200 characters or more (a 200 KB field a
    reader names) is cut to its first SHOWN characters and its length."""

    def cut(m: re.Match[str]) -> str:
        value = m.group(1) if m.group(1) is not None else m.group(2)
        return f"{value[:SHOWN]!r}... ({len(value):,} characters)"

    return _LONG_QUOTED.sub(cut, message)


def refusal(uri: str, exc: BaseException, reader: str = "") -> RejectedFile:
    """The rejection of the file whose reading raised `exc`, in one line naming the file: a RejectedFile
    as it is; a damaged gzip stream, a CSV field past FIELD_LIMIT, text in another encoding, a file that
    vanished, DuckDB's error, each said as such; anything else is named as an error of the reader (a bug to
    report: the traceback is logged at debug level, shown with -v)."""
    if isinstance(exc, RejectedFile):
        return exc
    if isinstance(exc, zlib.error) or "deflate" in str(exc).lower():
        return RejectedFile(uri, f"cannot read: the gzip stream is damaged ({exc})")
    if isinstance(exc, EOFError):
        return RejectedFile(uri, f"cannot read: the file ends early, as a cut copy does ({exc})")
    if isinstance(exc, csv.Error):
        return RejectedFile(uri, f"cannot read as CSV: {exc}")
    if isinstance(exc, UnicodeDecodeError):
        return RejectedFile(uri, f"not UTF-8 text at byte {exc.start}: export it as UTF-8")
    if isinstance(exc, MemoryError):
        return RejectedFile(
            uri, "cannot read: out of memory (a line or value far longer than any export writes?)"
        )
    if isinstance(exc, OSError):
        return RejectedFile(str(exc.filename or uri), f"cannot read: {exc.strerror or exc}")
    if isinstance(exc, duckdb.Error):
        return RejectedFile(uri, f"cannot load: {duckdb_problem(exc)}")
    _log.debug("reading %s failed", uri, exc_info=exc)
    who = f"the {reader} reader" if reader else "the reader"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return RejectedFile(
        uri,
        f"cannot read: {who} failed ({exc.__class__.__name__}{': ' + text if text else ''}); please report it",
    )
