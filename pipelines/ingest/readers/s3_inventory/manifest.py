"""An S3 Inventory manifest.json: parsed, dated, and its data files checked against its sizes and MD5s."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.errors import RejectedFile
from pipelines.sources.inventory_format import REQUIRED, norm, schema_fields

STAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2})-(\d{2})Z$")


@dataclass
class ManifestRef:
    uri: str
    folder: str  # the report's dated folder name (YYYY-MM-DDTHH-MMZ) when it has one
    group: str  # the inventory configuration's folder (reports of one configuration supersede each other)
    local_path: Path | None = None
    size: int | None = None
    modified_at: datetime | None = None
    etag: str | None = None


@dataclass
class Manifest:
    ref: ManifestRef
    text: str
    source_bucket: str
    fmt: str  # csv | parquet
    fields: list[str]
    files: list[dict[str, Any]]
    created_at: datetime
    md5: str


def parse_manifest(ref: ManifestRef, data: bytes) -> Manifest:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RejectedFile(ref.uri, f"manifest is not UTF-8 text: {exc.reason}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RejectedFile(ref.uri, f"manifest is not valid JSON: {exc.msg}", line=exc.lineno) from None
    if not isinstance(doc, dict):
        raise RejectedFile(ref.uri, "manifest is not a JSON object")
    missing = [k for k in ("sourceBucket", "fileFormat", "fileSchema", "files") if k not in doc]
    if missing:
        raise RejectedFile(ref.uri, f"manifest lacks {', '.join(missing)}")
    fmt = str(doc["fileFormat"]).strip().lower()
    if fmt == "orc":
        raise RejectedFile(ref.uri, "ORC inventory reports are not supported; configure CSV or Parquet")
    if fmt not in ("csv", "parquet"):
        raise RejectedFile(ref.uri, f"fileFormat {doc['fileFormat']!r}: expected CSV or Parquet")
    fields = schema_fields(str(doc["fileSchema"]))
    have = {norm(f) for f in fields}
    lacking = [f for f in REQUIRED if norm(f) not in have]
    if lacking:
        raise RejectedFile(
            ref.uri,
            f"fileSchema lacks {', '.join(lacking)} (it has: {doc['fileSchema']}); "
            "configure the inventory with the Size field",
        )
    files = doc["files"]
    if not isinstance(files, list) or not all(isinstance(f, dict) and f.get("key") for f in files):
        raise RejectedFile(ref.uri, "files must be a list of {key, size, MD5checksum}")
    return Manifest(
        ref=ref,
        text=text,
        source_bucket=str(doc["sourceBucket"]),
        fmt=fmt,
        fields=fields,
        files=files,
        created_at=_created(doc, ref),
        md5=hashlib.md5(data).hexdigest(),  # noqa: S324 - a content fingerprint, as manifest.checksum is
    )


def _created(doc: dict[str, Any], ref: ManifestRef) -> datetime:
    stamp = doc.get("creationTimestamp")
    if stamp is not None:
        try:
            return datetime.fromtimestamp(int(str(stamp)) / 1000, UTC).replace(tzinfo=None)
        except (ValueError, OverflowError, OSError):
            raise RejectedFile(
                ref.uri, f"creationTimestamp {stamp!r}: expected milliseconds since 1970 as a string"
            ) from None
    m = STAMP.match(ref.folder)
    if m:
        y, mo, d, h, mi = (int(x) for x in m.groups())
        return datetime(y, mo, d, h, mi)
    if ref.modified_at:
        return ref.modified_at
    raise RejectedFile(ref.uri, "cannot tell the inventory's date: no creationTimestamp and no dated folder")


def verify(m: Manifest, paths: list[Path]) -> None:
    for i, (entry, path) in enumerate(zip(m.files, paths, strict=True)):
        size = path.stat().st_size
        want_size = entry.get("size")
        if want_size is not None and int(want_size) != size:
            raise RejectedFile(
                m.ref.uri,
                f"files[{i}] {entry['key']}: {size:,} bytes, the manifest says {int(want_size):,} "
                "(truncated or replaced)",
            )
        want = entry.get("MD5checksum")
        if want:
            h = hashlib.md5()  # noqa: S324 - the checksum S3 Inventory publishes
            with path.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 22), b""):
                    h.update(chunk)
            if h.hexdigest() != str(want).lower():
                raise RejectedFile(
                    m.ref.uri,
                    f"files[{i}] {entry['key']}: MD5 {h.hexdigest()} differs from the manifest's {want}",
                )


# ------------------------------------------------------------------------------------------ loading
