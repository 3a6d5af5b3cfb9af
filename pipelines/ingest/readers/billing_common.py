"""What the billing readers share.

- **Deliveries**, the unit of replacement: every file of a billing period that one manifest (CUR 2.0
  execution, legacy CUR assembly, Azure export run) lists, or the files of a `BILLING_PERIOD=` folder, or
  a single file when the export has no layout. The ingest loop replaces a delivery's period (or file) in
  one transaction; older versions' files are `superseded`, never read.
- **Fast relations**: CSV (delimiter sniffed from the header, UTF-8 BOM, literal NULLs, .gz decompressed
  in parallel with ISA-L into the run's cache), Parquet (row numbers from the file) and NDJSON.
- **One pass**: the staging SQL casts strictly, so a bad value fails the insert; only then does a slow
  diagnosis find the first bad data row and column for the message (the happy path never pays for it).
- **Tags** are normalised once per distinct tag set (a few thousand per bill), not per line.
- **Reconciliation**: rows and billed/effective sums computed from the file's own columns must equal
  what landed, or the file is rejected and the transaction rolls back.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import IO, Any

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.readers.base import (
    DeliveryReader,
    LoadContext,
    LoadResult,
    duckdb_problem,
    quote_ident,
    quote_literal,
)
from pipelines.sources.options import BillingOptions
from pipelines.warehouse import one, rows, sql_text, stored_in

NULL_STRINGS = ("NULL", "null", "")
# CSV files above this size (uncompressed) get no x_source_row: numbering rows serialises the scan and
# materialises the file (a 1 M-line, 100 MB FOCUS file loaded in 7.1 s numbered, 4.0 s not)
ROW_NUMBER_LIMIT = 32 << 20

# ---------------------------------------------------------------------------------------------------
# deliveries


@dataclass
class Delivery:
    """Files that together replace one unit: a (source, billing period), or one file."""

    key: str  # "period:YYYY-MM" or "file:<uri>"
    period: str | None
    files: list[SourceFile]
    manifest: SourceFile | None = None
    version: str | None = None  # assemblyId / executionId / export run
    problem: str | None = None  # why the delivery cannot be loaded (e.g. a listed file is missing)
    superseded: list[SourceFile] = field(default_factory=list)


_PERIOD_DIR = re.compile(r"^BILLING_PERIOD=(\d{4})-(\d{2})$", re.IGNORECASE)
_RANGE_DIR = re.compile(r"^(\d{4})(\d{2})(\d{2})-(\d{4})(\d{2})(\d{2})$")
_YEAR_DIR = re.compile(r"^year=(\d{4})$", re.IGNORECASE)
_MONTH_DIR = re.compile(r"^month=(\d{1,2})$", re.IGNORECASE)


def is_manifest(f: SourceFile) -> bool:
    return f.local_path.name.lower().endswith("manifest.json") or PurePosixPath(f.relative).name.lower() == (
        "manifest.json"
    )


def period_of_path(relative: str) -> tuple[str, int] | None:
    """(YYYY-MM, index of the period folder) named by a path, or None.

    `BILLING_PERIOD=2024-11` (CUR 2.0, AWS FOCUS), `20241101-20241201` (legacy CUR, Azure exports),
    `year=2024/month=1` (legacy CUR for Athena).
    """
    parts = PurePosixPath(relative).parts[:-1]
    for i, part in enumerate(parts):
        m = _PERIOD_DIR.match(part)
        if m:
            return f"{m.group(1)}-{m.group(2)}", i
        m = _RANGE_DIR.match(part)
        if m:
            return f"{m.group(1)}-{m.group(2)}", i
        m = _YEAR_DIR.match(part)
        if m and i + 1 < len(parts):
            mm = _MONTH_DIR.match(parts[i + 1])
            if mm:
                return f"{m.group(1)}-{int(mm.group(1)):02d}", i + 1
    return None


@dataclass
class _Manifest:
    file: SourceFile
    period: str | None
    version: str | None
    entries: list[str]
    depth: int


def _parse_manifest(f: SourceFile, text: str) -> _Manifest:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RejectedFile(f.uri, f"manifest is not valid JSON: {exc.msg}", line=exc.lineno) from None
    if not isinstance(doc, dict):
        raise RejectedFile(f.uri, "manifest is not a JSON object")
    entries: list[str] = []
    if isinstance(doc.get("dataFiles"), list):  # CUR 2.0 / Data Exports
        entries = [str(e) for e in doc["dataFiles"]]
    elif isinstance(doc.get("reportKeys"), list):  # legacy CUR
        entries = [str(e) for e in doc["reportKeys"]]
    elif isinstance(doc.get("blobs"), list):  # Azure Cost Management export
        entries = [str(b.get("blobName", "")) for b in doc["blobs"] if isinstance(b, dict)]
    else:
        raise RejectedFile(f.uri, "manifest lists no data files (expected dataFiles, reportKeys or blobs)")
    version = doc.get("executionId") or doc.get("assemblyId")
    run = doc.get("runInfo")
    if not version and isinstance(run, dict):
        version = run.get("runId")
    period = None
    bp = doc.get("billingPeriod")
    if isinstance(bp, dict) and bp.get("start"):
        digits = re.sub(r"\D", "", str(bp["start"]))
        if len(digits) >= 6:
            period = f"{digits[:4]}-{digits[4:6]}"
    if period is None:
        found = period_of_path(f.relative)
        period = found[0] if found else None
    if period is None:
        for e in entries:
            found = period_of_path(e.split("://", 1)[-1])
            if found:
                period = found[0]
                break
    if not version:
        version = "manifest:" + f.relative
    return _Manifest(f, period, str(version), entries, len(PurePosixPath(f.relative).parts))


def _resolve(entry: str, data: list[SourceFile]) -> SourceFile | None:
    """The listed data file a manifest entry names (matched on the longest common path suffix)."""
    path = entry.split("://", 1)[-1].lstrip("/")
    parts = PurePosixPath(path).parts
    best: tuple[int, SourceFile] | None = None
    for f in data:
        fparts = PurePosixPath(f.uri.split("://", 1)[-1]).parts
        n = 0
        while n < min(len(parts), len(fparts)) and parts[-1 - n] == fparts[-1 - n]:
            n += 1
        if n and (best is None or n > best[0]):
            best = (n, f)
    if best is None:
        return None
    # the file name and, when the entry has one, its folder must match
    needed = min(2, len(parts))
    return best[1] if best[0] >= needed else None


def plan_deliveries(
    files: list[SourceFile], read_text: Callable[[SourceFile], str], options: BillingOptions
) -> tuple[list[Delivery], list[str]]:
    """Group a billing source's files into deliveries; notes say what was skipped and why."""
    notes: list[str] = []
    manifests_files = [f for f in files if is_manifest(f)]
    data = [f for f in files if not is_manifest(f)]
    if options.manifest == "ignore":
        manifests_files = []
    manifests: list[_Manifest] = []
    bad: list[Delivery] = []
    for mf in manifests_files:
        try:
            manifests.append(_parse_manifest(mf, read_text(mf)))
        except RejectedFile as exc:
            bad.append(Delivery(key=f"file:{mf.uri}", period=None, files=[], manifest=mf, problem=str(exc)))
        except (OSError, UnicodeDecodeError) as exc:
            bad.append(
                Delivery(key=f"file:{mf.uri}", period=None, files=[], manifest=mf, problem=f"{mf.uri}: {exc}")
            )
    by_period: dict[str, list[_Manifest]] = {}
    for m in manifests:
        if m.period is None:
            notes.append(f"{m.file.uri}: manifest names no billing period; ignored")
            continue
        by_period.setdefault(m.period, []).append(m)

    deliveries: list[Delivery] = list(bad)
    claimed: set[str] = set()
    for period, ms in sorted(by_period.items()):
        # the month-level pointer (shallowest) wins over copies inside version folders; then the newest
        current = sorted(ms, key=lambda m: (m.depth, -m.file.modified_at.timestamp(), m.file.uri))[0]
        resolved: list[SourceFile] = []
        missing: list[str] = []
        for e in current.entries:
            f = _resolve(e, data)
            if f is None:
                missing.append(e)
            elif f.uri not in {r.uri for r in resolved}:
                resolved.append(f)
        problem = None
        if missing:
            problem = (
                f"{current.file.uri}: the manifest lists {len(missing)} file(s) that are not in the source "
                f"(a delivery still being written, or files deleted): {', '.join(missing[:3])}"
                + (", ..." if len(missing) > 3 else "")
            )
        claimed.update(f.uri for f in resolved)
        claimed.update(m.file.uri for m in ms)
        # everything else under this period's folders belongs to older (or unfinished) versions
        superseded = [
            f
            for f in data
            if f.uri not in claimed and (p := period_of_path(f.relative)) is not None and p[0] == period
        ]
        claimed.update(f.uri for f in superseded)
        deliveries.append(
            Delivery(
                key=f"period:{period}",
                period=period,
                files=sorted(resolved, key=lambda f: f.uri),
                manifest=current.file,
                version=current.version,
                problem=problem,
                superseded=superseded,
            )
        )

    # period folders without a manifest
    folders: dict[str, list[SourceFile]] = {}
    loose: list[SourceFile] = []
    for f in data:
        if f.uri in claimed:
            continue
        found = period_of_path(f.relative)
        if found is None:
            loose.append(f)
        else:
            folders.setdefault(found[0], []).append(f)
    for period, fs in sorted(folders.items()):
        if options.manifest == "required":
            notes.append(
                f"billing period {period}: {len(fs)} file(s) but no manifest yet (options.manifest: required); "
                "not read"
            )
            continue
        current, older = _latest_version(fs)
        deliveries.append(
            Delivery(key=f"period:{period}", period=period, files=current, version=None, superseded=older)
        )
    for f in loose:
        deliveries.append(Delivery(key=f"file:{f.uri}", period=None, files=[f]))
    return deliveries, notes


