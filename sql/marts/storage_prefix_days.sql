-- grain: one row per inventory date x (store, bucket) x prefix (the key's first three folders at most) x storage class
-- depends_on: storage_objects, storage_snapshots
-- Stored bytes over time, the input of storage growth (COST004): of each (store, bucket) and inventory date,
-- the snapshot taken last that day (whichever reader took it), its objects summed by the folder they sit in,
-- cut to the key's first three folders, and by storage class. Every version counts (a noncurrent version is
-- billed as well); delete markers are left out. A date with no snapshot of a bucket has no rows for it.
-- prefix: the key's first folders (three at most) ending in '/'; '' for files at the top of the bucket
-- uri_prefix: where the prefix is: s3://bucket/prefix, or the file-system root / prefix
-- bytes: stored bytes under the prefix in that storage class on that date
-- objects: object versions under the prefix in that storage class on that date
-- inventory_at: UTC time the snapshot was taken
with day_snapshots as (
    select
        store,
        bucket,
        inventory_date,
        arg_max(x_file_id, (inventory_at, x_file_id)) as x_file_id,
        max(inventory_at) as inventory_at
    from storage_snapshots
    group by store, bucket, inventory_date
),

objects as (
    select
        s.inventory_date,
        s.inventory_at,
        s.store,
        s.bucket,
        o.storage_class,
        o.size_bytes,
        string_split(o.key, '/') as parts
    from storage_objects as o
    inner join day_snapshots as s on s.x_file_id = o.x_file_id
    where not coalesce(o.is_delete_marker, false)
),

prefixed as (
    select
        *,
        case
            when len(parts) > 1 then array_to_string(parts[1:least(len(parts) - 1, 3)], '/') || '/'
            else ''
        end as prefix
    from objects
)

select
    inventory_date,
    inventory_at,
    store,
    bucket,
    prefix,
    case when store = 's3' then 's3://' || bucket || '/' else bucket || '/' end || prefix as uri_prefix,
    storage_class,
    sum(coalesce(size_bytes, 0))::bigint as bytes,
    count(*) as objects
from prefixed
group by all
