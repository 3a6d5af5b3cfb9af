-- grain: one row per modelled GPU host x hour (resource_id 'host:<host_key>', hour): cost_hourly's rows for
--   the hosts no bill lists, in cost_hourly's columns
-- depends_on: int_modelled_hours, int_host_pricing, inventory_hosts
-- The hour's modelled cost (int_modelled_hours) with the host's instance type (int_host_pricing) and
-- team/project/owner from its latest inventory tags. A view of its own so that cost_hourly built by Spark
-- (engine: spark) adds the same rows to the bill's spread.
with host_tags as (
    select
        lower(split_part(trim(host), '.', 1)) as host_key,
        arg_max(tags, coalesce(launched_at, '-infinity'::timestamp)) filter (where tags is not null) as tags
    from inventory_hosts
    group by 1
)

select
    m.hour,
    m.resource_id,
    m.currency as billing_currency,
    null::varchar as provider,
    null::varchar as account_id,
    null::varchar as region_id,
    'Compute' as service_category,
    m.basis || ' GPU host' as service_name,
    'Usage' as charge_category,
    p.instance_type,
    nullif(trim(t.tags['team']), '') as team,
    nullif(trim(t.tags['project']), '') as project,
    nullif(trim(t.tags['owner']), '') as owner,
    'model' as allocation,
    0::bigint as line_items,
    null::decimal(38, 12) as billed_cost,
    m.cost as effective_cost,
    null::decimal(38, 12) as list_cost,
    m.basis as pricing_basis,
    m.pricing_inputs
from int_modelled_hours as m
left join int_host_pricing as p on p.host_key = m.host_key
left join host_tags as t on t.host_key = m.host_key
