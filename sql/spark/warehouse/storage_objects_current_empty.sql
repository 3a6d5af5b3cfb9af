-- grain: as sql/marts/storage_objects_current.sql
-- depends_on: none
-- storage_objects_current when `engine: spark` and the warehouse holds no storage snapshot (Spark wrote no
-- Parquet to read): no rows, the DuckDB mart's columns and types.
create or replace view storage_objects_current as
select
    null::varchar as store,
    null::varchar as bucket,
    null::varchar as key,
    null::varchar as version_id,
    null::boolean as is_latest,
    null::bigint as size_bytes,
    null::timestamp as last_modified,
    null::varchar as etag,
    null::integer as etag_parts,
    null::varchar as storage_class,
    null::varchar as encryption_status,
    null::varchar as checksum_algorithm,
    null::varchar as checksum_type,
    null::varchar as checksum,
    null::varchar as region_id,
    null::varchar as resource_id,
    null::date as inventory_date,
    null::timestamp as inventory_at,
    null::varchar as source,
    null::varchar as role,
    null::varchar as ckpt_project,
    null::varchar as run_id,
    null::varchar as run_prefix,
    null::bigint as step,
    null::double as metric,
    null::varchar as metric_name,
    null::varchar as dataset
where false
