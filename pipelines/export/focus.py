"""The unified bill as a FOCUS 1.2 dataset: one Hive partition per billing period, locally or on S3.

What is written is the warehouse view `focus` (sql/raw/focus.sql): the 57 FOCUS 1.2 columns under their own
names, then wastewatch's `x_` columns, then each non-FOCUS column of the source files (the keys of `x_Extra`)
as a column of its own, prefixed `x_` when the source's name lacks it (FOCUS wants custom columns so named).
Parquet keeps the types (DECIMAL(38, 12) money, UTC timestamps, JSON text); CSV writes timestamps as
`YYYY-MM-DDTHH:MM:SSZ` and money as exact decimal text.

Layout under the destination (a folder, or s3://bucket/prefix):

    _manifest.json                              which files make up each period (readers follow it)
    billing_period=YYYY-MM/part-0.parquet       locally
    billing_period=YYYY-MM/<write id>/part-0.parquet   on S3
    _writes/<write id>.json                     on S3, while a period is being written

A period is always written whole and replaces the previous export of that period; a reader never sees half
of one. Locally the new partition is written into a hidden sibling folder, then renamed into place (the
folders of a killed run are cleared, or the old partition put back, by the next run). S3 has no rename: a
write record names the files the write will upload and replace, then the new files go under a new prefix,
then the manifest (one PUT, so readers see the old or the new) names them, then the old files and the record
are deleted.

An export deletes or replaces only what it can show is ours: the manifest and the files it lists, a write
record and the files it names, and locally the hidden folders whose names carry a killed export's pid. A
destination holding anything else is refused before anything is touched.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipelines.config import Config, Source
from pipelines.errors import S3Error, WarehouseError
from pipelines.lock import pid_alive
from pipelines.net.s3 import message, object_pages, split_uri
from pipelines.warehouse import rows, sql_text

FORMATS = ("parquet", "csv")
MANIFEST = "_manifest.json"
MANIFEST_KIND = "wastewatch-focus-export"
MANIFEST_VERSION = 1
FOCUS_VERSION = "1.2"
PARTITION = "billing_period"
PERIOD = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
# the view's columns the export does not write as they are: the partition key (it is the folder) and the
# JSON of the source's other columns (spread into one column per key)
NOT_WRITTEN = ("x_BillingPeriod", "x_Extra")
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


class ExportError(WarehouseError):
    """The export cannot be written; the message names the destination or period and the problem."""


class UsageError(ExportError):
    """The export was asked for something wrong (a period, a format, a destination): nothing was written."""


@dataclass
class PeriodExport:
    period: str
    lines: int
    files: list[str]  # relative to the destination
    totals: list[dict[str, Any]]  # per currency: lines, billed_cost, effective_cost (exact, as text)
    replaced: bool  # an earlier export of the period was replaced


@dataclass
class ExportResult:
    destination: str
    fmt: str
    periods: list[PeriodExport] = field(default_factory=list)
    cleaned: list[str] = field(default_factory=list)  # leftovers of killed runs cleared (or put back)

    @property
    def lines(self) -> int:
        return sum(p.lines for p in self.periods)


def check_periods(periods: list[str]) -> list[str]:
    """The periods asked for, each `YYYY-MM`, without repeats; UsageError naming a malformed one."""
    bad = [p for p in periods if not PERIOD.match(p)]
    if bad:
        raise UsageError(f"not a billing period: {bad[0]!r} (expected YYYY-MM, e.g. 2024-09)")
    return sorted(set(periods))


def periods_in(con: duckdb.DuckDBPyConnection, periods: list[str] | None = None) -> list[dict[str, Any]]:
    """The billing periods the warehouse holds (all, or those of `periods`), each with its line count."""
    return rows(con, sql_text("exports", "focus_periods"), {"every": not periods, "periods": periods or []})


def export_focus(
    con: duckdb.DuckDBPyConnection,
    destination: str,
    fmt: str = "parquet",
    periods: list[str] | None = None,
    s3_client: Callable[[], Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ExportResult:
    """Write the billing periods asked for (default: every period the warehouse holds) to `destination`.

    `destination` is a folder or s3://bucket/prefix (then `s3_client` makes the boto3 client). A period asked
    for that the warehouse does not hold is a UsageError naming those it does, and nothing is written.
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown export format {fmt!r} (expected one of {', '.join(FORMATS)})")
    asked = check_periods(periods or [])
    found = periods_in(con, asked)
    missing = sorted(set(asked) - {r["period"] for r in found})
    if missing:
        held = [r["period"] for r in periods_in(con)]
        raise UsageError(
            f"no billing lines for period(s) {', '.join(missing)}; the warehouse holds "
            + (", ".join(held) if held else "no billing lines (run `wastewatch ingest` first)")
        )
    if destination.startswith("s3://"):
        if s3_client is None:
            raise UsageError(f"{destination}: no S3 client for an s3:// destination")
        target: _Target = _S3Target(destination, s3_client())
    else:
        target = _LocalTarget(Path(destination))
    result = ExportResult(destination=destination, fmt=fmt)
    manifest = target.read_manifest()
    target.refuse_foreign(manifest)
    result.cleaned = target.clean_leftovers(manifest)
    with _scratch(target.scratch_root()) as scratch:
        for row in found:
            period = row["period"]
            local = scratch / f"{PARTITION}={period}"
            local.mkdir()
            name = f"part-0.{fmt}"
            lines = _write_period(con, period, fmt, local / name)
            totals = _totals(con, period)
            files, replaced = target.publish_period(period, local, [name], manifest)
            result.periods.append(PeriodExport(period, lines, files, totals, replaced))
            manifest["periods"][period] = {
                "format": fmt,
                "files": files,
                "lines": lines,
                "totals": totals,
                "written_at": _now(),
            }
            target.write_manifest(manifest)
            target.drop_replaced(period)
            if progress:
                progress(f"  {PARTITION}={period}: {lines} line(s) -> {', '.join(files)}")
    return result


