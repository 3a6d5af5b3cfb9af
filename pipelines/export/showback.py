"""One month of showback as a chargeback file for finance tools (CSV or Parquet): one row per currency x team
x pool x service, then each team's counted waste (sql/exports/showback_month.sql, docs/showback.md).

The file is ours only when the manifest beside it (`<file>.wastewatch.json`) says so and names its exact
content (sha256): then it is replaced; anything else at the path is refused, naming it, and left alone. The
new file is written beside the old under a hidden name carrying our pid, read back (rows and each currency's
cost must be the month's), the manifest is written to accept both the old and the new content, the file is
renamed into place, and the manifest rewritten to name the new content only: a run killed at any point
leaves the old file or the new one, each accepted by the manifest, and a hidden leftover the next run clears.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from pipelines.export.focus import ExportError, UsageError
from pipelines.lock import pid_alive
from pipelines.warehouse import rows, sql_text, table_exists

FORMATS = ("csv", "parquet")
MANIFEST_KIND = "wastewatch-showback-export"
MANIFEST_VERSION = 1
MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


@dataclass
class ShowbackExport:
    path: Path
    month: str
    rows: int
    totals: dict[str, str]  # per currency: the month's cost, exact, as text
    replaced: bool  # an earlier export of ours was replaced
    cleaned: list[str]  # leftovers of killed runs cleared


def check_month(month: str) -> date:
    """`YYYY-MM` as the month's first day; UsageError for anything else."""
    m = MONTH.match(month)
    if not m:
        raise UsageError(f"not a month: {month!r} (expected YYYY-MM, e.g. 2026-11)")
    return date(int(m.group(1)), int(m.group(2)), 1)


def manifest_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.wastewatch.json")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _read_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest beside `path` when it is one of ours for that file; None when there is none; UsageError
    when something else is there."""
    where = manifest_path(path)
    if not where.exists() and not where.is_symlink():
        return None
    if where.is_symlink() or not where.is_file():
        raise UsageError(f"{where}: not a file of ours; remove it or choose another --out")
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or data.get("kind") != MANIFEST_KIND or data.get("file") != path.name:
        raise UsageError(
            f"{where}: not a wastewatch showback manifest for {path.name}; remove it or choose another --out"
        )
    if int(data.get("manifest_version", 0)) > MANIFEST_VERSION:
        raise UsageError(f"{where}: written by a newer wastewatch; upgrade wastewatch")
    return data


def _owned(path: Path) -> tuple[bool, dict[str, Any] | None]:
    """Whether `path` holds a file we may replace (exists, ours), and its manifest; UsageError naming what
    is there when it is not ours."""
    manifest = _read_manifest(path)
    if not path.exists() and not path.is_symlink():
        return False, manifest
    if path.is_symlink() or not path.is_file():
        raise UsageError(f"{path}: not a regular file; choose another --out")
    if manifest is None or _sha256(path) not in manifest.get("sha256", []):
        raise UsageError(
            f"{path}: a file wastewatch did not write (or changed since: no manifest "
            f"{manifest_path(path).name} names its content); remove it or choose another --out"
        )
    return True, manifest


_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d{1,9})\.wastewatch-tmp$")


def _clean_leftovers(path: Path) -> list[str]:
    """Hidden files of killed exports to the same path (their pid gone) removed; what was removed."""
    out = []
    for entry in path.parent.glob(f".{path.name}.*.wastewatch-tmp"):
        m = _LEFTOVER.match(entry.name)
        if m and m["name"] in (path.name, manifest_path(path).name) and entry.is_file():
            if not entry.is_symlink() and not pid_alive(int(m["pid"])):
                entry.unlink()
                out.append(entry.name)
    return out


def _scratch(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.wastewatch-tmp")


def _write_manifest(path: Path, content: dict[str, Any]) -> None:
    target = manifest_path(path)
    tmp = _scratch(target)
    tmp.write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, target)


def months_held(con: duckdb.DuckDBPyConnection) -> list[str]:
    return sorted({r["month"] for r in rows(con, sql_text("exports", "showback_months"))}, reverse=True)


def _month_totals(con: duckdb.DuckDBPyConnection, month: date) -> dict[str, Decimal]:
    found = rows(con, sql_text("exports", "showback_months"))
    return {r["currency"]: r["cost"] for r in found if r["month"] == f"{month:%Y-%m}"}


def export_showback(con: duckdb.DuckDBPyConnection, month: str, fmt: str, out: Path) -> ShowbackExport:
    """Write `month`'s showback to the file `out` (CSV or Parquet). UsageError (nothing written) for a wrong
    month, format or destination; ExportError when the file written does not read back as the month."""
    first = check_month(month)
    if fmt not in FORMATS:
        raise UsageError(f"not an export format: {fmt!r} (expected csv or parquet)")
    if not table_exists(con, "showback"):
        raise UsageError("the warehouse has no showback mart yet: run `wastewatch transform` first")
    totals = _month_totals(con, first)
    if not totals:
        held = months_held(con)
        raise UsageError(
            f"no showback for {month} in the warehouse (it holds {', '.join(held[:12]) or 'no month'})"
        )
    out = Path(out)
    if not out.parent.is_dir():
        raise UsageError(f"{out.parent}: no such folder")
    cleaned = _clean_leftovers(out)
    replaced, manifest = _owned(out)
    tmp = _scratch(out)
    try:
        query, params = sql_text("exports", "showback_month"), {"month": first}
        expected = len(con.execute(query, params).fetchall())
        rel = con.sql(query, params=params)
        if fmt == "parquet":
            rel.write_parquet(str(tmp), compression="zstd")
            back = "select count(*) as n, currency, sum(cost::decimal(38, 12)) as cost from read_parquet($p)"
        else:
            rel.write_csv(str(tmp), header=True)
            back = (
                "select count(*) as n, currency, sum(cost::decimal(38, 12)) as cost "
                "from read_csv($p, header = true, all_varchar = true)"
            )
        # read back before it replaces anything: every row there, each currency's cost the month's
        found = rows(con, back + " group by currency", {"p": str(tmp)})
        written = sum(int(r["n"]) for r in found)
        got = {r["currency"]: r["cost"] for r in found if r["cost"] != 0 or r["currency"] in totals}
        if written != expected or got != totals:
            raise ExportError(f"{out}: wrote {written} of {expected} row(s) for {month}; nothing replaced")
        digest = _sha256(tmp)
        content = {
            "kind": MANIFEST_KIND,
            "manifest_version": MANIFEST_VERSION,
            "file": out.name,
            "format": fmt,
            "month": month,
            "rows": written,
            "totals": {c: str(v) for c, v in sorted(totals.items())},
            "written_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        # accept the old content and the new until the new is in place
        before = list(manifest.get("sha256", [])) if (manifest and replaced) else []
        _write_manifest(out, {**content, "sha256": [*before, digest]})
        os.replace(tmp, out)
        _write_manifest(out, {**content, "sha256": [digest]})
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return ShowbackExport(out, month, written, content["totals"], replaced, cleaned)
