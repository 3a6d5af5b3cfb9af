"""Decompressing a delivery's .gz parts (pipelines/ingest/billing/decompress.py `Prepared`): in load
order, in the background, never more than two inflated parts held (in memory or in the cache folder), a
damaged part reported against itself, and nothing left behind after a run, whether it loaded or was
rejected."""

from __future__ import annotations

import gzip
import os
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.config import load_config
from pipelines.ingest import ingest
from pipelines.ingest.billing.decompress import Prepared, can_inflate_in_memory, memory_room, text_size
from pipelines.ingest.billing.reader import BillingReader
from pipelines.ingest.files import SourceFile
from tests.helpers.billing_exports import Cur2Export, hours
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.paths import FOCUS_SAMPLE

NOV = datetime(2026, 11, 2)


def _part(folder: Path, name: str, text: str, cut: bool = False) -> SourceFile:
    data = gzip.compress(text.encode())
    path = folder / name
    path.write_bytes(data[: len(data) // 2] if cut else data)
    return SourceFile(
        uri=str(path), local_path=path, relative=name, size=path.stat().st_size, modified_at=NOV
    )


MODES = [
    pytest.param(False, id="on-disk"),
    pytest.param(
        True,
        id="in-memory",
        marks=pytest.mark.skipif(not can_inflate_in_memory(), reason="no memfd on this system"),
    ),
]


def _held(prepared: Prepared, work: Path) -> int:
    return prepared.in_memory() + (len(list(work.iterdir())) if work.exists() else 0)


@pytest.mark.parametrize("in_memory", MODES)
def test_parts_inflate_in_order_with_at_most_two_held(tmp_path: Path, in_memory: bool) -> None:
    texts = [f"part {i}\n" * (1000 + i) for i in range(4)]
    parts = [_part(tmp_path, f"p{i}.csv.gz", t, cut=i == 2) for i, t in enumerate(texts)]
    work = tmp_path / "work"
    prepared = Prepared(parts, work, threads=2, ahead=2, in_memory=in_memory)
    try:
        first, second = prepared.get(parts[0].uri), prepared.get(parts[1].uri)
        assert isinstance(first, Path) and first.read_text() == texts[0]
        assert isinstance(second, Path) and second.read_text() == texts[1]
        assert prepared.in_memory() == (2 if in_memory else 0)
        assert str(first).startswith("/proc/self/fd/") == in_memory
        if not in_memory:
            assert sorted(work.iterdir()) == sorted([first, second])
        # the third waits for a free place: both are taken until the first is loaded
        with pytest.raises(TimeoutError):
            prepared.get(parts[2].uri, timeout=0.3)
        first_inode = os.stat(first).st_ino
        prepared.done(parts[0].uri)
        # the first's copy is gone (its memory file closed: the fd is shut or now another file); the
        # place it freed may already hold the fourth, inflated past the damaged third in the meantime
        if in_memory:
            assert not first.exists() or os.stat(first).st_ino != first_inode
            assert prepared.in_memory() in (1, 2)
        else:
            assert not first.exists()
        # the damaged third is reported (it holds no place), so the fourth inflates in its turn
        damaged = prepared.get(parts[2].uri)
        assert isinstance(damaged, EOFError | OSError), damaged
        fourth = prepared.get(parts[3].uri)
        assert isinstance(fourth, Path) and fourth.read_text() == texts[3]
        assert _held(prepared, work) == 2
        assert second.read_text() == texts[1]  # still there: a memory file is closed only when done
        assert prepared.get(str(tmp_path / "not-a-gz.csv")) is None
    finally:
        prepared.close()
    assert _held(prepared, work) == 0


def test_a_part_inflates_in_memory_only_when_there_is_room(tmp_path: Path) -> None:
    """Two parts of a size must fit in half the memory available; a part whose gzip trailer understates
    its size (it counts modulo 4 GiB) moves to disk when it outgrows that share, whole."""
    if not can_inflate_in_memory():
        pytest.skip("no memfd on this system")
    assert memory_room() > 0
    text = "".join(f"{i},line {i}\n" for i in range(50_000))  # 638,890 bytes
    small = _part(tmp_path, "small.csv.gz", text)
    work = tmp_path / "work"
    # room for two parts of 638,890 bytes in half of it: in memory
    prepared = Prepared([small], work, ahead=2, room=lambda: 4 * len(text))
    try:
        got = prepared.get(small.uri)
        assert isinstance(got, Path) and str(got).startswith("/proc/self/fd/")
        assert got.read_text() == text and prepared.in_memory() == 1
    finally:
        prepared.close()
    # one byte short: on disk
    prepared = Prepared([small], work, ahead=2, room=lambda: 4 * len(text) - 4)
    try:
        got = prepared.get(small.uri)
        assert isinstance(got, Path) and got.parent == work and got.read_text() == text
        assert prepared.in_memory() == 0
    finally:
        prepared.close()
    assert list(work.iterdir()) == []
    # a trailer that understates the size (it counts modulo 4 GiB, and a file of several members gives
    # the last one's): the part starts in memory, passes its share (16 MB chunks: the first chunk already
    # does) and ends on disk with every byte, in order
    big = "".join(f"{i:09d},{'x' * 70}\n" for i in range(400_000))  # 32.4 MB
    lying = _part(tmp_path, "big.csv.gz", big)
    lying.local_path.write_bytes(lying.local_path.read_bytes() + gzip.compress(b"last\n"))
    assert text_size(lying.local_path) == lying.local_path.stat().st_size  # all the trailer lets us see
    prepared = Prepared([lying], work, ahead=2, room=lambda: 4 * 10_000_000)
    try:
        got = prepared.get(lying.uri)
        assert isinstance(got, Path) and got.parent == work, got
        assert prepared.in_memory() == 0
        assert got.read_text() == big + "last\n"
    finally:
        prepared.close()
    assert list(work.iterdir()) == []


def _machine(
    root: Path, cgroup: str, files: dict[str, str], available_kb: int = 40 << 20
) -> tuple[Path, Path]:
    """A /proc and a /sys/fs/cgroup with the given files (paths under the cgroup root), as Linux writes them."""
    proc, cgroups = root / "proc", root / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(f"MemTotal: {64 << 20} kB\nMemAvailable: {available_kb} kB\n")
    (proc / "self" / "cgroup").write_text(cgroup)
    cgroups.mkdir()
    for rel, text in files.items():
        (cgroups / rel).parent.mkdir(parents=True, exist_ok=True)
        (cgroups / rel).write_text(text)
    return proc, cgroups


GIB = 1 << 30


@pytest.mark.parametrize(
    ("cgroup", "files", "room"),
    [
        # no limit anywhere (cgroup v2 host): what the machine has available
        ("0::/user.slice/session-1.scope\n", {"user.slice/session-1.scope/memory.max": "max\n"}, 40 * GIB),
        # v2, private namespace: the container's own cgroup is the root it sees
        ("0::/\n", {"memory.max": f"{2 * GIB}\n", "memory.current": f"{GIB // 2}\n"}, 3 * GIB // 2),
        # v2, the limit on a parent slice; the leaf has none
        (
            "0::/kubepods.slice/pod1/ctr1\n",
            {
                "kubepods.slice/pod1/ctr1/memory.max": "max\n",
                "kubepods.slice/pod1/ctr1/memory.current": f"{GIB}\n",
                "kubepods.slice/pod1/memory.max": f"{2 * GIB}\n",
                "kubepods.slice/pod1/memory.current": f"{GIB + GIB // 4}\n",
            },
            3 * GIB // 4,
        ),
        # v2, the host's path for a cgroup the process sees as its root (cgroupns=host bind mounts)
        ("0::/system.slice/docker-abc.scope\n", {"memory.max": f"{GIB}\n", "memory.current": "0\n"}, GIB),
        # hybrid: the memory controller on v1, with a limit (this one in bytes, not "max")
        (
            "4:memory:/process_api/abc\n1:cpu:/\n0::/\n",
            {
                "memory/memory.limit_in_bytes": "9223372036854771712\n",
                "memory/process_api/abc/memory.limit_in_bytes": f"{4 * GIB}\n",
                "memory/process_api/abc/memory.usage_in_bytes": f"{3 * GIB}\n",
            },
            GIB,
        ),
        # v1 without a limit (2^63 rounded down to a page)
        (
            "11:cpuacct,memory:/\n",
            {"memory/memory.limit_in_bytes": "9223372036854771712\n", "memory/memory.usage_in_bytes": "5\n"},
            40 * GIB,
        ),
        # over its limit already: no room
        ("0::/\n", {"memory.max": f"{GIB}\n", "memory.current": f"{2 * GIB}\n"}, 0),
        # a limit file that does not say a number: cannot tell, so disk
        ("0::/\n", {"memory.max": "lots\n", "memory.current": "0\n"}, 0),
        # no memory cgroup line at all: cannot tell
        ("1:cpu:/\n", {}, 0),
    ],
)
def test_memory_room_is_the_tightest_cgroup_limit(
    tmp_path: Path, cgroup: str, files: dict[str, str], room: int
) -> None:
    proc, cgroups = _machine(tmp_path, cgroup, files)
    assert memory_room(proc, cgroups) == room


def test_memory_room_without_proc_is_none(tmp_path: Path) -> None:
    assert memory_room(tmp_path / "no-proc", tmp_path / "no-cgroup") == 0
    assert memory_room() >= 0  # this machine's own: whatever it is, it is a number


def test_a_system_without_memory_files_inflates_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """memfd_create refused (a seccomp sandbox says ENOSYS): the part goes to disk, it is not rejected."""
    import errno
    import os

    def refused(name: str, flags: int = 0) -> int:
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(os, "memfd_create", refused, raising=False)
    part = _part(tmp_path, "p.csv.gz", "a,b\n1,2\n" * 100)
    prepared = Prepared([part], tmp_path / "work", in_memory=True, room=lambda: 1 << 40)
    try:
        got = prepared.get(part.uri)
        assert isinstance(got, Path) and got.parent == tmp_path / "work", got
        assert got.read_text() == "a,b\n1,2\n" * 100 and prepared.in_memory() == 0
    finally:
        prepared.close()
    assert list((tmp_path / "work").iterdir()) == []


def test_closing_early_stops_the_rest_and_cleans_up(tmp_path: Path) -> None:
    parts = [_part(tmp_path, f"p{i}.csv.gz", f"row {i}\n" * 5000) for i in range(5)]
    for in_memory in (False, True):
        prepared = Prepared(parts, tmp_path / "work", threads=2, ahead=2, in_memory=in_memory)
        assert isinstance(prepared.get(parts[0].uri), Path)
        prepared.close()  # a rejected delivery: the waiting parts are never inflated
        assert _held(prepared, tmp_path / "work") == 0


def test_text_size_of_a_gzip_is_its_inflated_size(tmp_path: Path) -> None:
    part = _part(tmp_path, "p.csv.gz", "x" * 100_000)
    assert part.size < 1000 and text_size(part.local_path) == 100_000
    # several members, the last one empty (bgzip ends so): the trailer says 0, yet there is text
    (tmp_path / "multi.csv.gz").write_bytes(gzip.compress(b"a,b\n1,2\n") + gzip.compress(b""))
    assert text_size(tmp_path / "multi.csv.gz") > 0
    (tmp_path / "empty.csv.gz").write_bytes(gzip.compress(b""))
    assert text_size(tmp_path / "empty.csv.gz") == 0
    plain = tmp_path / "p.csv"
    plain.write_text("abc\n")
    assert text_size(plain) == 4


def test_a_run_leaves_no_inflated_part_behind(tmp_path: Path) -> None:
    export = Cur2Export(tmp_path / "landing")
    export.deliver("2026-11", [hours(f"i-{i}", NOV, 24, "1.00") for i in range(4)], "e1")
    write_config(tmp_path, "sources:\n  - {name: cur2, kind: aws_cur2, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        report = ingest(con, config)
        assert not report.rejected and report.rows_into("billing_line_items") == 96, report.summary()
        assert con.execute("select count(*), sum(billed_cost) from billing_line_items").fetchall() == [
            (96, 96)
        ]
        cache = config.cache_path / "cur2" / "prepared"
        assert not cache.exists() or list(cache.iterdir()) == []
        # a restatement whose third part has a damaged gzip checksum: DuckDB's own gzip reader does not check
        # it (the part opens and its sample reads); ISA-L does, while the first two parts load. The month keeps
        # its first version, the part is named with its problem, nothing is left behind
        parts = export.deliver("2026-11", [hours(f"i-{i}", NOV, 24, "2.00") for i in range(4)], "e2")
        data = parts[2].read_bytes()
        parts[2].write_bytes(data[:-8] + bytes([data[-8] ^ 0xFF]) + data[-7:])
        report = ingest(con, config)
        by_name = {Path(o.uri).name: o for o in report.outcomes}
        assert {o.status for o in by_name.values()} == {"rejected"}
        damaged = by_name["cur2-00003.csv.gz"].error or ""
        assert damaged.startswith(f"{parts[2]}: cannot read: CRC check failed"), damaged
        assert "not loaded: cur2-00003.csv.gz of the same delivery was rejected" in (
            by_name["cur2-00001.csv.gz"].error or ""
        )
        assert con.execute("select count(*), sum(billed_cost) from billing_line_items").fetchall() == [
            (96, 96)
        ]
        assert not cache.exists() or list(cache.iterdir()) == []
    finally:
        con.close()


def test_a_gzip_in_a_hive_style_folder_reads_like_its_decompressed_copy(tmp_path: Path) -> None:
    """The probe opens the .gz where it lies (`billing_period=2026-11/`), the load its copy in the cache:
    neither reads the folder name as a column (the demo's FOCUS layout)."""
    folder = tmp_path / "landing" / "billing_period=2026-11"
    folder.mkdir(parents=True)
    (folder / "focus.csv.gz").write_bytes(gzip.compress(FOCUS_SAMPLE.read_bytes()))
    write_config(tmp_path, "sources:\n  - {name: focus, kind: focus, uri: landing/}\n")
    config = load_config(tmp_path / "wastewatch.yaml")
    con = new_warehouse(config.warehouse_path)
    try:
        report = ingest(con, config)
        assert not report.rejected, report.summary()
        got = con.execute(
            "select count(*), round(sum(billed_cost), 2), count(*) filter (where x_extra ->> 'billing_period' is not null) "
            "from billing_line_items"
        ).fetchall()
        assert got == [(1000, Decimal("20.52"), 0)]
    finally:
        con.close()


def _damaged(folder: Path, name: str) -> SourceFile:
    """A gzip whose first deflate block has an invalid type: ISA-L raises its own IsalError (not an OSError)."""
    data = bytearray(gzip.compress(b"a,b\n" + b"1,2\n" * 5000))
    data[10] = 0xFF
    path = folder / name
    path.write_bytes(bytes(data))
    return SourceFile(uri=str(path), local_path=path, relative=name, size=len(data), modified_at=NOV)


def test_parts_are_handed_out_in_load_order_whatever_the_threads(tmp_path: Path) -> None:
    """With more threads than places, a later part must never take the place the next load waits for."""
    for attempt in range(100):
        folder = tmp_path / f"a{attempt}"
        folder.mkdir()
        parts = [_part(folder, f"p{i}.csv.gz", f"{i}\n" * 10) for i in range(8)]
        prepared = Prepared(parts, folder / "work", threads=8, ahead=2, in_memory=attempt % 2 == 0)
        try:
            for i, part in enumerate(parts):
                got = prepared.get(part.uri, timeout=10)
                assert isinstance(got, Path) and got.read_text() == f"{i}\n" * 10
                assert _held(prepared, folder / "work") <= 2
                prepared.done(part.uri)
        finally:
            prepared.close()


def test_a_damaged_part_is_reported_and_closing_after_it_does_not_wait(tmp_path: Path) -> None:
    import threading

    from pipelines.ingest.billing.decompress import gzip_problem

    parts = [_damaged(tmp_path, "bad.csv.gz")] + [
        _part(tmp_path, f"p{i}.csv.gz", f"row {i}\n" * 200_000) for i in range(4)
    ]
    problem = gzip_problem(parts[0].local_path)
    assert problem is not None and "Invalid deflate block" in str(problem)
    prepared = Prepared(parts, tmp_path / "work", threads=2, ahead=2, in_memory=False)
    got = prepared.get(parts[0].uri, timeout=10)
    assert isinstance(got, Exception) and "Invalid deflate block" in str(got)
    # the delivery is rejected now: closing must return though the next parts are inflating or waiting
    closing = threading.Thread(target=prepared.close)
    closing.start()
    closing.join(10)
    assert not closing.is_alive()
    assert list((tmp_path / "work").iterdir()) == []


def test_a_rejection_names_the_gz_not_its_decompressed_copy() -> None:
    from pipelines.errors import RejectedFile
    from pipelines.ingest.modes.deliveries import _named_by_uri

    copies = {"/proc/self/fd/7": "s3://bill/p1.csv.gz", "/proc/self/fd/71": "s3://bill/p2.csv.gz"}
    exc = RejectedFile(
        "s3://bill/p2.csv.gz", 'cannot load: Error when sniffing file "/proc/self/fd/71".', line=3
    )
    got = _named_by_uri(exc, copies)
    assert str(got) == 's3://bill/p2.csv.gz:3: cannot load: Error when sniffing file "s3://bill/p2.csv.gz".'
    assert (got.file, got.line) == (exc.file, exc.line)
    untouched = RejectedFile("x.csv.gz", "cannot read: the gzip stream is truncated")
    assert _named_by_uri(untouched, copies) is untouched


@pytest.mark.skipif(not can_inflate_in_memory(), reason="no memfd on this system")
@pytest.mark.parametrize(("bounded", "in_memory"), [(True, 0), (False, 1)])
def test_a_memory_limit_keeps_parts_on_disk_and_without_one_a_small_part_inflates_in_memory(
    tmp_path: Path, bounded: bool, in_memory: int
) -> None:
    """The billing reader's `prepare`: `bounded` is the config's `duckdb.memory_limit` being set, and then
    nothing is held in memory outside DuckDB's limit (docs/reliability.md)."""
    part = _part(tmp_path, "p0.csv.gz", "a,b\n1,2\n")
    prepared = BillingReader().prepare([part], tmp_path / "work", bounded=bounded)
    try:
        got = prepared.get(part.uri)
        assert isinstance(got, Path) and got.read_text() == "a,b\n1,2\n"
        assert prepared.in_memory() == in_memory
    finally:
        prepared.close()
