-- grain: one row per host name (telemetry, scheduler or inventory)
-- depends_on: int_gpu_slices, int_job_hosts, inventory_hosts, int_billed_resources, int_host_pricing
-- Which billed resource a host is. Matched, best first: the instance id the telemetry carries; the
-- inventory (ec2_instances, hosts_csv: host name, private DNS name or IP -> instance / resource id);
-- the billing `host` tag (tags.host config: hostname, Name, ...), the resource name, the resource id;
-- then the short host name (before the first dot) against any of those. An EC2 resource id written as
-- an ARN (arn:...:instance/i-...) matches its bare instance id. Ties go to the resource seen last.
-- A host no bill lists (under none of the names of its host_key) that a `pricing:` entry matches is the
-- modelled resource 'host:<host_key>' (int_host_pricing); a billed host keeps its bill.
-- pricing_position: the `pricing:` entry (1-based) that prices the host; NULL for a billed or unpriced host
with telemetry as (
    select
        host,
        any_value(instance_id) filter (where instance_id is not null) as instance_id
    from int_gpu_slices
    group by host
),

scheduler as (
    select distinct host_key as host
    from int_job_hosts
),

inventory as (
    select
        host,
        coalesce(resource_id, instance_id) as inventory_id,
        instance_id,
        private_dns,
        private_ip,
        instance_type,
        launched_at
    from inventory_hosts
),

hosts as (
    select host, any_value(instance_id) filter (where instance_id is not null) as instance_id
    from (
        select host, instance_id from telemetry
        union all
        select host, null from scheduler
        where host not in (select lower(split_part(trim(t.host), '.', 1)) from telemetry as t)
        union all
        select host, null from inventory
    )
    group by host
),

billed_keys as (
    select resource_id, last_seen, lower(trim(host_tag)) as key, 2 as priority, 'host tag' as method
    from int_billed_resources
    where host_tag is not null
    union all
    select resource_id, last_seen, lower(trim(resource_name)), 3, 'resource name'
    from int_billed_resources
    where resource_name is not null
    union all
    select resource_id, last_seen, lower(resource_id), 4, 'resource id'
    from int_billed_resources
),

billed_ids as (
    select resource_id, last_seen, lower(resource_id) as id
    from int_billed_resources
    union all
    select resource_id, last_seen, regexp_extract(lower(resource_id), 'instance/(i-[0-9a-z]+)$', 1)
    from int_billed_resources
    where regexp_matches(lower(resource_id), 'instance/i-[0-9a-z]+$')
),

inventory_keys as (
    select inventory_id, instance_id, launched_at, lower(trim(host)) as key from inventory
    union all
    select inventory_id, instance_id, launched_at, lower(trim(private_dns)) from inventory
    where private_dns is not null
    union all
    select inventory_id, instance_id, launched_at, lower(trim(private_ip)) from inventory
    where private_ip is not null
),

inventory_candidates as (
    -- equi-joins only (an OR in a join condition would compare every host with every key)
    select h.host, k.inventory_id, k.instance_id, k.launched_at, 0 as exactness
    from hosts as h
    inner join inventory_keys as k on k.key = lower(trim(h.host))
    union all
    select h.host, k.inventory_id, k.instance_id, k.launched_at, 1
    from hosts as h
    inner join inventory_keys as k
        on split_part(k.key, '.', 1) = split_part(lower(trim(h.host)), '.', 1)
    where k.key <> lower(trim(h.host)) and not regexp_matches(k.key, '^[0-9.]+$')
),

inventory_match as (
    select host, inventory_id, instance_id, exactness
    from inventory_candidates
    qualify row_number() over (
        partition by host order by exactness, launched_at desc nulls last, inventory_id
    ) = 1
),

matches as (
    select h.host, i.resource_id, 0 as priority, 'instance id' as method, i.last_seen
    from hosts as h
    inner join billed_ids as i on i.id = lower(h.instance_id)
    union all
    select m.host, i.resource_id, 1 + m.exactness * 4, 'inventory', i.last_seen
    from inventory_match as m
    inner join billed_ids as i on i.id = lower(m.inventory_id)
    union all
    select m.host, i.resource_id, 1 + m.exactness * 4, 'inventory', i.last_seen
    from inventory_match as m
    inner join billed_ids as i on i.id = lower(m.instance_id)
    union all
    select h.host, k.resource_id, k.priority, k.method, k.last_seen
    from hosts as h
    inner join billed_keys as k on k.key = lower(trim(h.host))
    union all
    select h.host, k.resource_id, k.priority + 4, 'short name of ' || k.method, k.last_seen
    from hosts as h
    inner join billed_keys as k
        on split_part(k.key, '.', 1) = split_part(lower(trim(h.host)), '.', 1)
        and k.key <> lower(trim(h.host))
),

best as (
    select host, resource_id, method
    from matches
    qualify row_number() over (partition by host order by priority, last_seen desc, resource_id) = 1
),

mapped as (
    select
        h.host,
        lower(split_part(trim(h.host), '.', 1)) as host_key,
        coalesce(h.instance_id, im.instance_id, im.inventory_id) as instance_id,
        b.resource_id,
        b.method as match_method
    from hosts as h
    left join inventory_match as im on im.host = h.host
    left join best as b on b.host = h.host
),

key_billed as (
    select host_key, bool_or(resource_id is not null) as billed
    from mapped
    group by host_key
)

select
    m.host,
    m.host_key,
    m.instance_id,
    coalesce(m.resource_id, case when p.position is not null then 'host:' || m.host_key end) as resource_id,
    coalesce(m.match_method, case when p.position is not null then p.basis || ' pricing entry' end)
        as match_method,
    case when m.resource_id is null then p.position end as pricing_position
from mapped as m
inner join key_billed as k on k.host_key = m.host_key
left join int_host_pricing as p on p.host_key = m.host_key and not k.billed
