"""Amazon S3 Inventory reports (manifest.json + CSV.gz or Parquet data files) -> storage_objects.

The source's uri is a local folder (or one manifest.json) or an `s3://bucket/prefix/` where reports are
delivered: `<prefix>/<source-bucket>/<config-id>/YYYY-MM-DDTHH-MMZ/manifest.json` with the data files under
`<config-id>/data/`. Every run takes the newest report of each inventory configuration found there (a newer
inventory date supersedes the older one for that bucket) and loads it if the ledger has not seen it;
`keep_inventories` (default 2) snapshots per bucket are kept, older ones deleted.

- Fields by the manifest's `fileSchema` (CSV has no header); `Bucket`, `Key` and `Size` are required,
  `VersionId`, `IsLatest`, `IsDeleteMarker`, `LastModifiedDate`, `ETag`, `StorageClass`,
  `IsMultipartUploaded`, `EncryptionStatus`, `ChecksumAlgorithm` used when present, the rest ignored.
- CSV keys are URL-encoded (`+` and `%20` are spaces) and decoded; Parquet keys are raw. ORC is refused.
- Each data file's size and `MD5checksum` are checked against the manifest (option `verify_md5`, default
  true), so a truncated or replaced file is refused before anything is written.
- Bad input rejects the whole source run (one transaction), the previous inventory stays: a manifest that
  is not JSON or names a missing data file, a mis-encoded key, a size or date that is not one, each named
  with its file, line and column.
"""

from pipelines.ingest.readers.s3_inventory.reader import S3InventoryReader

__all__ = ["S3InventoryReader"]
