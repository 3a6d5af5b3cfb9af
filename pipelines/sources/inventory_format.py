"""What an Amazon S3 Inventory report is, for both things that read one: the s3_inventory reader
(pipelines/ingest/readers/s3_inventory/) and `engine: spark` (pipelines/transform/spark/storage_objects.py).

The fields a report's `fileSchema` names and the storage_objects columns they land in, and where a report's
data files lie (relative to its manifest).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# inventory field (lower case, no separators) -> storage_objects column
FIELDS = {
    "bucket": "bucket",
    "key": "key",
    "versionid": "version_id",
    "islatest": "is_latest",
    "isdeletemarker": "is_delete_marker",
    "size": "size_bytes",
    "lastmodifieddate": "last_modified",
    "etag": "etag",
    "storageclass": "storage_class",
    "ismultipartuploaded": "is_multipart",
    "encryptionstatus": "encryption_status",
    "checksumalgorithm": "checksum_algorithm",
}
REQUIRED = ("Bucket", "Key", "Size")


def norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def schema_fields(schema: str) -> list[str]:
    """`Bucket, Key, Size, ...` (CSV), `struct<bucket:string,...>` or `message s3.inventory { ... }`."""
    s = schema.strip()
    if s.lower().startswith("struct<"):
        return [part.split(":", 1)[0].strip() for part in s[len("struct<") : -1].split(",") if part.strip()]
    if s.lower().startswith("message"):
        return re.findall(r"\b(?:required|optional)\s+\w+\s+(\w+)", s)
    return [f.strip() for f in s.split(",") if f.strip()]


def destination_bucket(doc: dict[str, Any], manifest_bucket: str) -> str:
    """The bucket a report's data file keys are relative to: its `destinationBucket` (an ARN), else the
    bucket the manifest itself lies in."""
    dest = str(doc.get("destinationBucket") or "")
    return dest.rsplit(":", 1)[-1] if dest else manifest_bucket


def local_data_file(manifest: Path, key: str) -> tuple[Path | None, list[str]]:
    """A data file of a report copied to a local folder: its key is relative to the destination bucket,
    whose root is an ancestor of the manifest's folder (or, for a copied report, its data/ sibling).
    (The file, or None, and the folders looked under.)"""
    parts = key.lstrip("/").split("/")
    tried: list[str] = []
    for ancestor in manifest.resolve().parents:
        for start in range(len(parts) - 1) if len(parts) > 1 else (0,):
            candidate = ancestor.joinpath(*parts[start:])
            if candidate.is_file():
                return candidate, tried
        tried.append(str(ancestor))
        if len(tried) > 6:
            break
    return None, tried