def _latest_version(fs: list[SourceFile]) -> tuple[list[SourceFile], list[SourceFile]]:
    """Files of one period folder: when they sit in several version sub-folders (assemblies, runs),
    only the newest sub-folder's files are current."""
    groups: dict[str, list[SourceFile]] = {}
    for f in fs:
        found = period_of_path(f.relative)
        assert found is not None
        parts = PurePosixPath(f.relative).parts
        sub = parts[found[1] + 1] if len(parts) > found[1] + 2 else ""
        groups.setdefault(sub, []).append(f)
    if len(groups) <= 1 or "" in groups:
        return sorted(fs, key=lambda f: f.uri), []
    newest = max(groups, key=lambda g: (max(f.modified_at for f in groups[g]), g))
    older = [f for g, gfs in groups.items() if g != newest for f in gfs]
    return sorted(groups[newest], key=lambda f: f.uri), older


# ---------------------------------------------------------------------------------------------------
# preparing files: parallel gunzip with ISA-L


def _gz() -> Any:
    """ISA-L's gzip module (python-isal, a dependency), or the standard library's when it is missing."""
    try:
        from isal import igzip
    except ImportError:  # pragma: no cover - isal is a dependency; plain zlib still works
        import gzip as igzip  # type: ignore[no-redef]
    return igzip


def _gunzip(src: Path, dst: Path) -> None:
    gz = _gz()
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".part")
    try:
        with gz.open(src, "rb") as fin, tmp.open("wb") as fout:
            shutil.copyfileobj(fin, fout, 16 << 20)  # larger chunks: 2.6 -> 1.8 s for 838 MB
        tmp.replace(dst)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


_NO_LIMIT = 1 << 60  # cgroup v1 writes "no limit" as 2^63 rounded down to a page


def memory_room(proc: Path = Path("/proc"), cgroups: Path = Path("/sys/fs/cgroup")) -> int:
    """Bytes of memory this process may still fill: the machine's MemAvailable, capped by the tightest
    (limit - usage) of its memory cgroup and that cgroup's ancestors (v1, v2 or hybrid). 0 (keep parts
    on disk) when Linux's /proc or the cgroup files do not say."""
    try:
        meminfo = (proc / "meminfo").read_text()
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return 0
    found = re.search(r"^MemAvailable:\s+(\d+) kB", meminfo, re.MULTILINE)
    if not found:
        return 0
    room = int(found.group(1)) * 1024
    # "4:memory:/path" names the v1 memory controller's cgroup (hybrid systems too); "0::/path" the v2 one
    v1 = next((ln.split(":", 2)[2] for ln in lines if "memory" in ln.split(":", 2)[1].split(",")), None)
    v2 = next((ln.split(":", 2)[2] for ln in lines if ln.startswith("0::")), None)
    if v1 is not None:
        base, limit_file, usage_file = cgroups / "memory", "memory.limit_in_bytes", "memory.usage_in_bytes"
    elif v2 is not None:
        base, limit_file, usage_file = cgroups, "memory.max", "memory.current"
    else:
        return 0
    rel = (v1 if v1 is not None else v2 or "").strip().lstrip("/")
    folder = base / rel
    if not folder.is_dir():  # a cgroup namespace shows the process's own cgroup as the root
        folder = base
    if not base.is_dir():
        return 0
    try:
        while True:
            if (folder / limit_file).is_file():
                limit = (folder / limit_file).read_text().strip()
                if limit != "max" and int(limit) < _NO_LIMIT:
                    room = min(room, int(limit) - int((folder / usage_file).read_text()))
            if folder == base or base not in folder.parents:
                break
            folder = folder.parent
    except (OSError, ValueError):
        return 0
    return max(room, 0)


def can_inflate_in_memory() -> bool:
    """Linux's anonymous memory files (memfd), which DuckDB and Python open again by /proc/self/fd/N."""
    return hasattr(os, "memfd_create") and Path("/proc/self/fd").is_dir()


def _gunzip_to_memory(src: Path, name: str, cap: int, spill: Path) -> tuple[Path, int | None]:
    """Inflate `src` into an anonymous memory file: (its /proc/self/fd path, its descriptor). Past `cap`
    bytes (the gzip trailer gives the size modulo 4 GiB only) the text goes on to `spill` on disk instead:
    (spill, None). The memory file needs no cleaning up after a crash: it ends with the process."""
    try:
        fd = os.memfd_create(name, os.MFD_CLOEXEC)
    except OSError:  # not allowed here (a seccomp sandbox), or out of descriptors: disk then
        _gunzip(src, spill)
        return spill, None
    tmp = spill.with_name(spill.name + ".part")
    try:
        with _gz().open(src, "rb") as fin:
            written = 0
            with open(fd, "wb", closefd=False) as memory:
                while chunk := fin.read(16 << 20):
                    memory.write(chunk)
                    written += len(chunk)
                    if written > cap:
                        break
                else:
                    return Path(f"/proc/self/fd/{fd}"), fd
            # larger than the estimate: what is in memory goes to disk, the rest after it
            spill.parent.mkdir(parents=True, exist_ok=True)
            with open(fd, "rb", closefd=False) as memory, tmp.open("wb") as fout:
                memory.seek(0)
                shutil.copyfileobj(memory, fout, 16 << 20)
                shutil.copyfileobj(fin, fout, 16 << 20)
        tmp.replace(spill)
    except BaseException:
        tmp.unlink(missing_ok=True)
        os.close(fd)
        raise
    os.close(fd)
    return spill, None