# ---------------------------------------------------------------------------------------------------------
# what one period's file holds


def _write_period(con: duckdb.DuckDBPyConnection, period: str, fmt: str, path: Path) -> int:
    """Write the period's lines to `path` (Parquet or CSV); the number of lines written."""
    query, params = period_query(con, period, fmt)
    rel = con.sql(query, params=params)
    if fmt == "parquet":
        rel.write_parquet(str(path), compression="zstd")
        read = "select count(*) from read_parquet($p)"
    else:
        rel.write_csv(str(path), header=True)
        read = "select count(*) from read_csv($p, header = true, all_varchar = true)"
    # the file is read back before it is published: a short write never replaces a good partition
    written, expected = int(con.execute(read, {"p": str(path)}).fetchone()[0]), _count(con, period)
    if written != expected:
        raise ExportError(f"{period}: wrote {written} of {expected} line(s) to {path}; nothing replaced")
    return written


def _count(con: duckdb.DuckDBPyConnection, period: str) -> int:
    return sum(
        int(r["lines"]) for r in rows(con, sql_text("exports", "focus_period_totals"), {"period": period})
    )


def _totals(con: duckdb.DuckDBPyConnection, period: str) -> list[dict[str, Any]]:
    out = []
    for r in rows(con, sql_text("exports", "focus_period_totals"), {"period": period}):
        out.append(
            {
                "currency": r["currency"],
                "lines": int(r["lines"]),
                "billed_cost": _decimal_text(r["billed_cost"]),
                "effective_cost": _decimal_text(r["effective_cost"]),
            }
        )
    return out


def _decimal_text(value: Decimal | None) -> str | None:
    return None if value is None else format(value.normalize(), "f")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _column_type(types: list[str]) -> str:
    """The column type for an x_Extra key from the JSON types of its values."""
    found = set(types) - {"NULL"}
    if not found or found == {"VARCHAR"}:
        return "VARCHAR"
    if found == {"BOOLEAN"}:
        return "BOOLEAN"
    if found in ({"BIGINT"}, {"UBIGINT"}):
        return found.pop()
    if found <= {"BIGINT", "UBIGINT", "DOUBLE"}:
        return "DOUBLE"
    return "JSON"


