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

A period is always written whole and replaces the previous export of that period; a reader never sees half
of one. Locally the new partition is written into a hidden sibling folder, then renamed into place (the
folders of a killed run are cleared, or the old partition put back, by the next run). S3 has no rename: the
new files go under a new prefix, then the manifest (one PUT, so readers see the old or the new) names them,
then the old prefix is deleted.
"""

from __future__ import annotations

import json
import os
import re
import shutil
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
from pipelines.s3 import message, split_uri
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
# leftovers of a run killed part-way: `.billing_period=YYYY-MM.<new|old>-<pid>-<hex>`
_LEFTOVER = re.compile(r"^\.(billing_period=\d{4}-\d{2})\.(new|old)-(\d+)-[0-9a-f]+$")


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
    result.cleaned = target.clean_leftovers()
    manifest = target.read_manifest()
    with _scratch(target) as scratch:
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
# where the files go


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
    """A manifest's content, checked; ExportError naming `where` when it is not one of ours."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ExportError(f"{where}: not a JSON manifest ({exc}); move it away or export elsewhere") from None
    if (
        not isinstance(data, dict)
        or data.get("kind") != MANIFEST_KIND
        or not isinstance(data.get("periods"), dict)
    ):
        raise ExportError(
            f"{where}: not a wastewatch FOCUS export manifest (no kind {MANIFEST_KIND!r}); "
            "export into an empty folder or prefix"
        )
    if data.get("manifest_version", 0) > MANIFEST_VERSION:
        raise ExportError(
            f"{where}: manifest version {data['manifest_version']} is newer than this wastewatch "
            f"({MANIFEST_VERSION}); upgrade wastewatch"
        )
    return data


