-- grain: one row per object (version) per inventory snapshot (S3 Inventory report, listing or file-system scan)
-- Written by the s3_inventory, s3_listing and fs_scan readers; the snapshot's own attributes (store, time,
-- region, billing resource, source) are in storage_snapshots (joined on x_file_id). A newer snapshot of a
-- bucket supersedes the older one (marts read the newest); checkpoint/dataset lineage is applied in marts.
create table if not exists storage_objects (
    inventory_date date not null,         -- partition key: UTC day of the snapshot
    bucket varchar not null,              -- S3 bucket, or the scanned file-system root (absolute path)
    key varchar not null,                 -- object key (URL-decoded), or the path relative to the root
    version_id varchar,                   -- with versioned inventories only
    is_latest boolean,                    -- NULL when the snapshot lists current versions only
    is_delete_marker boolean,
    size_bytes bigint,
    last_modified timestamp,              -- UTC
    etag varchar,                         -- without quotes; multipart ETags end in -<part count>
    is_multipart boolean,
    storage_class varchar,                -- STANDARD, STANDARD_IA, GLACIER_IR, ...; fs_scan: its storage_class option
    encryption_status varchar,            -- NOT-SSE, SSE-S3, SSE-KMS, DSSE-KMS, SSE-C (KMS ETags are not MD5s)
    checksum_algorithm varchar,           -- CRC32, CRC32C, SHA1, SHA256, CRC64NVME; fs_scan: SHA256 or SAMPLED_SHA256
    checksum_type varchar,                -- FULL_OBJECT | COMPOSITE | SAMPLED
    checksum varchar,                     -- base64 as S3 returns it (S3: only from a listing's checksum lookup)
    x_file_id varchar not null            -- the snapshot (storage_snapshots.x_file_id)
);