def period_query(con: duckdb.DuckDBPyConnection, period: str, fmt: str) -> tuple[str, dict[str, Any]]:
    """The SELECT that gives one period's lines as the export writes them, with its parameters.

    The view's columns (names from the catalogue), then one column per x_Extra key (names from the data,
    quoted as identifiers; the keys reach the query only as parameters). CSV gets timestamps as ISO 8601 text
    with `Z`.
    """
    columns = [
        (r["column_name"], r["data_type"])
        for r in rows(
            con,
            "select column_name, data_type from duckdb_columns() where database_name = current_database() "
            "and schema_name = 'main' and table_name = 'focus' order by column_index",
        )
        if r["column_name"] not in NOT_WRITTEN
    ]
    extras: list[tuple[str, str, str]] = []  # (key, column name, type)
    for r in rows(con, sql_text("exports", "focus_extra_keys"), {"period": period}):
        key = r["key"]
        name = key if key.lower().startswith("x_") else f"x_{key}"
        if name.lower() not in {n.lower() for _, n, _ in extras}:  # the first of names equal but for case
            extras.append((key, name, _column_type(list(r["types"]))))
    # a source's column wins over wastewatch's own of the same name (it is what the source said)
    spread = {n.lower() for _, n, _ in extras}
    columns = [(c, t) for c, t in columns if c.lower() not in spread]
    select: list[str] = []
    for name, kind in columns:
        if fmt == "csv" and kind.startswith("TIMESTAMP"):
            select.append(f"strftime({_quote(name)}, '{TIMESTAMP_FORMAT}') as {_quote(name)}")
        else:
            select.append(_quote(name))
    params: dict[str, Any] = {"period": period}
    for i, (key, name, kind) in enumerate(extras):
        params[f"k{i}"] = '$."' + key.replace('"', '\\"') + '"'
        if kind == "JSON":
            expr = f"json_extract(x_Extra, $k{i})::varchar"
        else:
            expr = f"json_extract_string(x_Extra, $k{i})::{kind}"
        select.append(f"{expr} as {_quote(name)}")
    base = sql_text("exports", "focus_period").strip().rstrip(";")
    return f"select {', '.join(select)} from ({base}) as lines", params  # noqa: S608 (identifiers only)


# ---------------------------------------------------------------------------------------------------------
# where the files go, and which of the files there are ours


def _now() -> str:
    return datetime.now(UTC).strftime(TIMESTAMP_FORMAT)


def _write_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]


def empty_manifest() -> dict[str, Any]:
    return {
        "kind": MANIFEST_KIND,
        "manifest_version": MANIFEST_VERSION,
        "focus_version": FOCUS_VERSION,
        "partition": PARTITION,
        "updated_at": None,
        "periods": {},
    }