@contextmanager
def _scratch(target: _Target) -> Iterator[Path]:
    """A folder the period files are written into first (beside the destination when it is local)."""
    root = target.scratch_root()
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

    def clean_leftovers(self) -> list[str]:
        raise NotImplementedError

    def read_manifest(self) -> dict[str, Any]:
        raise NotImplementedError

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        raise NotImplementedError

    def publish_period(
        self, period: str, local: Path, names: list[str], manifest: dict[str, Any]
    ) -> tuple[list[str], bool]:
        raise NotImplementedError

    def drop_replaced(self, period: str) -> None:
        raise NotImplementedError


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _LocalTarget(_Target):
    """A folder: each period written into a hidden sibling, then renamed into place."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._old: dict[str, Path] = {}
        if root.exists() and not root.is_dir():
            raise UsageError(f"{root}: not a folder (give --out a folder or an s3:// prefix)")

    def scratch_root(self) -> Path:
        return self.root

    def clean_leftovers(self) -> list[str]:
        """Clear what a killed export left: a half-written partition is deleted; a partition moved aside and
        never replaced is put back. Folders of a live export (another pid) are left alone."""
        if not self.root.is_dir():
            return []
        cleaned: list[str] = []
        for entry in sorted(self.root.iterdir()):
            m = _LEFTOVER.match(entry.name)
            scratch = entry.name.startswith(".focus-export-")
            if not m and not scratch:
                continue
            pid = int(m.group(3)) if m else int(entry.name.split("-")[2])
            if pid != os.getpid() and _pid_alive(pid):
                continue
            final = self.root / m.group(1) if m else None
            if m and m.group(2) == "old" and final is not None and not final.exists():
                entry.rename(final)
                cleaned.append(f"{final.name} put back from {entry.name}")
                continue
            shutil.rmtree(entry, ignore_errors=True)
            cleaned.append(f"{entry.name} removed")
        return cleaned

    def read_manifest(self) -> dict[str, Any]:
        path = self.root / MANIFEST
        if path.exists():
            return parse_manifest(path.read_text(encoding="utf-8"), str(path))
        if self.root.is_dir() and any(
            not e.name.startswith(f"{PARTITION}=") and not e.name.startswith(".") for e in self.root.iterdir()
        ):
            raise UsageError(
                f"{self.root}: not empty and not a FOCUS export (no {MANIFEST}); export into an empty or new folder"
            )
        return empty_manifest()

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
    """s3://bucket/prefix: each period under a new prefix, then the manifest, then the old prefix deleted."""

    def __init__(self, uri: str, s3: Any) -> None:
        try:
            self.bucket, prefix = split_uri(uri)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        self.uri = uri.rstrip("/")
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.s3 = s3
        self._drop: dict[str, list[str]] = {}
        import tempfile

        self._tmp = Path(tempfile.gettempdir())

    def _call(self, what: str, where: str, fn: Callable[..., Any], **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise S3Error(message(where, what, exc)) from None

    def scratch_root(self) -> Path:
        return self._tmp

    def clean_leftovers(self) -> list[str]:
        return []  # objects no manifest names are deleted per period, in drop_replaced

    def _keys(self, prefix: str) -> list[str]:
        keys: list[str] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
            if token:
                kwargs["ContinuationToken"] = token
            page = self._call(
                "cannot list", f"s3://{self.bucket}/{prefix}", self.s3.list_objects_v2, **kwargs
            )
            keys += [o["Key"] for o in page.get("Contents", [])]
            token = page.get("NextContinuationToken") if page.get("IsTruncated") else None
            if not token:
                return keys

    def read_manifest(self) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        key = self.prefix + MANIFEST
        where = f"s3://{self.bucket}/{key}"
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except BotoCoreError as exc:
            raise S3Error(message(where, "cannot read the manifest", exc)) from None
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
                raise S3Error(message(where, "cannot read the manifest", exc)) from None
            others = [
                k for k in self._keys(self.prefix) if not k[len(self.prefix) :].startswith(f"{PARTITION}=")
            ]
            if others:
                raise UsageError(
                    f"{self.uri}: not empty and not a FOCUS export (no {MANIFEST}); export into an empty prefix"
                ) from None
            return empty_manifest()
        self._manifest_at_start = parse_manifest(body.decode("utf-8"), where)
        return self._manifest_at_start

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        manifest["updated_at"] = _now()
        key = self.prefix + MANIFEST
        self._call(
            "cannot write the manifest",
            f"s3://{self.bucket}/{key}",
            self.s3.put_object,
            Bucket=self.bucket,
            Key=key,
            Body=(json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode("utf-8"),
            ContentType="application/json",
        )

    def publish_period(
        self, period: str, local: Path, names: list[str], manifest: dict[str, Any]
    ) -> tuple[list[str], bool]:
        folder = f"{PARTITION}={period}/{_write_id()}"
        files = []
        for name in names:
            rel = f"{folder}/{name}"
            where = f"s3://{self.bucket}/{self.prefix}{rel}"
            self._call(
                "cannot upload",
                where,
                self.s3.upload_file,
                Filename=str(local / name),
                Bucket=self.bucket,
                Key=self.prefix + rel,
            )
            files.append(rel)
        # everything else under the period's folder goes once the manifest names the new files: the previous
        # export, and files of a run killed before its manifest was written
        present = self._keys(f"{self.prefix}{PARTITION}={period}/")
        keep = {self.prefix + f for f in files}
        self._drop[period] = [k for k in present if k not in keep]
        return files, period in manifest["periods"]

    def drop_replaced(self, period: str) -> None:
        keys = self._drop.pop(period, [])
        for start in range(0, len(keys), 1000):
            chunk = keys[start : start + 1000]
            self._call(
                "cannot delete the replaced export",
                f"s3://{self.bucket}/{self.prefix}{PARTITION}={period}/",
                self.s3.delete_objects,
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True},
            )


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
    from pipelines.s3 import client

    def make() -> Any:
        return client(
            Source(name="focus-export", kind="focus", uri=uri, endpoint_url=endpoint_url, region=region)
        )

    return make
