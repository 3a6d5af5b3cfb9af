-- grain: one row per storage snapshot: an S3 Inventory report of a bucket, a listing, a file-system scan
-- Written with the snapshot's objects (storage_objects rows carry its x_file_id); the newest snapshot of a
-- (store, bucket) is the one the marts read.
create table if not exists storage_snapshots (
    x_file_id varchar primary key,        -- the snapshot's id (the ledger's id of the manifest or source)
    source varchar not null,              -- the source's name in wastewatch.yaml
    kind varchar not null,                -- s3_inventory | s3_listing | fs_scan
    store varchar not null,               -- s3 | fs
    bucket varchar not null,              -- S3 bucket, or the scanned file-system root (absolute path)
    inventory_date date not null,         -- UTC day of the snapshot
    inventory_at timestamp not null,      -- UTC time the inventory, listing or scan was taken
    region_id varchar,                    -- the source's region or the bucket's location, when known
    resource_id varchar,                  -- billing resource id: the bucket; fs_scan: its resource_id option
    uri varchar not null,                 -- the manifest, the listed s3:// uri or the scanned root
    objects bigint not null,              -- rows in storage_objects
    loaded_at timestamp not null
);