def parse_manifest(text: str, where: str) -> dict[str, Any]:
    """A manifest's content, checked; UsageError naming `where` when it is not one of ours."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{where}: not a JSON manifest ({exc}); move it away or export elsewhere") from None
    if (
        not isinstance(data, dict)
        or data.get("kind") != MANIFEST_KIND
        or not isinstance(data.get("periods"), dict)
    ):
        raise UsageError(
            f"{where}: not a wastewatch FOCUS export manifest (no kind {MANIFEST_KIND!r}); "
            "export into an empty folder or prefix"
        )
    if data.get("manifest_version", 0) > MANIFEST_VERSION:
        raise UsageError(
            f"{where}: manifest version {data['manifest_version']} is newer than this wastewatch "
            f"({MANIFEST_VERSION}); upgrade wastewatch"
        )
    return data


def _inside(path: str, folder: str) -> bool:
    """Whether a relative path lies inside `folder` (and has no empty, `.` or `..` part)."""
    return path.startswith(folder) and all(part not in ("", ".", "..") for part in path.split("/"))


def manifest_files(manifest: dict[str, Any]) -> dict[str, list[str]]:
    """Each period's files as the manifest lists them; a listed path outside the period's own folder is left
    out, so that a manifest never makes anything else count as ours."""
    out: dict[str, list[str]] = {}
    for period, entry in manifest["periods"].items():
        files = entry.get("files") if isinstance(entry, dict) else None
        if PERIOD.match(str(period)) and isinstance(files, list):
            folder = f"{PARTITION}={period}/"
            out[period] = [f for f in files if isinstance(f, str) and _inside(f, folder)]
    return out


def _listed(manifest: dict[str, Any]) -> set[str]:
    return {f for files in manifest_files(manifest).values() for f in files}


def foreign_error(where: str, foreign: list[str]) -> UsageError:
    """The refusal of a destination holding files no export of ours wrote: one line naming them."""
    shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
    return UsageError(
        f"{where}: holds {len(foreign)} file(s) no wastewatch FOCUS export wrote ({shown}); nothing was "
        "touched: move them away, or export into an empty or new folder or prefix"
    )


# an S3 write's record, put before its upload starts: `_writes/<write id>.json`
WRITES = "_writes"
WRITE_KIND = "wastewatch-focus-export-write"
_WRITE_ID = r"\d{8}T\d{6}Z-[0-9a-f]{8}"
_RECORD = re.compile(rf"^{WRITES}/({_WRITE_ID})\.json$")


def write_record(period: str, write_id: str, files: list[str], replaces: list[str]) -> dict[str, Any]:
    """What an S3 write may leave behind if it is killed: the files it uploads and those it then deletes."""
    return {
        "kind": WRITE_KIND,
        "write_id": write_id,
        "period": period,
        "files": files,
        "replaces": replaces,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started_at": _now(),
    }


def parse_write_record(text: str, write_id: str) -> dict[str, Any] | None:
    """A write record of ours for `write_id`, or None: its new files must lie in its own write folder
    (`billing_period=P/<write id>/`) and those it replaces in its period's folder."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("kind") != WRITE_KIND or data.get("write_id") != write_id:
        return None
    period, files, replaces = data.get("period"), data.get("files"), data.get("replaces")
    if (
        not isinstance(period, str)
        or not PERIOD.match(period)
        or not isinstance(files, list)
        or not isinstance(replaces, list)
        or not isinstance(data.get("pid"), int)
        or not 0 < data["pid"] < 2**31
        or not isinstance(data.get("host"), str)
    ):
        return None
    own, folder = f"{PARTITION}={period}/{write_id}/", f"{PARTITION}={period}/"
    if all(isinstance(f, str) and _inside(f, own) for f in files) and all(
        isinstance(f, str) and _inside(f, folder) for f in replaces
    ):
        return data
    return None


# scratch folders the period files are written into before they are published (in a local destination, or in
# the system temp folder for S3), and what a killed local export leaves: the period's new partition being
# renamed in, the previous one moved aside, the manifest being replaced. Each name carries its export's pid.
_SCRATCH = re.compile(r"^\.focus-export-(\d{1,9})-[0-9a-f]{8}$")
_LEFTOVER = re.compile(rf"^\.({PARTITION}=(\d{{4}}-\d{{2}}))\.(new|old)-(\d{{1,9}})-[0-9a-f]+$")
_DATA_FILE = re.compile(rf"^part-\d+\.({'|'.join(FORMATS)})$")
_MANIFEST_TMP = re.compile(rf"^\.{re.escape(MANIFEST)}\.(\d{{1,9}})\.tmp$")


def _gone(pid: int) -> bool:
    """Whether the export process `pid` is gone: this process and any that exists are not."""
    return pid != os.getpid() and not pid_alive(pid)


