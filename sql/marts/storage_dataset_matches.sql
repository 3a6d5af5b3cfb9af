-- grain: one row per ordered pair of dataset folders sharing content x storage class of the first one's files
-- depends_on: storage_objects_current, storage_prices
-- How much of dataset A's bytes (current versions, empty files left out) also exist in dataset B, by how
-- the files were matched: a full-object checksum (same algorithm, same value, same size), the ETag (same
-- size and ETag: an MD5 of the bytes, or of the same parts when the part counts agree; never across
-- KMS-encrypted objects), a sampled file-system fingerprint, or only ambiguously: the same relative path
-- and size with ETags of different part counts (or not MD5s) and no checksum to settle it. Each of A's
-- files counts once per B, by its best method; files repeated inside a dataset do not multiply the join.
-- Written in SQL both DuckDB and Spark run: with `engine: spark` Spark runs this very file over the Parquet
-- of storage_objects_current and the prices handed over (pipelines/transform/spark/dataset_matches.py).
with files as (
    select
        f.dataset,
        -- the file's path inside its dataset folder
        substr(
            case when f.store = 's3' then 's3://' || f.bucket || '/' else f.bucket || '/' end || f.key,
            length(f.dataset) + 1
        ) as dataset_key,
        f.store,
        f.bucket,
        f.storage_class,
        f.size_bytes,
        f.etag,
        f.etag_parts,
        f.etag is not null
        and coalesce(f.encryption_status, '') not in ('SSE-KMS', 'DSSE-KMS', 'SSE-C') as etag_usable,
        f.checksum_algorithm,
        f.checksum_type,
        f.checksum
    from storage_objects_current as f
    where f.role = 'dataset' and coalesce(f.is_latest, true) and f.size_bytes > 0
),

checksum_keys as (
    select distinct dataset, size_bytes, checksum_algorithm, checksum, checksum_type
    from files
    where checksum is not null and checksum_type in ('FULL_OBJECT', 'SAMPLED')
),

checksum_pairs as (
    select a.dataset, b.dataset as other, a.size_bytes, a.checksum_algorithm, a.checksum,
        a.checksum_type
    from checksum_keys as a
    inner join checksum_keys as b
        on b.size_bytes = a.size_bytes and b.checksum = a.checksum
        and b.checksum_algorithm = a.checksum_algorithm and b.dataset <> a.dataset
),

etag_keys as (
    select distinct dataset, size_bytes, etag
    from files
    where etag_usable
),

etag_pairs as (
    select a.dataset, b.dataset as other, a.size_bytes, a.etag
    from etag_keys as a
    inner join etag_keys as b on b.size_bytes = a.size_bytes and b.etag = a.etag and b.dataset <> a.dataset
),

matches as (
    -- method: 1 checksum, 2 etag, 3 sampled fingerprint, 4 ambiguous
    select f.*, p.other, case when p.checksum_type = 'SAMPLED' then 3 else 1 end as method
    from files as f
    inner join checksum_pairs as p
        on p.dataset = f.dataset and p.size_bytes = f.size_bytes
        and p.checksum_algorithm = f.checksum_algorithm and p.checksum = f.checksum
    union all
    select f.*, p.other, 2 as method
    from files as f
    inner join etag_pairs as p on p.dataset = f.dataset and p.size_bytes = f.size_bytes and p.etag = f.etag
    where f.etag_usable
    union all
    select a.*, b.dataset as other, 4 as method
    from files as a
    inner join files as b
        on b.dataset_key = a.dataset_key and b.size_bytes = a.size_bytes and b.dataset <> a.dataset
    where a.etag is distinct from b.etag
        -- ETags of the same part count (or two single-part MD5s) that differ: different bytes
        and not (a.etag_usable and b.etag_usable and a.etag_parts is not distinct from b.etag_parts)
        -- two full-object checksums of one algorithm that differ: different bytes
        and not (
            a.checksum is not null and b.checksum is not null
            and a.checksum_type = 'FULL_OBJECT' and b.checksum_type = 'FULL_OBJECT'
            and a.checksum_algorithm = b.checksum_algorithm and a.checksum <> b.checksum
        )
),

best as (
    select
        dataset,
        dataset_key,
        other,
        any_value(store) as store,
        any_value(bucket) as bucket,
        any_value(storage_class) as storage_class,
        any_value(size_bytes) as size_bytes,
        min(method) as method
    from matches
    group by dataset, dataset_key, other
)

select
    b.dataset,
    b.other,
    b.store,
    b.bucket,
    b.storage_class,
    count(*) as objects,
    cast(coalesce(sum(b.size_bytes) filter (where b.method = 1), 0) as bigint) as bytes_checksum,
    cast(coalesce(sum(b.size_bytes) filter (where b.method = 2), 0) as bigint) as bytes_etag,
    cast(coalesce(sum(b.size_bytes) filter (where b.method = 3), 0) as bigint) as bytes_sampled,
    cast(coalesce(sum(b.size_bytes) filter (where b.method = 4), 0) as bigint) as bytes_ambiguous,
    any_value(p.price_per_gb_month) as price_per_gb_month,
    any_value(p.currency) as currency,
    any_value(p.price_source) as price_source
from best as b
left join storage_prices as p
    on p.store = b.store and p.bucket = b.bucket and p.storage_class is not distinct from b.storage_class
group by b.dataset, b.other, b.store, b.bucket, b.storage_class
