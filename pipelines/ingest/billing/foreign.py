"""Billing files of formats wastewatch does not read, recognised and refused with what to export instead,
whichever billing kind the source names (docs/billing.md, "Not supported"): OCI's native cost report,
Google's legacy billing file export (CSV or JSON, retired in 2019) and a JSON array where newline-delimited
JSON is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.errors import RejectedFile
from pipelines.ingest.files import SourceFile
from pipelines.ingest.sniff import HEAD_BYTES, open_bytes

if TYPE_CHECKING:
    from pipelines.ingest.billing.relation import Relation

# OCI's native cost report (reports/cost-csv/*.csv.gz): recognised by these columns, then rejected with a
# pointer to OCI's FOCUS reports, which the focus reader loads
OCI_NATIVE_COLUMNS = ("lineitem/referenceno", "lineitem/intervalusagestart", "cost/mycost")
OCI_NATIVE_UNSUPPORTED = (
    "not supported: an OCI native cost report (lineItem/referenceNo, lineItem/intervalUsageStart, "
    "cost/myCost, ...); use OCI's FOCUS export instead (the FOCUS reports OCI writes next to its cost "
    "reports), loaded with kind: focus"
)

# Google's billing export to a file in a Cloud Storage bucket (CSV or JSON), retired in 2019: the CSV's
# header names (`Account ID,Line Item,Start Time,End Time,Project,Measurement1,...,Cost,Currency,...`) and
# the JSON's keys (an array of objects: accountId, lineItemId, startTime, endTime, measurements, cost)
GCP_LEGACY_CSV = ("account id", "line item", "start time", "end time")
GCP_LEGACY_JSON = ('"accountId"', '"lineItemId"')
GCP_LEGACY_UNSUPPORTED = (
    "not supported: Google's legacy billing file export ({seen}), retired in 2019; export billing to "
    "BigQuery (Billing > Billing export > BigQuery export) and read that export, or its CSV or "
    "newline-delimited JSON extract, with kind: gcp (BigQuery holds no months from before the export was "
    "enabled)"
)
JSON_ARRAY = (
    "not newline-delimited JSON: the file is one JSON array; export the BigQuery billing table with "
    "EXPORT DATA ... FORMAT = JSON, or bq extract --destination_format NEWLINE_DELIMITED_JSON (one "
    "object per line)"
)


def reject_foreign(rel: Relation, file: SourceFile) -> None:
    """Raise the documented rejection when the file's columns are those of a format named above (called by
    every billing reader when the columns it needs are missing)."""
    names = {name.lower().strip() for name in rel.types}
    line = 1 if rel.fmt == "csv" else None
    if all(c in names for c in OCI_NATIVE_COLUMNS):
        raise RejectedFile(file.uri, OCI_NATIVE_UNSUPPORTED, line=line)
    if all(c in names for c in GCP_LEGACY_CSV):
        seen = "CSV: Account ID, Line Item, Start Time, End Time, Project, Measurement1, ..., Cost"
        raise RejectedFile(file.uri, GCP_LEGACY_UNSUPPORTED.format(seen=seen), line=line)


GCP_LEGACY_JSON_SEEN = "JSON: an array of objects with accountId, lineItemId, startTime, measurements, cost"


def _json_head(path: Path, size: int = HEAD_BYTES) -> str:
    with open_bytes(path) as f:
        return f.read(size).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")


def legacy_google_json(path: Path) -> str | None:
    """The refusal of Google's legacy billing file export when the JSON file at `path` is one (an array of
    objects with its keys), else None; for a folder's .json files that a source's kind does not read."""
    try:  # a manifest (an object) is told by its first bytes, read for every listing
        head = _json_head(path, 256)
        if head.startswith("["):
            head = _json_head(path)
    except (OSError, EOFError, ValueError):
        return None
    if head.startswith("[") and all(key in head for key in GCP_LEGACY_JSON):
        return GCP_LEGACY_UNSUPPORTED.format(seen=GCP_LEGACY_JSON_SEEN)
    return None


def reject_json_array(file: SourceFile, path: Path) -> None:
    """Raise the rejection of a JSON file that is one array, not one object per line: Google's legacy file
    export when its objects have its keys, else any JSON array."""
    head = _json_head(path)
    if not head.startswith("["):
        return
    if all(key in head for key in GCP_LEGACY_JSON):
        raise RejectedFile(file.uri, GCP_LEGACY_UNSUPPORTED.format(seen=GCP_LEGACY_JSON_SEEN), line=1)
    raise RejectedFile(file.uri, JSON_ARRAY, line=1)
