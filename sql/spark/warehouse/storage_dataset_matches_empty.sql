-- grain: as sql/marts/storage_dataset_matches.sql
-- depends_on: none
-- storage_dataset_matches when `engine: spark` and no two datasets share content (Spark wrote no Parquet
-- to read): no rows, the DuckDB mart's columns and types.
create or replace view storage_dataset_matches as
select
    null::varchar as dataset,
    null::varchar as other,
    null::varchar as store,
    null::varchar as bucket,
    null::varchar as storage_class,
    null::bigint as objects,
    null::bigint as bytes_checksum,
    null::bigint as bytes_etag,
    null::bigint as bytes_sampled,
    null::bigint as bytes_ambiguous,
    null::decimal(28, 12) as price_per_gb_month,
    null::varchar as currency,
    null::varchar as price_source
where false
