"""Incremental, idempotent ingestion: the ledger decides what is new.

A file whose size and modification time (or S3 ETag), or checksum, is unchanged is not read again; an
s3:// object is downloaded only when the ledger does not have it unchanged. A file that cannot be read,
whatever its reader raised, is recorded `rejected` with a message naming the file, line/column and
problem; earlier rows from it (if any) stay, and every other file and source still loads.

- `run.py`: one run over every enabled source;
- `ledger.py`: the `ingest_files` table: file ids, `unchanged()`, recording outcomes;
- `modes/`: one module per ingestion mode (one file, batches, billing deliveries, whole source), picked
  by the reader's base class;
- `readers/`: one reader per source kind, listed in pipelines/sources/registry.py;
- `billing/`: the billing readers and what they share (deliveries, reconciliation, the asset checks);
- `sniff.py`: what a file's bytes are before a reader parses them (not text, NUL bytes, Hive's `\x01`),
  and any reader error turned into the file's one-line refusal;
- `files.py` (listing and fingerprinting files), `storage_patterns.py` and `snapshots.py` (storage).
"""

from pipelines.ingest.files import list_local
from pipelines.ingest.ledger import NEW_VERSION_REJECTED, FileOutcome, file_id
from pipelines.ingest.run import IngestReport, ingest

__all__ = ["NEW_VERSION_REJECTED", "FileOutcome", "IngestReport", "file_id", "ingest", "list_local"]
