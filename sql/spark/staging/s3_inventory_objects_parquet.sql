-- grain: one row per object (version) of one Parquet S3 Inventory report the warehouse reads as a bucket's newest
-- depends_on: the temporary view `inventory_raw_parquet` (the data files' columns in their Parquet types, named
--             raw_<column> as pipelines/ingest/readers/s3_inventory/load.py names them, NULL where the report
--             lacks the column, plus x_file_id, the snapshot's id)
-- Typed as the s3_inventory reader types a Parquet report into storage_objects (load.py's _parquet_exprs):
-- ANSI casts, so a bad value fails the job; keys as written (Parquet keys are not URL-encoded); an empty
-- version id or ETag is NULL and an ETag loses its quotes; classes upper-cased; times as UTC wall time
-- (TIMESTAMP_NTZ) from a UTC-adjusted timestamp, a local one or a text with its offset alike.
select
    x_file_id,
    raw_bucket as bucket,
    raw_key as key,
    nullif(cast(raw_version_id as string), '') as version_id,
    cast(raw_is_latest as boolean) as is_latest,
    cast(raw_is_delete_marker as boolean) as is_delete_marker,
    cast(raw_size_bytes as bigint) as size_bytes,
    cast(cast(raw_last_modified as timestamp_ltz) as timestamp_ntz) as last_modified,
    nullif(trim(both '"' from cast(raw_etag as string)), '') as etag,
    cast(raw_is_multipart as boolean) as is_multipart,
    upper(cast(raw_storage_class as string)) as storage_class,
    upper(cast(raw_encryption_status as string)) as encryption_status,
    upper(cast(raw_checksum_algorithm as string)) as checksum_algorithm,
    cast(null as string) as checksum_type,
    cast(null as string) as checksum
from inventory_raw_parquet
