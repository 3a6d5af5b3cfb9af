-- grain: one row per object (version) of the listings and scans that are a bucket's newest snapshot
-- depends_on: storage_objects
-- Handed to Spark with the inventory reports' objects: an s3_listing or an fs_scan lists the objects itself,
-- so there are no files for Spark to read; the warehouse's rows are the snapshot. The columns and types of
-- sql/spark/staging/s3_inventory_objects.sql.
select
    x_file_id,
    bucket,
    key,
    version_id,
    is_latest,
    is_delete_marker,
    size_bytes,
    last_modified,
    etag,
    is_multipart,
    storage_class,
    encryption_status,
    checksum_algorithm,
    checksum_type,
    checksum
from storage_objects
where list_contains($ids, x_file_id)
