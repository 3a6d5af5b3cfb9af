-- grain: one row per (store, bucket, storage class) that the objects, the uploads, the bill or the config name
-- depends_on: storage_objects_current, storage_uploads, storage_price_list, int_storage_line_files, resources, billing_line_items
-- The price of a GB-month (GB = 2^30 bytes, the unit storage is billed in) of each bucket and storage class:
-- from the bill where it has one (the bucket's storage lines, effective cost / GB-months over its latest
-- 31 days of charges; storage class from SkuPriceDetails or the usage type), the bucket's average when its
-- bill does not split by class, else the config's `prices: storage_gb_month:` fallback; `price_source`
-- says which; the bill's currency is that of its costliest line (ties: the largest code). The storage lines
-- come summed per file (int_storage_line_files, kept up to date by file), so a night reads the files
-- delivered since the last, not the whole bill (billing_line_items, named for the lineage, is what they are
-- built from). Bucket attributes (account, region, team, project, owner)
-- come from the bill (resources).
-- price_per_gb_month: per GB-month, GB = 2^30 bytes
-- price_source: bill | bill (bucket average: ...) | config
-- price_detail: how the price was computed (the bill's cost, GB-months and dates), or the config file
with buckets as (
    select distinct store, bucket, resource_id, region_id
    from storage_objects_current
    union
    select distinct store, bucket, resource_id, region_id
    from storage_uploads
),

bucket_info as (
    select
        b.store,
        b.bucket,
        any_value(b.resource_id) as resource_id,
        any_value(b.region_id) filter (where b.region_id is not null) as region_id
    from buckets as b
    group by b.store, b.bucket
),

recent as (
    select *
    from int_storage_line_files
    qualify charge_period_start >= max(charge_period_end) over (partition by bill_resource) - interval 31 day
),

bill_by_class as (
    select
        bill_resource,
        storage_class,
        (max({'c': top_cost, 'v': billing_currency}) filter (where top_cost is not null and billing_currency is not null)).v
            as currency,
        sum(effective_cost) as effective_cost,
        sum(gb_months) as gb_months,
        min(charge_period_start) as charged_from,
        max(charge_period_end) as charged_to
    from recent
    where storage_class is not null
    group by bill_resource, storage_class
),

bill_average as (
    select
        bill_resource,
        (max({'c': top_cost, 'v': billing_currency}) filter (where top_cost is not null and billing_currency is not null)).v
            as currency,
        sum(effective_cost) as effective_cost,
        sum(gb_months) as gb_months,
        min(charge_period_start) as charged_from,
        max(charge_period_end) as charged_to,
        bool_or(storage_class is not null) as by_class
    from recent
    group by bill_resource
),

classes as (
    -- every class a bucket needs a price for: its objects', its uploads', its bill's, the fallbacks'
    select distinct store, bucket, storage_class from storage_objects_current
    union
    select distinct store, bucket, storage_class from storage_uploads
    union
    select b.store, b.bucket, c.storage_class
    from bucket_info as b
    inner join bill_by_class as c on c.bill_resource = b.resource_id
    union
    select b.store, b.bucket, p.storage_class
    from bucket_info as b
    cross join storage_price_list as p
),

resolved as (
    select
        c.store,
        c.bucket,
        c.storage_class,
        b.resource_id,
        b.region_id,
        bc.effective_cost / nullif(bc.gb_months, 0) as class_price,
        case when not ba.by_class then ba.effective_cost / nullif(ba.gb_months, 0) end as average_price,
        coalesce(bc.currency, ba.currency) as bill_currency,
        coalesce(bc.gb_months, ba.gb_months) as bill_gb_months,
        coalesce(bc.effective_cost, ba.effective_cost) as bill_effective_cost,
        coalesce(bc.charged_from, ba.charged_from) as charged_from,
        coalesce(bc.charged_to, ba.charged_to) as charged_to,
        pl.price_per_gb_month as list_price,
        pl.currency as list_currency,
        pl.source as list_source
    from classes as c
    inner join bucket_info as b on b.store = c.store and b.bucket = c.bucket
    left join bill_by_class as bc on bc.bill_resource = b.resource_id and bc.storage_class = c.storage_class
    left join bill_average as ba on ba.bill_resource = b.resource_id
    left join storage_price_list as pl on pl.storage_class = c.storage_class
),

bucket_resources as (
    select
        regexp_replace(resource_id, '^arn:aws:s3:::', '') as bill_resource,
        arg_max(provider, last_seen) as provider,
        arg_max(account_id, last_seen) as account_id,
        arg_max(region_id, last_seen) as region_id,
        arg_max(team, last_seen) as team,
        arg_max(project, last_seen) as project,
        arg_max(owner, last_seen) as owner
    from resources
    group by 1
)

select
    r.store,
    r.bucket,
    r.storage_class,
    r.resource_id,
    coalesce(r.region_id, br.region_id) as region_id,
    br.provider,
    br.account_id,
    br.team,
    br.project,
    br.owner,
    coalesce(r.class_price, r.average_price, r.list_price)::decimal(28, 12) as price_per_gb_month,
    case
        when r.class_price is not null or r.average_price is not null then r.bill_currency
        else r.list_currency
    end as currency,
    case
        when r.class_price is not null then 'bill'
        when r.average_price is not null then 'bill (bucket average: the bill does not split storage classes)'
        when r.list_price is not null then 'config'
    end as price_source,
    case
        when r.class_price is not null or r.average_price is not null then printf(
            '%s %.2f / %.2f GB-months of %s storage charged %s..%s',
            r.bill_currency, r.bill_effective_cost, r.bill_gb_months, r.resource_id,
            strftime(r.charged_from, '%Y-%m-%d'), strftime(r.charged_to, '%Y-%m-%d')
        )
        else r.list_source
    end as price_detail
from resolved as r
left join bucket_resources as br on br.bill_resource = r.resource_id
