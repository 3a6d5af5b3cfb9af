-- grain: one row per incomplete multipart upload in the newest listing of each bucket
-- depends_on: storage_uploads, storage_objects, storage_prices
-- Uploads started and never completed or aborted; their parts are stored (and billed) until a lifecycle
-- rule (AbortIncompleteMultipartUpload) or an abort removes them. Priced like the bucket's storage class.
-- (storage_uploads is written by the storage_objects ingestion, hence that dependency.)
with latest as (
    select store, bucket, max(listed_at) as listed_at
    from storage_uploads
    group by store, bucket
)

select
    u.store,
    u.bucket,
    u.key,
    u.upload_id,
    u.initiated,
    u.listed_at,
    u.storage_class,
    u.parts,
    u.size_bytes,
    coalesce(u.region_id, p.region_id) as region_id,
    u.resource_id,
    p.provider,
    p.account_id,
    p.team,
    p.project,
    p.owner,
    p.price_per_gb_month,
    p.currency,
    p.price_source,
    p.price_detail,
    u.source
from storage_uploads as u
inner join latest as l on l.store = u.store and l.bucket = u.bucket and l.listed_at = u.listed_at
left join storage_prices as p
    on p.store = u.store and p.bucket = u.bucket and p.storage_class is not distinct from u.storage_class
