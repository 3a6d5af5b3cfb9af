-- grain: one row per resource_id on the bill, and per GPU host no bill lists that a `pricing:` entry
--   prices ('host:<host>')
-- depends_on: int_billed_resources, int_host_resources, inventory_hosts, gpu_instance_types, int_gpu_slices, int_host_pricing, int_modelled_hours
-- GPU model and count come from the bill (SkuPriceDetails), the built-in instance-type catalogue (the
-- instance type from the bill, else from the inventory), or, failing both, the GPUs the telemetry of the
-- resource's hosts reported. `host` lists the telemetry hosts, else the scheduler/inventory host names
-- matched to the resource, else the billing host tag or resource name.
-- account_id: the bill's sub_account_id
-- gpu_count: GPUs of the resource (0 when nothing says it has any)
-- gpus_reporting: distinct GPUs the telemetry of the resource's hosts reported
-- currency: the billing currency of the resource's latest line
-- first_seen: start of the resource's first charge period on the bill (UTC)
-- last_seen: end of its last charge period (UTC)
-- instance_id: the cloud instance id its hosts were matched through, when known
-- A GPU host no bill lists that a `pricing:` entry prices is one resource too ('host:<host>', resource_type
-- 'GPU host'): GPU model and count from the entry (gpus), else its telemetry, else its instance type;
-- team/project/owner and tags from its inventory record; first_seen .. last_seen its modelled hours.
-- pricing_basis: how its hours are priced: 'bill', 'owned' or 'contract'
with matched as (
    select
        resource_id,
        string_agg(distinct host, ', ' order by host) as hosts,
        any_value(instance_id) filter (where instance_id is not null) as instance_id
    from int_host_resources
    where resource_id is not null
    group by resource_id
),

telemetry as (
    select
        hr.resource_id,
        string_agg(distinct s.host, ', ' order by s.host) as hosts,
        count(distinct s.gpu_id) as gpus_seen,
        any_value(s.gpu_model) as gpu_model_seen
    from int_gpu_slices as s
    inner join int_host_resources as hr on hr.host = s.host
    where hr.resource_id is not null
    group by hr.resource_id
),

inventory as (
    select
        coalesce(resource_id, instance_id) as inventory_id,
        any_value(instance_type) filter (where instance_type is not null) as instance_type,
        any_value(private_dns) filter (where private_dns is not null) as private_dns
    from inventory_hosts
    group by all
),

billed as (
    select
        r.resource_id,
        r.resource_name,
        r.resource_type,
        r.provider,
        r.account_id,
        r.region_id,
        r.service_name,
        coalesce(r.instance_type, ir.instance_type, im.instance_type) as instance_type,
        coalesce(t.hosts, m.hosts, r.host_tag, r.resource_name) as host,
        coalesce(c.gpu_model, regexp_replace(t.gpu_model_seen, '^NVIDIA\s+', '')) as gpu_model,
        coalesce(r.billed_gpu_count, c.gpu_count, t.gpus_seen, 0) as gpu_count,
        c.gpu_memory_gib,
        t.gpus_seen as gpus_reporting,
        r.team,
        r.project,
        r.owner,
        r.tags,
        r.currency,
        r.first_seen,
        r.last_seen,
        m.instance_id,
        coalesce(ir.private_dns, im.private_dns) as private_dns,
        'bill' as pricing_basis
    from int_billed_resources as r
    left join matched as m on m.resource_id = r.resource_id
    left join inventory as ir on lower(ir.inventory_id) = lower(r.resource_id)
    left join inventory as im on lower(im.inventory_id) = lower(m.instance_id)
    left join gpu_instance_types as c
        on lower(c.instance_type) = lower(coalesce(r.instance_type, ir.instance_type, im.instance_type))
    left join telemetry as t on t.resource_id = r.resource_id
),

modelled_hours as (
    select
        resource_id,
        host_key,
        any_value(basis) as basis,
        any_value(currency) as currency,
        any_value(gpu_count) as gpu_count,
        min(hour) as first_seen,
        max(hour) + interval 1 hour as last_seen
    from int_modelled_hours
    group by resource_id, host_key
),

modelled_names as (
    select
        resource_id,
        string_agg(distinct host, ', ' order by host) as hosts,
        any_value(instance_id) filter (where instance_id is not null) as instance_id
    from int_host_resources
    where pricing_position is not null
    group by resource_id
),

host_inventory as (
    select
        lower(split_part(trim(host), '.', 1)) as host_key,
        arg_max(private_dns, coalesce(launched_at, '-infinity'::timestamp))
            filter (where private_dns is not null) as private_dns,
        arg_max(region_id, coalesce(launched_at, '-infinity'::timestamp))
            filter (where region_id is not null) as region_id
    from inventory_hosts
    group by 1
)

select * from billed
union all by name
select
    m.resource_id,
    m.host_key as resource_name,
    'GPU host' as resource_type,
    null as provider,
    null as account_id,
    hi.region_id,
    m.basis || ' GPU host' as service_name,
    p.instance_type,
    coalesce(n.hosts, m.host_key) as host,
    p.gpu_model,
    coalesce(m.gpu_count, 0) as gpu_count,
    c.gpu_memory_gib,
    p.gpus_seen as gpus_reporting,
    nullif(trim(p.tags['team']), '') as team,
    nullif(trim(p.tags['project']), '') as project,
    nullif(trim(p.tags['owner']), '') as owner,
    null as tags,
    m.currency,
    m.first_seen,
    m.last_seen,
    n.instance_id,
    hi.private_dns,
    m.basis as pricing_basis
from modelled_hours as m
inner join int_host_pricing as p on p.host_key = m.host_key
left join modelled_names as n on n.resource_id = m.resource_id
left join host_inventory as hi on hi.host_key = m.host_key
left join gpu_instance_types as c on lower(c.instance_type) = lower(p.instance_type)
