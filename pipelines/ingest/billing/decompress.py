"""A delivery's .gz text parts decompressed with ISA-L in the background (`Prepared`), into memory (a Linux
memfd) when there is room for them, else into the run's cache; and reading .gz text directly: a header
or a sample (`open_text`), its size (`text_size`), whether the stream is damaged (`gzip_problem`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from pipelines.ingest.files import SourceFile


def _gz() -> Any:
    """ISA-L's gzip module (python-isal, a dependency), or the standard library's when it is missing."""
    try:
        from isal import igzip
    except ImportError:  # pragma: no cover - isal is a dependency; plain zlib still works
        import gzip as igzip  # type: ignore[no-redef]
    return igzip


# inflated copies whose text holds no NUL byte, seen while they were written (nul_free)
_NUL_FREE: set[str] = set()


def nul_free(path: Path) -> bool:
    """Whether `path` is an inflated copy whose text was seen, as it was written, to hold no NUL byte: the
    load then need not read it again to look for one (sniff.nul_problem)."""
    return str(path) in _NUL_FREE


def _gunzip(src: Path, dst: Path) -> bool:
    """Inflate `src` into `dst`; returns whether its text holds no NUL byte (looked for as it passes)."""
    gz = _gz()
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".part")
    clean = True
    try:
        with gz.open(src, "rb") as fin, tmp.open("wb") as fout:
            while chunk := fin.read(16 << 20):  # large chunks: fewer, larger writes
                clean = clean and b"\0" not in chunk
                fout.write(chunk)
        tmp.replace(dst)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return clean


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
    next part. So at most `ahead` inflated parts are kept, however many parts the delivery has. `get(uri)`
    waits for a part (its path, or why it could not be decompressed: a truncated or damaged gzip);
    `close()` stops and cleans up, and never waits for more than the parts being inflated at that moment.

    A part inflates into memory (a Linux memfd, read by its /proc/self/fd path) when `ahead` parts of its
    size take at most half the memory available (`room()`, checked as it starts); else into `workdir`.
    Writing the text into memory costs a fraction of the system time writing it to a file does.
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
            elif _gunzip(f.local_path, dst):
                _NUL_FREE.add(str(dst))
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
    _NUL_FREE.discard(str(path))
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


def io_problem(exc: Exception) -> str:
    """What stopped a .gz from being read, for a rejection message (a truncated stream said as such)."""
    text = str(exc) or type(exc).__name__
    if (
        isinstance(exc, EOFError)
        or "end-of-stream" in text.lower()
        or "compressed file ended" in text.lower()
    ):
        return f"the gzip stream is truncated ({text})"
    return text
