"""Deliveries, the unit of replacement: every file of a billing period that one manifest (CUR 2.0
execution, legacy CUR assembly, Azure export run) lists, or the files of a `BILLING_PERIOD=` folder, or a
single file when the export has no layout. The ingest loop (pipelines/ingest/modes/deliveries.py) replaces
a delivery's period (or file) in one transaction; older versions' files are `superseded`, never read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from pipelines.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.sources.options import BillingOptions


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
