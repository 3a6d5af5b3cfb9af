-- COST004's measurements: for every budgeted scope (a bucket or prefix location, `team:NAME`,
-- `project:NAME`), the bytes of each matching prefix x storage class at the first and at the last inventory
-- date of its bucket in [$since, $until), with the bucket's count of inventory dates there and the price of
-- a GB-month of the class. A bucket's team and project are the bill's (storage_prices).
with scopes as (
    select unnest($scopes) as scope
),

owners as (
    select
        store,
        bucket,
        any_value(team) filter (where team is not null) as team,
        any_value(project) filter (where project is not null) as project,
        any_value(provider) filter (where provider is not null) as provider,
        any_value(account_id) filter (where account_id is not null) as account_id,
        any_value(region_id) filter (where region_id is not null) as region_id
    from storage_prices
    group by store, bucket
),

days as (
    select
        store,
        bucket,
        min(inventory_date) as first_date,
        max(inventory_date) as last_date,
        count(distinct inventory_date) as inventory_dates
    from storage_prefix_days
    where inventory_date >= $since and inventory_at < $until
    group by store, bucket
),

matched as (
    select
        sc.scope,
        p.store,
        p.bucket,
        p.prefix,
        p.uri_prefix,
        p.storage_class,
        p.inventory_date,
        p.bytes,
        d.first_date,
        d.last_date,
        d.inventory_dates
    from storage_prefix_days as p
    inner join days as d on d.store = p.store and d.bucket = p.bucket
    left join owners as o on o.store = p.store and o.bucket = p.bucket
    inner join scopes as sc
        on starts_with(p.uri_prefix, sc.scope)
        or sc.scope = 'team:' || o.team
        or sc.scope = 'project:' || o.project
    where p.inventory_date in (d.first_date, d.last_date) and p.inventory_at < $until
)

select
    m.scope,
    m.store,
    m.bucket,
    m.prefix,
    m.uri_prefix,
    m.storage_class,
    m.first_date,
    m.last_date,
    m.inventory_dates,
    coalesce(sum(m.bytes) filter (where m.inventory_date = m.first_date), 0) as bytes_first,
    coalesce(sum(m.bytes) filter (where m.inventory_date = m.last_date), 0) as bytes_last,
    any_value(sp.price_per_gb_month)::double as price_per_gb_month,
    any_value(sp.currency) as currency,
    any_value(o.team) as team,
    any_value(o.project) as project,
    any_value(o.provider) as provider,
    any_value(o.account_id) as account_id,
    any_value(o.region_id) as region_id
from matched as m
left join storage_prices as sp
    on sp.store = m.store and sp.bucket = m.bucket and sp.storage_class is not distinct from m.storage_class
left join owners as o on o.store = m.store and o.bucket = m.bucket
group by all
order by m.scope, m.store, m.bucket, m.prefix, m.storage_class