class Prepared:
    """A delivery's .gz text files (CSV, NDJSON), decompressed with ISA-L in the background, in load order.

    Files are probed from their .gz (DuckDB inflates only the sample it sniffs), so the first load can start
    as soon as its file is inflated, and the next files inflate while DuckDB loads: decompression overlaps
    the loads instead of preceding them all. Files are handed to the inflating threads strictly in load
    order and at most `ahead` at a time: a part that inflated holds its place until `done(uri)` frees
    it, a part that could not be inflated gives its place up at once, and each freed place goes to the
    next part. So at most `ahead` inflated parts are kept (a month of 10 CUR parts used to need all ~8 GB
    of its CSV on disk before the first insert). `get(uri)` waits for a part (its path, or why it could
    not be decompressed: a truncated or damaged gzip); `close()` stops and cleans up, and never waits for
    more than the parts being inflated at that moment.

    A part inflates into memory (a Linux memfd, read by its /proc/self/fd path) when `ahead` parts of its
    size take at most half the memory available (`room()`, checked as it starts); else into `workdir`.
    Writing 838 MB of CSV to an ext4 file cost 0.75-2.0 s of system time, into memory 0.35-0.55 s.
    `in_memory=False` keeps every part on disk.
    """

    def __init__(
        self,
        files: list[SourceFile],
        workdir: Path,
        threads: int = 2,
        ahead: int = 2,
        in_memory: bool | None = None,
        room: Callable[[], int] = memory_room,
    ) -> None:
        self._workdir = workdir
        self._todo = [f for f in files if f.local_path.name.lower().endswith(".gz")]
        self._cond = threading.Condition()
        self._futures: dict[str, Future[Path | Exception]] = {}
        self._paths: dict[str, Path] = {}  # inflated and not yet done: each holds a place
        self._fds: dict[str, int] = {}  # the memory files among them
        self._next = 0
        self._closed = False
        self._ahead = ahead = max(1, ahead)
        self._in_memory = can_inflate_in_memory() if in_memory is None else in_memory
        self._room = room
        self._pool = ThreadPoolExecutor(
            max(1, min(threads, ahead, len(self._todo) or 1)), thread_name_prefix="gunzip"
        )
        with self._cond:
            for _ in range(ahead):
                self._submit_next()

    def _submit_next(self) -> None:
        """Hand the next part to the pool (called with the condition held)."""
        if self._closed or self._next >= len(self._todo):
            return
        f = self._todo[self._next]
        self._next += 1
        self._futures[f.uri] = self._pool.submit(self._work, f)
        self._cond.notify_all()

    def _work(self, f: SourceFile) -> Path | Exception:
        name = hashlib.sha1(f.uri.encode()).hexdigest()[:16] + "_" + f.local_path.name[: -len(".gz")]
        dst = self._workdir / name
        fd = None
        try:
            if self._closed:
                return RuntimeError("stopped")
            cap = self._room() // 2 // self._ahead if self._in_memory else 0
            if cap and text_size(f.local_path) <= cap:
                dst, fd = _gunzip_to_memory(f.local_path, name, cap, dst)
            else:
                _gunzip(f.local_path, dst)
        except Exception as exc:  # OSError, EOFError, or ISA-L's own IsalError (a damaged deflate block)
            with self._cond:
                self._submit_next()  # a part that failed holds no place
            return exc
        with self._cond:
            if not self._closed:
                self._paths[f.uri] = dst
                if fd is not None:
                    self._fds[f.uri] = fd
                return dst
        _release(dst, fd)
        return RuntimeError("stopped")

    def get(self, uri: str, timeout: float | None = None) -> Path | Exception | None:
        """The decompressed copy of `uri` (waiting for it), the error that stopped it, or None (not .gz).
        Raises TimeoutError when `timeout` passes first (the part is not even being inflated yet when
        the parts before it still hold their places)."""
        if not any(f.uri == uri for f in self._todo):
            return None
        with self._cond:
            if not self._cond.wait_for(lambda: uri in self._futures or self._closed, timeout):
                raise TimeoutError(f"{uri}: not yet inflating")
            future = self._futures.get(uri)
        if future is None:
            return RuntimeError("stopped")
        return future.result(timeout)

    def in_memory(self) -> int:
        """How many inflated parts are held in memory now."""
        with self._cond:
            return len(self._fds)

    def done(self, uri: str) -> None:
        """`uri` is loaded: delete its copy and let the next part inflate in its place."""
        with self._cond:
            path = self._paths.pop(uri, None)
            fd = self._fds.pop(uri, None)
            if path is not None:
                self._submit_next()
        if path is not None:
            _release(path, fd)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            for future in self._futures.values():
                future.cancel()  # not started yet: never will be
            self._cond.notify_all()
        self._pool.shutdown(wait=True)  # parts being inflated finish, see `_closed` and delete themselves
        with self._cond:
            held = [(path, self._fds.get(uri)) for uri, path in self._paths.items()]
            self._paths, self._fds = {}, {}
        for path, fd in held:
            _release(path, fd)


def _release(path: Path, fd: int | None) -> None:
    """Free an inflated part: close its memory file, or delete it from disk."""
    if fd is not None:
        os.close(fd)
    else:
        path.unlink(missing_ok=True)


def gzip_problem(path: Path) -> Exception | None:
    """Read a .gz to its end (nowhere): the error when it is damaged (truncated), else None."""
    try:
        with _gz().open(path, "rb") as f:
            while f.read(16 << 20):
                pass
    except Exception as exc:  # OSError, EOFError, or ISA-L's IsalError (a damaged deflate block)
        return exc
    return None


def open_text(path: Path) -> IO[str]:
    """A text file for reading its header or a sample: decompressed on the fly when it is .gz."""
    if path.name.lower().endswith(".gz"):
        return _gz().open(path, "rt", encoding="utf-8-sig", errors="replace", newline="")
    return path.open("r", encoding="utf-8-sig", errors="replace", newline="")


def text_size(path: Path) -> int:
    """Bytes of text in the file: a .gz says so in its last 4 bytes (modulo 4 GiB: a larger file reads
    as at least its compressed size)."""
    size = path.stat().st_size
    if not path.name.lower().endswith(".gz") or size < 18:
        return size
    with path.open("rb") as f:
        f.seek(-4, 2)
        isize = int.from_bytes(f.read(4), "little")
    if isize:
        return max(isize, size)
    # 0 is the last member's size: a file of several members (bgzip ends with an empty one) may hold text
    try:
        with open_text(path) as f:
            return size if f.read(1) else 0
    except Exception:  # a damaged stream: not empty; reading it will say what is wrong
        return size


# ---------------------------------------------------------------------------------------------------
# relations


@dataclass
class Relation:
    """A file as DuckDB reads it: FROM clause (with $path bound), its columns and their types."""

    from_clause: str
    types: dict[str, str]
    params: dict[str, Any]
    fmt: str  # csv | parquet | json
    row_expr: str  # SQL for the 1-based data row (or null when the file is too large to number cheaply)
    numbered_from: str  # FROM clause that always yields `_n`, the 1-based data row (slow path)
    path: Path
    repairs: list[str] = field(default_factory=list)

    def at(self, path: Path) -> Relation:
        """The same relation over another copy of the file (the decompressed one)."""
        return replace(self, params={**self.params, "path": str(path)}, path=path)

    def column(self, name: str) -> str | None:
        """The file's spelling of a column, matched ignoring case."""
        if name in self.types:
            return name
        lower = name.lower()
        return next((c for c in self.types if c.lower() == lower), None)


def _format_of(name: str) -> str:
    n = name.lower()
    if n.endswith(".gz"):
        n = n[:-3]
    if n.endswith(".parquet"):
        return "parquet"
    if n.endswith((".json", ".jsonl", ".ndjson")):
        return "json"
    return "csv"


