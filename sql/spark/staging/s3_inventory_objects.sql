-- grain: one row per object (version) of the S3 Inventory reports the warehouse reads as each bucket's newest
-- depends_on: the temporary view `inventory_raw` (the data files' fields as text, named raw_<column> as
--             pipelines/ingest/readers/s3_inventory/load.py names them, NULL where the report lacks the
--             field or the value is empty, plus x_file_id, the snapshot's id)
-- Typed as the s3_inventory reader types a CSV report into storage_objects: ANSI casts, so a bad value fails
-- the job; times as UTC wall time (TIMESTAMP_NTZ); keys URL-decoded (`+` and %XX), a key with a `%` that
-- starts no %XX escape fails. Spark's url_decode reads `+` as a space, as the reader's replace() does.
select
    x_file_id,
    raw_bucket as bucket,
    case
        when contains(raw_key, '%') and contains(regexp_replace(raw_key, '%[0-9A-Fa-f]{2}', ''), '%')
            then raise_error(concat('mis-encoded key (not URL-encoded as S3 Inventory writes CSV keys): ', raw_key))
        when contains(raw_key, '%') or contains(raw_key, '+') then url_decode(raw_key)
        else raw_key
    end as key,
    raw_version_id as version_id,
    cast(raw_is_latest as boolean) as is_latest,
    cast(raw_is_delete_marker as boolean) as is_delete_marker,
    cast(raw_size_bytes as bigint) as size_bytes,
    cast(to_timestamp_ltz(raw_last_modified) as timestamp_ntz) as last_modified,
    raw_etag as etag,
    cast(raw_is_multipart as boolean) as is_multipart,
    raw_storage_class as storage_class,
    raw_encryption_status as encryption_status,
    raw_checksum_algorithm as checksum_algorithm,
    cast(null as string) as checksum_type,
    cast(null as string) as checksum
from inventory_raw