def _own_dir(path: Path) -> bool:
    """A real folder (not a link) of this user."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


def clean_scratch(root: Path) -> list[Path]:
    """Remove the scratch folders in `root` of exports whose process is gone (this user's only); those of a
    live process are left alone. The folders removed."""
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for entry in sorted(root.iterdir()):
        m = _SCRATCH.match(entry.name)
        if m and _own_dir(entry) and _gone(int(m.group(1))):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


@contextmanager
def _scratch(root: Path) -> Iterator[Path]:
    """A folder the period files are written into first, removed after (a killed run's by the next run)."""
    root.mkdir(parents=True, exist_ok=True)
    folder = root / f".focus-export-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class _Target:
    def scratch_root(self) -> Path:
        raise NotImplementedError

    def read_manifest(self) -> dict[str, Any]:
        raise NotImplementedError

    def refuse_foreign(self, manifest: dict[str, Any]) -> None:
        """UsageError naming what the destination holds that no export of ours wrote; nothing is touched."""
        raise NotImplementedError

    def clean_leftovers(self, manifest: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        raise NotImplementedError

    def publish_period(
        self, period: str, local: Path, names: list[str], manifest: dict[str, Any]
    ) -> tuple[list[str], bool]:
        raise NotImplementedError

    def drop_replaced(self, period: str) -> None:
        raise NotImplementedError


class _LocalTarget(_Target):
    """A folder: each period written into a hidden sibling, then renamed into place."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._old: dict[str, Path] = {}
        if root.exists() and not root.is_dir():
            raise UsageError(f"{root}: not a folder (give --out a folder or an s3:// prefix)")

    def scratch_root(self) -> Path:
        return self.root

    def read_manifest(self) -> dict[str, Any]:
        path = self.root / MANIFEST
        if path.exists():
            return parse_manifest(path.read_text(encoding="utf-8"), str(path))
        return empty_manifest()

    def _leftovers(self) -> list[tuple[Path, re.Match[str]]]:
        """The hidden folders and manifest copies a killed export left at the top of the destination."""
        if not self.root.is_dir():
            return []
        out = []
        for entry in sorted(self.root.iterdir()):
            m = _LEFTOVER.match(entry.name) or _SCRATCH.match(entry.name)
            if m and _own_dir(entry):
                out.append((entry, m))
            elif (m := _MANIFEST_TMP.match(entry.name)) and entry.is_file() and not entry.is_symlink():
                out.append((entry, m))
        return out

    def refuse_foreign(self, manifest: dict[str, Any]) -> None:
        """Ours: the manifest, the files it lists, a killed export's leftovers (their names carry its pid), and
        the data files of a partition a killed export renamed in after moving the previous one aside (its
        `.old-` folder says so). Anything else, files, links and empty folders alike, is foreign."""
        if not self.root.is_dir():
            return
        ours = {MANIFEST, *_listed(manifest)}
        found = self._leftovers()
        leftovers = {entry.name for entry, _ in found}
        # the data files in a partition whose previous version a killed export moved aside: it renamed them in
        ours |= {
            f"{m.group(1)}/{p.name}"
            for _, m in found
            if m.re is _LEFTOVER and m.group(3) == "old" and (self.root / m.group(1)).is_dir()
            for p in (self.root / m.group(1)).iterdir()
            if _DATA_FILE.match(p.name) and p.is_file() and not p.is_symlink()
        }
        foreign: list[str] = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            here = Path(dirpath)
            rel = here.relative_to(self.root).as_posix()
            prefix = "" if rel == "." else rel + "/"
            links = [d for d in dirnames if (here / d).is_symlink()]
            dirnames[:] = sorted(d for d in dirnames if d not in links and prefix + d not in leftovers)
            for name in sorted([*filenames, *links]):
                path = prefix + name
                if path not in ours and path not in leftovers:
                    foreign.append(path)
            if prefix and not dirnames and not filenames and not links:
                foreign.append(prefix)
        if foreign:
            raise foreign_error(str(self.root), sorted(foreign))

    def clean_leftovers(self, manifest: dict[str, Any]) -> list[str]:
        """Clear what killed exports left (process gone; a live one's are left alone): scratch folders,
        half-written partitions and manifest copies are deleted. A partition moved aside is put back unless the
        manifest already names what replaced it."""
        cleaned: list[str] = []
        listed = manifest_files(manifest)
        for entry, m in self._leftovers():
            pid = int(m.group(4) if m.re is _LEFTOVER else m.group(1))
            if not _gone(pid):
                continue
            if m.re is _MANIFEST_TMP:
                entry.unlink(missing_ok=True)
                cleaned.append(f"{entry.name} removed")
                continue
            if m.re is _LEFTOVER and m.group(3) == "old":
                final = self.root / m.group(1)
                in_place = (
                    sorted(f"{m.group(1)}/{p.name}" for p in final.iterdir()) if final.is_dir() else None
                )
                if in_place != sorted(listed.get(m.group(2), [])):
                    # the manifest still names the partition moved aside: it goes back, and what the killed
                    # export renamed in (its own, the `.old-` folder says so) is removed
                    if in_place is not None:
                        shutil.rmtree(final)
                    entry.rename(final)
                    cleaned.append(f"{final.name} put back from {entry.name}")
                    continue
            shutil.rmtree(entry, ignore_errors=True)
            cleaned.append(f"{entry.name} removed")
        return cleaned

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        manifest["updated_at"] = _now()
        tmp = self.root / f".{MANIFEST}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, self.root / MANIFEST)

    def publish_period(
        self, period: str, local: Path, names: list[str], manifest: dict[str, Any]
    ) -> tuple[list[str], bool]:
        tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        final = self.root / f"{PARTITION}={period}"
        new = self.root / f".{PARTITION}={period}.new-{tag}"
        local.rename(new)  # scratch is inside the destination: the same file system
        replaced = final.exists()
        if replaced:
            old = self.root / f".{PARTITION}={period}.old-{tag}"
            final.rename(old)
            self._old[period] = old
        new.rename(final)
        return [f"{PARTITION}={period}/{n}" for n in names], replaced

    def drop_replaced(self, period: str) -> None:
        old = self._old.pop(period, None)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


class _S3Target(_Target):
    """s3://bucket/prefix: each period under a new prefix (recorded first), then the manifest, then the old
    files deleted."""

    def __init__(self, uri: str, s3: Any) -> None:
        try:
            self.bucket, prefix = split_uri(uri)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        self.uri = uri.rstrip("/")
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.s3 = s3
        self._tmp = Path(tempfile.gettempdir())
        self._present: set[str] = set()  # keys relative to the prefix, as listed at the start
        self._records: dict[str, dict[str, Any]] = {}  # write id -> its record, as found at the start
        self._drop: dict[str, list[str]] = {}  # period -> what goes once the manifest names the new files

    def _where(self, rel: str) -> str:
        return f"s3://{self.bucket}/{self.prefix}{rel}"

    def _call(self, what: str, where: str, fn: Callable[..., Any], **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise S3Error(message(where, what, exc)) from None

    def _put(self, rel: str, data: dict[str, Any], what: str) -> None:
        self._call(
            what,
            self._where(rel),
            self.s3.put_object,
            Bucket=self.bucket,
            Key=self.prefix + rel,
            Body=(json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"),
            ContentType="application/json",
        )

    def _get(self, rel: str, what: str) -> str:
        body = self._call(
            what, self._where(rel), self.s3.get_object, Bucket=self.bucket, Key=self.prefix + rel
        )
        return body["Body"].read().decode("utf-8", errors="replace")

    def _delete(self, rels: list[str], what: str) -> None:
        for start in range(0, len(rels), 1000):
            chunk = rels[start : start + 1000]
            self._call(
                what,
                self._where(chunk[0]),
                self.s3.delete_objects,
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": self.prefix + k} for k in chunk], "Quiet": True},
            )

    def scratch_root(self) -> Path:
        return self._tmp

    def read_manifest(self) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        where = self._where(MANIFEST)
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=self.prefix + MANIFEST)["Body"].read()
        except BotoCoreError as exc:
            raise S3Error(message(where, "cannot read the manifest", exc)) from None
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
                raise S3Error(message(where, "cannot read the manifest", exc)) from None
            return empty_manifest()
        return parse_manifest(body.decode("utf-8", errors="replace"), where)

    def refuse_foreign(self, manifest: dict[str, Any]) -> None:
        """Ours: the manifest, the files it lists, our write records and the files they name. Anything else
        under the prefix is foreign (a zero-byte folder marker holds nothing and is not)."""
        ours = {MANIFEST, *_listed(manifest)}
        present: set[str] = set()
        unknown: list[str] = []
        for page in object_pages(self.s3, self.bucket, self.prefix):
            for entry in page:
                rel = entry["Key"][len(self.prefix) :]
                if (rel == "" or rel.endswith("/")) and not entry.get("Size"):
                    continue
                present.add(rel)
                if rel in ours:
                    continue
                m = _RECORD.match(rel)
                if m:
                    record = parse_write_record(self._get(rel, "cannot read the write record"), m.group(1))
                    if record is not None:
                        self._records[m.group(1)] = record
                        continue
                unknown.append(rel)
        recorded = {f for r in self._records.values() for f in (*r["files"], *r["replaces"])}
        self._present = present
        foreign = sorted(f for f in unknown if f not in recorded)
        if foreign:
            raise foreign_error(self.uri, foreign)

    def clean_leftovers(self, manifest: dict[str, Any]) -> list[str]:
        """Scratch folders of dead exports in the temp folder are removed. Each write record of an export that
        is not running (on another host: taken as not running) has its files the manifest does not name
        deleted (an upload killed before the manifest, or the files it replaced), then goes itself."""
        cleaned = [f"temporary folder {p} removed" for p in clean_scratch(self._tmp)]
        listed = _listed(manifest)
        for write_id, record in sorted(self._records.items()):
            if record["host"] == socket.gethostname() and not _gone(record["pid"]):
                continue
            stray = sorted(
                f for f in (*record["files"], *record["replaces"]) if f in self._present and f not in listed
            )
            self._delete(stray, "cannot delete a killed export's files")
            self._delete([f"{WRITES}/{write_id}.json"], "cannot delete a write record")
            cleaned.append(
                f"{WRITES}/{write_id}.json: {len(stray)} file(s) of an unfinished export removed"
                + (f" ({', '.join(stray)})" if stray else "")
            )
        return cleaned

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        manifest["updated_at"] = _now()
        self._put(MANIFEST, manifest, "cannot write the manifest")

    def publish_period(
        self, period: str, local: Path, names: list[str], manifest: dict[str, Any]
    ) -> tuple[list[str], bool]:
        write_id = _write_id()
        files = [f"{PARTITION}={period}/{write_id}/{name}" for name in names]
        replaces = [f for f in manifest_files(manifest).get(period, []) if f not in files]
        record = f"{WRITES}/{write_id}.json"
        # recorded before the upload starts: a killed upload that no manifest names is still known to be ours
        self._put(record, write_record(period, write_id, files, replaces), "cannot record the write")
        for name, rel in zip(names, files, strict=True):
            self._call(
                "cannot upload",
                self._where(rel),
                self.s3.upload_file,
                Filename=str(local / name),
                Bucket=self.bucket,
                Key=self.prefix + rel,
            )
        self._drop[period] = [*replaces, record]
        return files, period in manifest["periods"]

    def drop_replaced(self, period: str) -> None:
        *replaced, record = self._drop.pop(period)
        self._delete(replaced, "cannot delete the replaced export")
        self._delete([record], "cannot delete the write record")  # last: until then it names what to clean


def read_manifest(destination: str, s3: Any = None) -> dict[str, Any]:
    """The manifest of an export (local folder, or s3://bucket/prefix with a boto3 client)."""
    if destination.startswith("s3://"):
        return _S3Target(destination, s3).read_manifest()
    return _LocalTarget(Path(destination)).read_manifest()


def default_destination(config: Config) -> str:
    """`exports/focus/` beside the config file."""
    return str(config.resolve("exports/focus"))


def s3_client_maker(uri: str, endpoint_url: str | None, region: str | None) -> Callable[[], Any]:
    """A maker of the boto3 client for an s3:// destination (default credential chain, its endpoint)."""
    from pipelines.net.s3 import client

    def make() -> Any:
        return client(
            Source(name="focus-export", kind="focus", uri=uri, endpoint_url=endpoint_url, region=region)
        )

    return make