def _sniff_delimiter(header: str) -> str:
    counts = {d: header.count(d) for d in (",", ";", "\t", "|")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else ","


def _short_rows(path: Path, delim: str, names: list[str] | None) -> tuple[int, int, list[str]] | None:
    """(header fields, data fields, missing names) when every sampled data row is shorter than the header."""
    import csv

    with open_text(path) as f:
        reader = csv.reader(f, delimiter=delim)
        header = next(reader, [])
        lengths = {len(row) for _, row in zip(range(1000), reader, strict=False) if row}
    header = names or header
    if len(lengths) != 1:
        return None
    (n,) = lengths
    if 0 < n < len(header):
        return len(header), n, header[n:]
    return None


def read_header(path: Path) -> str:
    with open_text(path) as f:
        return f.readline().rstrip("\r\n")


def _probing(from_clause: str) -> str:
    """The FROM clause to describe a file with: a CSV's reader sniffs a 4 MB first buffer instead of its
    default 32 MB (a .gz part is inflated that far before the header is known: 0.08-0.09 s against
    0.02-0.03 per part); twice DuckDB's 2 MB longest line. The load reads with the defaults."""
    if from_clause.startswith("read_csv(") and from_clause.endswith(")"):
        return from_clause[:-1] + ", buffer_size = 4194304)"
    return from_clause


def open_relation(
    con: duckdb.DuckDBPyConnection,
    file: SourceFile,
    path: Path,
    options: BillingOptions,
    names: list[str] | None = None,
) -> Relation:
    """Describe the file; raise RejectedFile when DuckDB cannot read it at all."""
    fmt = _format_of(file.local_path.name)
    params: dict[str, Any] = {"path": str(path)}
    repairs: list[str] = []
    size = text_size(path)
    if size == 0:
        raise RejectedFile(file.uri, "file is empty (0 bytes); a billing export has at least a header line")
    if fmt == "parquet":
        # hive_partitioning off: a `BILLING_PERIOD=2026-11` folder is not a column of the file (FOCUS kept
        # it in every Parquet line's x_extra, and the same file as CSV had no such column)
        from_clause = "read_parquet($path, file_row_number = true, hive_partitioning = false)"
        row_expr = "(file_row_number + 1)"
        numbered = f"(select *, file_row_number + 1 as _n from {from_clause})"  # noqa: S608 - identifiers only
    elif fmt == "json":
        # hive_partitioning off: a file reads the same in its `billing_period=...` folder and as the
        # decompressed copy in the cache (the probe opens the first, the load the second)
        from_clause = (
            "read_json($path, format = 'newline_delimited', records = true, sample_size = -1, "
            "hive_partitioning = false)"
        )
        row_expr = "row_number() over ()"
        numbered = f"(select *, row_number() over () as _n from {from_clause})"  # noqa: S608 - identifiers only
    else:
        header = read_header(path)
        delim = options.delimiter or _sniff_delimiter(header)
        if delim != "," and not options.delimiter:
            repairs.append(
                f"read as {'tab' if delim == chr(9) else repr(delim)}-separated (sniffed from the header)"
            )
        nulls = ", ".join(quote_literal(s) for s in NULL_STRINGS)
        extra, header_opt = "", "header = true"
        if names:  # the file's own header line is replaced (skipped), not merely renamed
            params["names"] = names
            extra, header_opt = ", names = $names", "header = false, skip = 1"
        params["delim"] = delim
        from_clause = (
            f"read_csv($path, {header_opt}, all_varchar = true, delim = $delim, quote = '\"', escape = '\"', "
            f"nullstr = [{nulls}], strict_mode = true, hive_partitioning = false{extra})"
        )
        small = size <= ROW_NUMBER_LIMIT
        row_expr = "row_number() over ()" if small else "null::bigint"
        numbered = f"(select *, row_number() over () as _n from {from_clause})"  # noqa: S608 - identifiers only
    try:
        described = con.execute(f"describe select * from {_probing(from_clause)}", params).fetchall()  # noqa: S608 - identifiers only, values are bound
    except duckdb.Error as exc:
        if fmt != "csv":
            raise RejectedFile(file.uri, f"cannot read: {duckdb_problem(exc)}") from None
        short = _short_rows(path, params.get("delim", ","), names)
        if short is not None:
            # documented repair: every data row lacks the header's last field(s); they are read as empty
            header_n, row_n, missing = short
            lenient = "strict_mode = false, null_padding = true, parallel = false"
            repairs.append(
                f"the header has {header_n} fields but the data rows {row_n}: the missing last field(s) "
                f"{', '.join(missing)} read as empty"
            )
        else:
            # documented repair: a file DuckDB's strict dialect check refuses is read leniently, one thread
            lenient = "strict_mode = false, parallel = false"
            repairs.append(f"read leniently (DuckDB's strict CSV check said: {duckdb_problem(exc)[:120]})")
        from_clause = from_clause.replace("strict_mode = true", lenient)
        numbered = numbered.replace("strict_mode = true", lenient)
        try:
            described = con.execute(f"describe select * from {_probing(from_clause)}", params).fetchall()  # noqa: S608 - identifiers only, values are bound
        except duckdb.Error as exc2:
            raise RejectedFile(file.uri, f"cannot read: {duckdb_problem(exc2)}") from None
    types = {r[0]: r[1] for r in described if not (fmt == "parquet" and r[0] == "file_row_number")}
    if fmt == "csv" and len(types) == 1 and not names:
        only = next(iter(types))
        raise RejectedFile(
            file.uri,
            f"the header has a single column {only[:60]!r}: not a comma-, semicolon-, tab- or pipe-separated "
            "file (set options.delimiter if it uses another one)",
            line=1,
        )
    return Relation(from_clause, types, params, fmt, row_expr, numbered, path, repairs)


# ---------------------------------------------------------------------------------------------------
# loading


@dataclass
class Check:
    """A value the staging SQL casts strictly; used only to explain a failed insert."""

    column: str  # the `_src` column
    shown: str  # the file's column name, for the message
    kind: str  # money | price | number | timestamp | date | json | required


CHECK_SQL = {
    "money": ("{c} is not null and try_cast({c} as decimal(18, 6)) is null", "a decimal number"),
    "price": ("{c} is not null and try_cast({c} as decimal(28, 12)) is null", "a decimal number"),
    "number": ("{c} is not null and try_cast({c} as double) is null", "a number"),
    "timestamp": (
        "{c} is not null and coalesce(isinf(try_cast({c} as timestamptz)), true)",  # 'infinity' is no time
        "an ISO 8601 date/time (UTC)",
    ),
    "date": ("{c} is not null and try_billing_date({c}) is null", "a date (YYYY-MM-DD or MM/DD/YYYY)"),
    "json": (
        "{c} is not null and trim({c}::varchar) <> '' and not json_valid({c}::varchar)",
        "a JSON object",
    ),
    "required": ("{c} is null", "a value (it is required)"),
}


@dataclass
class Spec:
    """How one file maps into its format's staging SQL."""

    columns: dict[str, str]  # `_src` column -> SQL over the file's columns (identifiers only)
    checks: list[Check]
    file_billed: str  # SQL over `_src`: each line's billed cost as the file states it
    file_effective: str  # SQL over `_src`: each line's effective cost as the file states it
    bind: dict[str, Any] = field(default_factory=dict)
    line_item_key: str | None = None  # SQL over landed columns that must be unique (duplicates rejected)
    # staging output columns that are NULL on every line of this file (the file lacks their source
    # column): not inserted, so billing_lines does not store them for a source that never fills them
    absent: list[str] = field(default_factory=list)


def tag_bind(con: duckdb.DuckDBPyConnection, tags: dict[str, list[str]]) -> dict[str, Any]:
    """The config's tag aliases in the normalised form the stored keys have, config order kept."""
    out = {}
    for canonical in ("team", "project", "owner", "job_id", "host"):
        got = one(con, "select list_transform($k, lambda k: normalize_tag_key(k))", {"k": tags[canonical]})
        out[f"{canonical}_keys"] = list(dict.fromkeys(got[0] if got else []))
    return out


LINES = stored_in("billing_line_items")  # the table billing lines are written to (the view reads it)


# columns of billing_line_items that the view takes from the ledger and billing_lines (never stored)
DERIVED = ("x_source_name", "x_source_format", "x_source_file", "x_loaded_at", "x_line_key")


def _columns(con: duckdb.DuckDBPyConnection, *tables: str) -> dict[str, dict[str, str]]:
    """Each of the warehouse's `tables`: its columns and their types, in table order."""
    found = rows(
        con,
        "select table_name, column_name, data_type from duckdb_columns() "
        "where database_name = current_database() and schema_name = 'main' and list_contains($t, table_name) "
        "order by table_name, column_index",
        {"t": list(tables)},
    )
    out: dict[str, dict[str, str]] = {t: {} for t in tables}
    for r in found:
        out[r["table_name"]][r["column_name"]] = r["data_type"]
    return out


def store_columns(con: duckdb.DuckDBPyConnection, columns: list[str]) -> list[str]:
    """Add to `billing_lines` the columns of `billing_columns` among `columns` that it does not store yet.

    A warehouse stores only the FOCUS columns its sources fill (sql/raw/billing_lines.sql says why);
    `insert_lines` calls this with the columns it is about to insert. Runs in the caller's transaction,
    so a rejected load takes its new columns back with it. Returns the columns added.
    """
    catalogue = _columns(con, "billing_columns", LINES)
    types, stored = catalogue["billing_columns"], catalogue[LINES]
    wrong = [c for c in columns if c not in types or c in DERIVED]
    if wrong:
        raise ValueError(
            f"cannot store {', '.join(wrong)} in {LINES}: not a column of billing_columns, or one the "
            "billing_line_items view derives (lineage comes from the ledger)"
        )
    added = [c for c in columns if c not in stored]
    for c in added:
        con.execute(f"alter table {LINES} add column {quote_ident(c)} {types[c]}")  # noqa: S608 - identifiers and types from the catalogue
    return added


_CANONICAL = ("team", "project", "owner", "job_id", "x_host")

# the SQL that turns a file's raw tags into billing_tag_sets.tags (sql/): a change to any of it gives stored
# sets another digest than the running code's (tag_normalizer), so they are normalised again
_NORMALIZING_SQL = (
    ("macros", "macro_normalize_tag_key"),
    ("macros", "macro_normalize_tags"),
    ("macros", "macro_gcp_labels_json"),
    ("staging", "stg_billing__tag_sets"),
    ("staging", "stg_azure__tag_sets"),
    ("staging", "stg_gcp__tag_sets"),
)


def tag_normalizer() -> str:
    """A digest of what normalises tags, stored with each tag set (billing_tag_sets.x_normalizer): the SQL
    files as on disk now (as sql_text reads the staging SQL for each file) and DuckDB's version, whose
    lower(), trim() and json_transform the SQL relies on."""
    digest = hashlib.sha256(duckdb.__version__.encode())
    for layer, name in _NORMALIZING_SQL:
        digest.update(b"\0" + sql_text(layer, name).encode())
    return digest.hexdigest()[:16]


_LOOKUPS = ", ".join(f"tag_lookup(tags, ${'host' if c == 'x_host' else c}_keys)" for c in _CANONICAL)


def store_tag_sets(
    con: duckdb.DuckDBPyConnection,
    sets_sql: str,
    params: dict[str, Any],
    keys: dict[str, Any],
    uri: str,
    derived_raw: bool = False,
) -> None:
    """Store the tag sets of one file that billing_tag_sets does not know yet, their canonical tags (team,
    project, owner, job_id, host) resolved through the `tags:` config (`keys`, tag_bind's).

    `sets_sql` yields (x_tag_set, raw, raw_other, tags) per distinct hash of the file's tags (the reader's
    `stg_*__tag_sets.sql`; `raw` and `raw_other` are the least and the greatest raw text of the file's
    lines with that hash). Runs in the caller's transaction. A known set whose normalised tags come out
    differently now (wastewatch's normalisation changed) is updated, so its lines read the new tags.

    Two different raw texts with one id in the file, or a known id with other raw text (when the id is
    of the raw text itself), reject the file rather than give lines another set's tags: a 64-bit MD5
    collision, or a set stored under an earlier version's `hash()` id (macro_tag_set_id.sql). When the raw text is derived from what was hashed (`derived_raw`: GCP
    merges resource and project labels), other stored raw text means the derivation changed, and the
    set is updated like a re-normalised one.
    """
    con.execute(f"create or replace temp table _tag_sets as\n{sets_sql}", params)  # noqa: S608 - our SQL files; values are bound
    within = one(
        con, "select x_tag_set, raw, raw_other from _tag_sets where raw is distinct from raw_other limit 1"
    )
    if within is not None:
        raise RejectedFile(uri, _clash(within[0], within[1], within[2], "of this file "))
    if not derived_raw:
        clash = one(
            con,
            "select n.x_tag_set, n.raw, t.x_tags_raw::varchar from _tag_sets as n "
            "inner join billing_tag_sets as t using (x_tag_set) "
            "where t.x_tags_raw::varchar is distinct from n.raw::json::varchar limit 1",
        )
        if clash is not None:
            raise RejectedFile(uri, _clash(clash[0], clash[1], clash[2], "(this file's and a stored one) "))
    lookups = {k: v for k, v in keys.items() if k.endswith("_keys")}
    bind = {**lookups, "normalizer": tag_normalizer()}
    canonical = ", ".join(_CANONICAL)
    con.execute(
        f"update billing_tag_sets as t set (tags, x_tags_raw, {canonical}, x_normalizer) = "  # noqa: S608 - our constants
        f"(n.tags, n.raw::json, {_LOOKUPS.replace('tags,', 'n.tags,')}, $normalizer) from _tag_sets as n "
        "where n.x_tag_set = t.x_tag_set "
        "and (t.tags is distinct from n.tags or t.x_tags_raw::varchar is distinct from n.raw::json::varchar "
        "or t.x_normalizer is distinct from $normalizer)",
        bind,
    )
    columns = f"x_tag_set, tags, x_tags_raw, {canonical}, x_normalizer"
    new = "where x_tag_set not in (select x_tag_set from billing_tag_sets)"
    con.execute(
        f"insert into billing_tag_sets ({columns}) "  # noqa: S608 - our constants
        f"select x_tag_set, tags, raw::json, {_LOOKUPS}, $normalizer from _tag_sets {new}",
        bind,
    )
    con.execute("drop table _tag_sets")


def _clash(x_tag_set: int, raw: str, other: str, whose: str) -> str:
    return (
        f"two different tag sets {whose}hash to {x_tag_set}: {raw[:200]} and {other[:200]}; their lines "
        "cannot be told apart, so the file is not loaded (a 64-bit MD5 collision, or a set stored under an "
        "earlier version's hash() id: docs/billing.md, How it is stored)"
    )


def resolve_tag_sets(con: duckdb.DuckDBPyConnection, tags: dict[str, list[str]]) -> int:
    """Re-resolve every stored tag set's canonical tags through the `tags:` config: after an alias is
    added or changed, every line already loaded reads the new resolution. Returns the sets changed."""
    canonical = ", ".join(_CANONICAL)
    update = f"update billing_tag_sets set ({canonical}) = ({_LOOKUPS}) where ({canonical}) is distinct from ({_LOOKUPS})"  # noqa: S608 - our constants
    changed = one(con, update, tag_bind(con, tags))  # an UPDATE returns the number of rows it changed
    return int(changed[0]) if changed else 0


def prune_tag_sets(con: duckdb.DuckDBPyConnection) -> int:
    """Delete the tag sets no stored line uses any more (their month was restated with other tags, or
    their file removed), so billing_tag_sets lists only tags that carry spend. Returns the sets deleted."""
    used = f"where x_tag_set not in (select x_tag_set from {LINES} where x_tag_set is not null)"  # noqa: S608 - our constant
    if "x_tag_set" not in _columns(con, LINES)[LINES]:
        used = ""  # no line stores a set: none is used
    deleted = one(con, f"delete from billing_tag_sets {used}")  # noqa: S608 - our constants
    return int(deleted[0]) if deleted else 0


def _file_params(rel: Relation, spec: Spec, sql: str) -> dict[str, Any]:
    """The file's bound values (its path, delimiter, ...) and the spec's that `sql` names."""
    return {k: v for k, v in {**rel.params, **spec.bind}.items() if f"${k}" in sql}


# insert_lines: the columns a query's text yields. Binding it reads the file's metadata or sniffs the CSV
# (0.04 s per CSV part, single-threaded), and the files of one delivery share their query text (the path
# is a bound value)
_DESCRIBED: dict[str, list[str]] = {}


def insert_lines(
    con: duckdb.DuckDBPyConnection,
    query: str,
    params: dict[str, Any] | None = None,
    skip: list[str] | None = None,
    profile: bool = False,
) -> str | None:
    """Insert the rows of `query` (its columns named like billing_columns') into `billing_lines`, first
    adding the columns it fills that the table does not store yet; `skip` names columns known to be NULL
    on every row (left out, never stored for them). Runs in the caller's transaction. With `profile`,
    returns DuckDB's profile of the insert (JSON: the rows each operator produced)."""
    described = _DESCRIBED.get(query)
    if described is None:  # the text alone decides the column names: bind once per text, not per file
        empty = f"select * from ({query}) limit 0"  # noqa: S608 - the caller's SQL; values are bound
        described = [d[0] for d in con.execute(empty, params or {}).description or []]
        if len(_DESCRIBED) >= 64:
            _DESCRIBED.clear()
        _DESCRIBED[query] = described
    left_out = [c for c in skip or [] if c in described]
    if left_out:
        query = f"select * exclude ({', '.join(quote_ident(c) for c in left_out)}) from (\n{query}\n)"  # noqa: S608 - identifiers only
    store_columns(con, [c for c in described if c not in left_out])
    if not profile:
        con.execute(f"insert into {LINES} by name\n{query}", params or {})  # noqa: S608 - the caller's SQL; values are bound
        return None
    # a failed insert aborts the transaction, and with it any statement before the rollback: the caller
    # resets profiling after it (LoadFailed.explain)
    con.execute("set enable_profiling = 'no_output'")
    con.execute(f"insert into {LINES} by name\n{query}", params or {})  # noqa: S608 - the caller's SQL; values are bound
    profile = con.get_profiling_information(format="json")
    con.execute("reset enable_profiling")
    return profile


class BillingReader(DeliveryReader):
    """Base of the billing readers: subclasses set staging/source_format and implement spec()."""

    staging = ""
    tag_sets = "stg_billing__tag_sets"  # the file's distinct tag sets (sql/staging)
    tag_sets_derived = False  # True when a set's raw text is derived from what its hash is of (GCP)
    source_format = ""

    # -- planning (the ingest loop calls these) ------------------------------------------------------
    def plan(
        self, files: list[SourceFile], read_text: Callable[[SourceFile], str], options: BillingOptions
    ) -> tuple[list[Delivery], list[str]]:
        return plan_deliveries(files, read_text, options)

    def prepare(self, files: list[SourceFile], workdir: Path, threads: int = 2) -> Prepared:
        """Start decompressing the delivery's .gz text files in the background (see Prepared)."""
        return Prepared(files, workdir, threads)

    # -- loading ---------------------------------------------------------------------------------------
    def options(self, ctx: LoadContext) -> BillingOptions:
        return ctx.source.options_as(BillingOptions)

    def spec(self, con: duckdb.DuckDBPyConnection, rel: Relation, file: SourceFile, ctx: LoadContext) -> Spec:
        raise NotImplementedError

    def relation(
        self, con: duckdb.DuckDBPyConnection, file: SourceFile, path: Path, ctx: LoadContext
    ) -> Relation:
        return open_relation(con, file, path, self.options(ctx))

    def probe(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> Relation:
        """Open the file and check its header (called before the transaction: a failed statement would
        abort it). A .gz is read as it is (DuckDB inflates only the sample it sniffs); when it cannot be
        opened, a damaged gzip stream is named as such. Raises RejectedFile."""
        path = file.local_path
        try:
            rel = self.relation(con, file, path, ctx)
        except (RejectedFile, duckdb.Error, OSError, EOFError) as exc:
            damaged = gzip_problem(path) if path.name.lower().endswith(".gz") else None
            if damaged is not None:
                raise RejectedFile(file.uri, f"cannot read: {_io_problem(damaged)}") from None
            raise exc from None
        self.spec(con, rel, file, ctx)  # header problems (missing columns) surface here
        return rel

    def load(self, con: duckdb.DuckDBPyConnection, file: SourceFile, ctx: LoadContext) -> LoadResult:
        rel = ctx.probe if isinstance(ctx.probe, Relation) else self.probe(con, file, ctx)
        if isinstance(ctx.prepared, Exception):
            raise RejectedFile(file.uri, f"cannot read: {_io_problem(ctx.prepared)}")
        if ctx.prepared is not None:  # DuckDB reads the decompressed copy in parallel; the .gz on one thread
            rel = rel.at(ctx.prepared)
        spec = self.spec(con, rel, file, ctx)
        cte = _src_cte(rel.from_clause, rel.row_expr, spec.columns)
        stg = sql_text("staging", self.staging)
        bind = {
            **rel.params,
            **tag_bind(con, ctx.config.tags),
            **spec.bind,
            "source_name": ctx.source.name,
            "source_file": file.uri,
            "file_id": ctx.file_id,
            "loaded_at": ctx.loaded_at,
            "default_currency": ctx.config.currency,
            "source_format": self.source_format,
        }
        con.execute("set preserve_insertion_order = false")  # rows keep x_source_row; order is not needed
        file_side = None
        try:
            dedupe = self.dedupe_extra and (not self.sample_extra or self._extra_repeats(con, rel, spec, cte))
            bind["extra_per_line"] = not dedupe
            # observed: text files only. A Parquet pass reads a few columns (0.03 s per million lines); the
            # observing function cost more than that on FOCUS Parquet (13.2 -> 16.0 s for 10 M lines)
            observable = self.presets and dedupe and rel.fmt == "csv"
            signature = _sets_signature(rel, spec, ctx, file) if observable else None
            if len(re.findall(r"\b_src\b", re.sub(r"--[^\n]*", "", stg))) != 1:
                signature = None  # read twice, `_src` could be observed twice (see _observe)
            observer = (
                _observe_start(con) if signature is not None and _known_signature(con) == signature else None
            )
            insert_cte = cte
            if observer is not None:  # the x_extra sets are known: the insert counts the file's lines itself
                insert_cte = _observed_cte(cte, spec)
                bind["observe_token"] = observer
            elif self.presets:
                file_side = self._presets(con, rel, spec, cte, dedupe, signature)
            else:
                sets = f"{cte}{sql_text('staging', self.tag_sets)}"
                sets_params = _file_params(rel, spec, sets)
                store_tag_sets(con, sets, sets_params, bind, file.uri, self.tag_sets_derived)
            used = {k: v for k, v in bind.items() if f"${k}" in insert_cte or f"${k}" in stg}
            query = f"{insert_cte}select * from (\n{stg}\n)"  # noqa: S608 - identifiers only, values are bound
            profile = insert_lines(con, query, used, spec.absent, profile=observer is not None)
            if observer is not None:
                file_side = _observe_end(observer, profile)
            if self.presets:
                self._file_tag_sets(con, rel, spec, cte, bind, file, ctx)
        except duckdb.Error as exc:
            # the transaction is aborted now: the loop rolls back, then asks `explain` for the bad row
            _observe_end(bind.get("observe_token"), None)
            raise LoadFailed(self, rel, spec, file, exc) from None
        except RejectedFile:  # a tag set clash: the transaction is still usable, the setting is put back
            _observe_end(bind.get("observe_token"), None)
            con.execute("reset preserve_insertion_order")
            raise
        con.execute("reset preserve_insertion_order")
        # the same staging over the numbered file: run only to name data rows in an error message, when
        # the insert could not number them (CSV files over ROW_NUMBER_LIMIT)
        numbered = f"{_src_cte(rel.numbered_from, '_n', spec.columns)}select * from (\n{stg}\n)"  # noqa: S608 - identifiers only
        staged = (numbered, {k: v for k, v in bind.items() if f"${k}" in numbered})
        result = self._after(con, rel, spec, file, ctx, file_side, staged)
        result.warnings.extend(rel.repairs)
        return result

    # readers whose staging SQL reads the file's distinct x_extra sets (with dedupe_extra) from the temp
    # table `_billing_sets` that one aggregate pass over the file fills, together with the file-side
    # reconciliation sums. Their lines' tag set ids are tag_set_id() (MD5) of the raw tags, and the sets
    # are looked up after the insert (`_file_tag_sets`): the file is read a third time, for its tags
    # alone, only when it has sets the warehouse does not know yet
    presets = False
    dedupe_extra = False
    # with dedupe_extra: decide per file from its first lines (`_extra_repeats`), for readers whose
    # x_extra columns may hold a value per line (FOCUS's x_ columns: Azure's x_BilledCostInUsd). Grouping
    # a file by a per-line value made its whole load 2.1-2.4x slower; the staging SQL then builds
    # x_extra per line (`$extra_per_line`)
    sample_extra = False
    # what lines are grouped and joined back by: the x_extra STRUCT itself, not its hash() (not injective:
    # an empty MAP or LIST hashes like NULL, values shifting between two LIST fields hash alike, and text
    # collides as macro_tag_set_id.sql says)
    extra_key = "_x_extra"

    def _extra_repeats(self, con: duckdb.DuckDBPyConnection, rel: Relation, spec: Spec, cte: str) -> bool:
        """Whether the file's first 10,000 lines hold at most one x_extra combination per 10 lines."""
        sql = f"{cte}select count(*), count(distinct hash(_x_extra)) from (select _x_extra from _src limit 10000)"  # noqa: S608 - identifiers only
        got = one(con, sql, _file_params(rel, spec, sql))
        assert got is not None
        return got[1] * 10 <= max(got[0], 1)

    def _presets(
        self,
        con: duckdb.DuckDBPyConnection,
        rel: Relation,
        spec: Spec,
        cte: str,
        dedupe: bool,
        signature: str | None = None,
    ) -> tuple[int, Decimal | None, Decimal | None]:
        # NULL of the key's type when x_extra is built per line (the staging SQL's join still binds)
        extra_h = (
            (self.extra_key if dedupe else f"case when false then {self.extra_key} end")
            if self.dedupe_extra
            else "null::ubigint"
        )
        extra_v = "any_value(_x_extra)" if dedupe else "null"
        # g: 2 = an x_extra set, 3 = the file. The lines are grouped once by xh, a few groups, and the
        # grouping sets are taken over those: grouping sets over the lines themselves cost DuckDB a
        # materialised copy of the input (0.7 thread-seconds per million CUR lines). The tags are not
        # read here: hashing and grouping them cost 0.14 thread-s per million lines of a Parquet MAP and
        # 0.35-0.45 of CSV text, for sets the warehouse mostly knows already (`_file_tag_sets`)
        sql = (
            f"create or replace temp table _billing_sets as\n{cte}"  # noqa: S608 - identifiers only
            ", _groups as (\n"
            f"    select xh, {extra_v} as x_extra, count(*) as n,\n"
            f"        sum(({spec.file_billed})::decimal(18, 6)) as billed,\n"
            f"        sum(({spec.file_effective})::decimal(18, 6)) as effective\n"
            f"    from (select *, {extra_h} as xh from _src)\n"
            "    group by xh\n"
            ")\n"
            "select 2 + grouping(xh) as g, xh, any_value(x_extra) as x_extra,\n"
            "    coalesce(sum(n), 0)::bigint as n, sum(billed) as billed, sum(effective) as effective\n"
            "from _groups group by grouping sets ((xh), ())"
        )
        con.execute(sql, _file_params(rel, spec, sql))
        # what the sets' key is made of: the next file with the same can use them (_known_signature)
        con.execute(
            "create or replace temp table _billing_sets_of as select $s::varchar as signature",
            {"s": signature},
        )
        got = one(con, "select n, billed, effective from _billing_sets where g = 3")
        assert got is not None
        return got[0], got[1], got[2]

    def _file_tag_sets(
        self,
        con: duckdb.DuckDBPyConnection,
        rel: Relation,
        spec: Spec,
        cte: str,
        bind: dict[str, Any],
        file: SourceFile,
        ctx: LoadContext,
    ) -> None:
        """Store the tag sets of the file's landed lines (their x_tag_set) that billing_tag_sets lacks.

        Only when there are such sets is the file read again for its tags (every distinct set, as raw
        text): the new ones are stored, and the known ones checked and re-normalised, as store_tag_sets
        does. When the warehouse knows every set (the other files of a month, a restated month), the
        file's tags are not read again: the id is 64 bits of the raw text's MD5 (tag_set_id), not DuckDB's
        hash(), whose collisions are easy to meet (sql/macros/macro_tag_set_id.sql). Known sets that other
        normalising SQL made (x_normalizer is not tag_normalizer(): sets stored by an earlier version) are
        normalised again from their stored raw text; the rest are left as they are (this skips 0.03 s of
        single-threaded work per file of 2,000 sets).
        """
        if "x_tag_set" not in _columns(con, LINES)[LINES]:
            return  # no line of any file has had tags yet
        con.execute(
            f"create or replace temp table _file_sets as select distinct x_tag_set from {LINES} "  # noqa: S608 - our constant
            "where x_file_id = $f and x_tag_set is not null",
            {"f": ctx.file_id},
        )
        found = one(
            con,
            "select count(*) filter (where t.x_tag_set is null), "
            "count(*) filter (where t.x_normalizer is distinct from $normalizer) "
            "from _file_sets as f left join billing_tag_sets as t using (x_tag_set)",
            {"normalizer": tag_normalizer()},
        )
        unknown, stale = found if found else (0, 0)
        if not stale:  # every set known and normalised by this code (unknown ones count as stale too)
            con.execute("drop table _file_sets")
            return
        if unknown:
            sql = (
                f"create or replace temp table _file_tags as\n{cte}"  # noqa: S608 - identifiers only
                # distinct texts first: MD5 once per text, not per line (0.2 thread-s per million lines)
                "select tag_set_id(raw) as th, min(raw) as tags_raw, max(raw) as tags_other\n"
                "from (select distinct _tags_raw as raw from _src where _tags_raw is not null) group by th"
            )
            con.execute(sql, _file_params(rel, spec, sql))
        else:
            con.execute(
                "create or replace temp table _file_tags as select x_tag_set as th, "
                "x_tags_raw::varchar as tags_raw, x_tags_raw::varchar as tags_other "
                "from billing_tag_sets where x_tag_set in (select x_tag_set from _file_sets)"
            )
        store_tag_sets(con, sql_text("staging", self.tag_sets), {}, bind, file.uri)
        con.execute("drop table _file_tags")
        con.execute("drop table _file_sets")

    # -- after the insert: checks on what landed, then reconciliation with the file ---------------------
    def _after(
        self,
        con: duckdb.DuckDBPyConnection,
        rel: Relation,
        spec: Spec,
        file: SourceFile,
        ctx: LoadContext,
        file_side: tuple[int, Decimal | None, Decimal | None] | None = None,
        staged: tuple[str, dict[str, Any]] | None = None,
    ) -> LoadResult:
        key = spec.line_item_key or "null"
        first_key = key.split(",")[0]
        landed = one(
            con,
            f"""
            select count(*), sum(billed_cost), sum(effective_cost),
                   string_agg(distinct billing_currency, ',' order by billing_currency),
                   count(distinct x_billing_period), min(x_billing_period),
                   min(x_source_row) filter (where charge_period_end < charge_period_start),
                   count(*) filter (where {first_key} is not null)
                       - count(distinct hash({key})) filter (where {first_key} is not null),
                   count(*) filter (where charge_period_end < charge_period_start)
            from {LINES} where x_file_id = $f
            """,  # noqa: S608 - identifiers only, values are bound
            {"f": ctx.file_id},
        )
        assert landed is not None
        rows, billed, effective, currencies, n_periods, period, bad_end_row, dups, bad_ends = landed
        if bad_ends:
            if bad_end_row is None and staged is not None:
                sql, params = staged
                found = one(
                    con,
                    f"select min(x_source_row) from ({sql}) where charge_period_end < charge_period_start",  # noqa: S608 - identifiers only, values are bound
                    params,
                )
                bad_end_row = found[0] if found else None
            where = f" (data row {bad_end_row})" if bad_end_row else ""
            raise RejectedFile(
                file.uri,
                f"{bad_ends} line(s) end before they start{where}: the charge period's end must not be "
                "before its start",
                line=bad_end_row + 1 if bad_end_row and rel.fmt == "csv" else None,
            )
        if dups and spec.line_item_key:
            self._duplicates(con, spec, file, ctx, staged)
        if file_side is None:
            file_side = self._file_sums(con, rel, spec, file)
        f_rows, f_billed, f_effective = file_side
        if (f_rows, _q(f_billed), _q(f_effective)) != (rows, _q(billed), _q(effective)):
            raise RejectedFile(
                file.uri,
                "reconciliation failed: the file has "
                f"{f_rows:,} rows, billed {_q(f_billed)}, effective {_q(f_effective)}; landed {rows:,} rows, "
                f"billed {_q(billed)}, effective {_q(effective)}",
            )
        return LoadResult(
            rows=rows,
            billing_period=period if n_periods == 1 else None,
            billed_cost_sum=billed,
            effective_cost_sum=effective,
            file_rows=f_rows,
            file_billed_cost_sum=f_billed,
            file_effective_cost_sum=f_effective,
            currencies=currencies,
        )

    def _file_sums(
        self, con: duckdb.DuckDBPyConnection, rel: Relation, spec: Spec, file: SourceFile
    ) -> tuple[int, Decimal | None, Decimal | None]:
        cte = _src_cte(rel.from_clause, "null::bigint", spec.columns)
        billed, effective = spec.file_billed, spec.file_effective
        sql = f"{cte}select count(*), sum(({billed})::decimal(18, 6)), sum(({effective})::decimal(18, 6)) from _src"  # noqa: S608 - identifiers only
        used = _file_params(rel, spec, sql)
        try:
            got = one(con, sql, used)
        except duckdb.Error as exc:
            raise RejectedFile(file.uri, f"cannot reconcile: {duckdb_problem(exc)}") from None
        assert got is not None
        return got[0], got[1], got[2]

    def _duplicates(
        self,
        con: duckdb.DuckDBPyConnection,
        spec: Spec,
        file: SourceFile,
        ctx: LoadContext,
        staged: tuple[str, dict[str, Any]] | None = None,
    ) -> None:
        key = spec.line_item_key
        first_key = key.split(",")[0]
        got = con.execute(
            f"""
            select {first_key} as k, count(*) as n, list(x_source_row order by x_source_row)[1:3] as at
            from {LINES} where x_file_id = $f and {first_key} is not null
            group by {key} having count(*) > 1 order by min(x_source_row) nulls last limit 1
            """,  # noqa: S608 - identifiers only, values are bound
            {"f": ctx.file_id},
        ).fetchall()
        if not got:
            return  # a hash collision, not a duplicate
        k, n, at = got[0]
        total = one(
            con,
            f"select count(*) - count(distinct hash({key})) from {LINES} "  # noqa: S608 - identifiers only
            f"where x_file_id = $f and {first_key} is not null",
            {"f": ctx.file_id},
        )
        if all(r is None for r in at) and staged is not None:
            # the file's rows were not numbered on insert: number them now to say where the repeats are
            sql, params = staged
            found = one(
                con,
                f"select list(x_source_row order by x_source_row)[1:3] from ({sql}) "  # noqa: S608 - identifiers only, values are bound
                f"where {first_key} = $k group by {key} having count(*) > 1 order by min(x_source_row) limit 1",
                {**params, "k": k},
            )
            at = found[0] if found else at
        rows_at = ", ".join(str(r) for r in at if r is not None)
        raise RejectedFile(
            file.uri,
            f"duplicate line items: {k!r} appears {n} times"
            + (f" (data rows {rows_at})" if rows_at else "")
            + (f"; {total[0]} duplicate line(s) in all" if total and total[0] > n - 1 else "")
            + ": the export repeats line items, which would count their cost twice",
        )

    def _diagnose(
        self, con: duckdb.DuckDBPyConnection, rel: Relation, spec: Spec, file: SourceFile, exc: duckdb.Error
    ) -> None:
        """The insert failed (and was rolled back): name the first data row and column with a bad value,
        else DuckDB's error. Always raises RejectedFile."""
        base = duckdb_problem(exc)
        if not spec.checks:
            raise RejectedFile(file.uri, f"cannot load: {base}") from None
        cte = _src_cte(rel.numbered_from, "_n", spec.columns)
        conds = []
        for check in spec.checks:
            template, _ = CHECK_SQL[check.kind]
            conds.append(template.format(c=quote_ident(check.column)))
        selects = ", ".join(f"min(_row) filter (where {c})" for c in conds)
        try:
            first = one(con, f"{cte}select {selects} from _src", rel.params)  # noqa: S608 - identifiers only, values are bound
        except duckdb.Error as exc2:
            raise RejectedFile(file.uri, f"cannot read: {duckdb_problem(exc2)}") from None
        assert first is not None
        bad = [(row, check) for row, check in zip(first, spec.checks, strict=True) if row is not None]
        if not bad:
            raise RejectedFile(file.uri, f"cannot load: {base}") from None
        row, check = min(bad, key=lambda b: b[0])
        value = one(
            con,
            f"{cte}select {quote_ident(check.column)}::varchar from _src where _row = $row",  # noqa: S608 - identifiers only
            {**rel.params, "row": row},
        )
        shown = value[0] if value else None
        expected = CHECK_SQL[check.kind][1]
        problem = (
            f"expected {expected}, found {shown!r} (data row {row})"
            if shown is not None
            else (f"expected {expected}, found nothing (data row {row})")
        )
        others = len({c.column for _, c in bad}) - 1
        if others:
            problem += f"; {others} other column(s) also have bad values"
        raise RejectedFile(
            file.uri, problem, line=row + 1 if rel.fmt == "csv" else None, column=check.shown
        ) from None


class LoadFailed(Exception):
    """The insert of a billing file failed; `explain` (after the rollback) finds the row and column."""

    def __init__(
        self, reader: BillingReader, rel: Relation, spec: Spec, file: SourceFile, exc: duckdb.Error
    ) -> None:
        self.reader, self.rel, self.spec, self.file, self.exc = reader, rel, spec, file, exc
        super().__init__(f"{file.uri}: {duckdb_problem(exc)}")

    def explain(self, con: duckdb.DuckDBPyConnection) -> RejectedFile:
        con.execute("reset preserve_insertion_order")
        con.execute("reset enable_profiling")  # set when the failed insert was observed (insert_lines)
        try:
            self.reader._diagnose(con, self.rel, self.spec, self.file, self.exc)
        except RejectedFile as rejected:
            return rejected
        return RejectedFile(self.file.uri, f"cannot load: {duckdb_problem(self.exc)}")  # pragma: no cover


def _q(v: Decimal | None) -> Decimal:
    return (v if v is not None else Decimal(0)).quantize(Decimal("0.000001"))


def _io_problem(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    if (
        isinstance(exc, EOFError)
        or "end-of-stream" in text.lower()
        or "compressed file ended" in text.lower()
    ):
        return f"the gzip stream is truncated ({text})"
    return text


# ---------------------------------------------------------------------------------------------------
# reconciliation without a second pass: the insert's own scan of the file counts its lines
#
# The file-side rows and cost sums used to come from an aggregate pass that read (tokenised) the file a
# second time: 1.5-1.7 thread-seconds per million CUR 2.0 CSV lines, more than the whole gap to DuckDB's
# bare load. Now, when a CSV file needs no pass for its x_extra sets (the source's earlier file of the same
# billing period made them), `_src` hands every line to `_ww_observe`, a Python function DuckDB calls with a
# chunk of lines at a time (0.05-0.2 thread-s per million), which adds up the lines and their billed and effective cost as
# the file states them (spec.file_billed / file_effective), before the staging SQL's joins, filters and
# casts: what the pass computed, from the same scan of the same bytes. DuckDB may run a filter or a limit
# of the staging SQL below it, hiding lines from it; so the count is trusted only when DuckDB's profile of
# the insert shows one scan of the file, with no filter pushed into it, that produced exactly the lines
# observed. Otherwise (or without numpy, which DuckDB's arrow functions need) the independent pass runs
# after the insert as before (`_file_sums`), and reconciliation is as strict as ever. The staging SQL must
# read `_src` once: DuckDB 2.0's common_subplan optimizer can feed two readings from one scan, each with
# its own observer below its own filter, and their counts could add up to the scan's by chance.

_OBSERVED: dict[int, list[Any]] = {}  # token -> [lines, billed sum, effective sum]
_OBSERVED_LOCK = threading.Lock()
_TOKENS = itertools.count(1)
_FILE_SCANS = ("READ_CSV", "READ_CSV_AUTO", "READ_PARQUET", "PARQUET_SCAN", "READ_JSON", "READ_NDJSON")


def _observe(row: Any, token: Any, billed: Any, effective: Any) -> Any:
    """Called by DuckDB (arrow arrays) for each chunk of a file's lines: adds them up, returns `row`."""
    import pyarrow.compute as pc

    if not len(row):
        return row
    b, e = pc.sum(billed).as_py(), pc.sum(effective).as_py()
    with _OBSERVED_LOCK:
        acc = _OBSERVED.get(token[0].as_py())
        if acc is not None:
            acc[0] += len(row)
            acc[1] = b if acc[1] is None else acc[1] + (b or 0)
            acc[2] = e if acc[2] is None else acc[2] + (e or 0)
    return row


def _observe_start(con: duckdb.DuckDBPyConnection) -> int | None:
    """A token for one insert's observation, `_ww_observe` registered on `con`; None without numpy."""
    try:
        import numpy  # noqa: F401 - DuckDB's arrow functions need it
    except ImportError:  # pragma: no cover - numpy is a dependency
        return None
    money = duckdb.decimal_type(18, 6)
    try:
        con.create_function(
            "_ww_observe",
            _observe,
            ["BIGINT", "BIGINT", money, money],
            "BIGINT",
            type="arrow",
            side_effects=True,  # never folded; still dropped with a column nothing uses (hence `_row`)
            null_handling="special",  # called for NULL rows too (the row number is NULL in large CSVs)
        )
    except duckdb.NotImplementedException:  # registered on this connection already
        pass
    token = next(_TOKENS)
    with _OBSERVED_LOCK:
        _OBSERVED[token] = [0, None, None]
    return token


def _observe_end(token: int | None, profile: str | None) -> tuple[int, Decimal | None, Decimal | None] | None:
    """The observed (lines, billed, effective) when the profile proves every line of the file was
    observed; None (run the pass) otherwise."""
    if token is None:
        return None
    with _OBSERVED_LOCK:
        rows, billed, effective = _OBSERVED.pop(token, [None, None, None])
    scanned = _scanned_lines(profile) if profile else None
    if rows is None or scanned is None or scanned != rows:
        return None
    return rows, billed, effective


def _scanned_lines(profile: str) -> int | None:
    """Lines the one scan of a file in a DuckDB profile produced; None when there is not exactly one
    such scan or a filter was pushed into it (its count would leave out the lines it dropped)."""
    try:
        tree = json.loads(profile)
    except ValueError:
        return None
    scans: list[dict[str, Any]] = []
    todo = list(tree.get("operator") or tree.get("children") or [])
    while todo:
        node = todo.pop()
        info = node.get("extra_info") or {}
        if str(info.get("Function", "")).upper() in _FILE_SCANS:
            scans.append(node)
        todo.extend(node.get("children") or [])
    if len(scans) != 1 or "Filters" in (scans[0].get("extra_info") or {}):
        return None
    rows = scans[0].get("intermediate_rows", scans[0].get("operator_cardinality"))
    return rows if isinstance(rows, int) else None


def _observed_cte(cte: str, spec: Spec) -> str:
    """`_src` with every line passed through `_ww_observe` (its row number, which the staging SQL always
    writes: a column nothing uses would be dropped with its function)."""
    head = "with _src as not materialized ("
    assert cte.startswith(head)
    file_cte = "with _src_file as not materialized (" + cte[len(head) :]
    billed, effective = spec.file_billed, spec.file_effective
    return (
        f"{file_cte.rstrip()}\n, _src as not materialized (\n"  # noqa: S608 - identifiers only
        f"    select * replace (_ww_observe(_row, $observe_token, ({billed})::decimal(18, 6), "
        f"({effective})::decimal(18, 6)) as _row)\n"
        "    from _src_file\n)\n"
    )


def _sets_signature(rel: Relation, spec: Spec, ctx: LoadContext, file: SourceFile) -> str:
    """What a file's x_extra sets are keyed by (the `_x_extra` STRUCT's SQL over the file's columns and
    their types) and whose they are (the source's billing period, or the file when it has none). Files
    with the same signature share sets. Any STRUCT of the same type would give a line the right JSON
    (a set's JSON depends on its key alone), but another month's sets would leave most of a file's
    combinations to be built line by line (3.2 thread-s per million lines against the pass's 1.5-1.7)."""
    owner = [ctx.source.name, ctx.period or file.uri]
    text = json.dumps([owner, spec.columns.get("_x_extra"), sorted(rel.types.items())])
    return hashlib.sha1(text.encode()).hexdigest()


def _known_signature(con: duckdb.DuckDBPyConnection) -> str | None:
    """The signature of the x_extra sets this connection holds (`_billing_sets`), if any."""
    found = one(
        con,
        "select count(*) from duckdb_tables() where temporary and table_name in ('_billing_sets', '_billing_sets_of')",
    )
    if not found or found[0] != 2:
        return None
    got = one(con, "select signature from _billing_sets_of")
    return got[0] if got else None


def _src_cte(from_clause: str, row_expr: str, columns: dict[str, str]) -> str:
    select = ",\n        ".join(f"{expr} as {quote_ident(name)}" for name, expr in columns.items())
    return f"with _src as not materialized (\n    select {row_expr} as _row,\n        {select}\n    from {from_clause}\n)\n"  # noqa: S608 - identifiers only, values are bound
