-- grain: one row per (store, bucket): its newest storage snapshot, the one storage_objects_current reads
-- depends_on: storage_snapshots, ingest_files
-- The warehouse decides which snapshot of each bucket counts (the newest, as sql/marts/storage_objects_current.sql
-- takes it); Spark reads that snapshot's files where they lie. `objects` (rows the ledger landed from it,
-- delete markers included) and `checksum` (the manifest's, as the ledger recorded it) are checked against
-- what Spark reads.
with latest as (
    select
        arg_max(x_file_id, (inventory_at, x_file_id)) as x_file_id
    from storage_snapshots
    group by store, bucket
)

select
    s.x_file_id,
    s.source,
    s.kind,
    s.store,
    s.bucket,
    s.inventory_date,
    s.inventory_at,
    s.region_id,
    s.resource_id,
    s.uri,
    s.objects,
    f.checksum
from storage_snapshots as s
inner join latest as l on l.x_file_id = s.x_file_id
left join ingest_files as f on f.file_id = s.x_file_id
order by s.store, s.bucket
