-- grain: one row per dataset folder (a sub-folder of a `datasets:` root), current object versions only
-- depends_on: storage_objects_current, storage_prices, resources
-- Size, age, place (bucket or file system, region) and monthly storage cost of every dataset folder, and
-- whether it sits in a region where the GPU jobs run (regions of GPU instances on the bill).
-- monthly_cost: storage cost of a month at the priced files' prices, in currency
-- unpriced_bytes: bytes with no price (neither the bill nor the config has one)
-- in_job_region: the dataset lies in a region where GPU instances run
with files as (
    select
        f.*,
        p.price_per_gb_month,
        p.currency,
        p.price_source
    from storage_objects_current as f
    left join storage_prices as p
        on p.store = f.store and p.bucket = f.bucket and p.storage_class is not distinct from f.storage_class
    where f.role = 'dataset' and coalesce(f.is_latest, true)
),

bucket_attrs as (
    select
        store,
        bucket,
        any_value(region_id) filter (where region_id is not null) as region_id,
        any_value(provider) filter (where provider is not null) as provider,
        any_value(account_id) filter (where account_id is not null) as account_id,
        any_value(team) filter (where team is not null) as team,
        any_value(project) filter (where project is not null) as project,
        any_value(owner) filter (where owner is not null) as owner
    from storage_prices
    group by store, bucket
),

job_regions as (
    select coalesce(list(distinct region_id order by region_id), []) as regions
    from resources
    where gpu_count > 0 and region_id is not null
),

datasets as (
    select
        dataset,
        store,
        bucket,
        any_value(region_id) filter (where region_id is not null) as object_region,
        count(*) as objects,
        sum(size_bytes)::bigint as size_bytes,
        min(last_modified) as first_modified,
        max(last_modified) as last_modified,
        sum(size_bytes / 1073741824 * price_per_gb_month) as monthly_cost,
        coalesce(sum(size_bytes) filter (where price_per_gb_month is null), 0)::bigint as unpriced_bytes,
        arg_max(currency, size_bytes) filter (where currency is not null) as currency,
        list(distinct storage_class order by storage_class) filter (where storage_class is not null)
            as storage_classes,
        list(distinct price_source order by price_source) filter (where price_source is not null)
            as price_sources
    from files
    group by dataset, store, bucket
)

select
    d.dataset,
    d.store,
    d.bucket,
    coalesce(d.object_region, b.region_id) as region_id,
    b.provider,
    b.account_id,
    b.team,
    b.project,
    b.owner,
    d.objects,
    d.size_bytes,
    d.first_modified,
    d.last_modified,
    d.monthly_cost,
    d.unpriced_bytes,
    d.currency,
    d.storage_classes,
    d.price_sources,
    jr.regions as job_regions,
    coalesce(list_contains(jr.regions, coalesce(d.object_region, b.region_id)), false) as in_job_region
from datasets as d
left join bucket_attrs as b on b.store = d.store and b.bucket = d.bucket
cross join job_regions as jr
