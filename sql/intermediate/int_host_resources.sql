-- grain: one row per telemetry host
-- depends_on: gpu_samples, int_billed_resources
-- Which billed resource a telemetry host is. Matched, best first: the instance id the telemetry carries,
-- the billing `host` tag (tags.host config: hostname, Name, ...), the resource name, the resource id,
-- then the short host name (before the first dot) against any of those. Ties go to the resource seen last.
with hosts as (
    select
        host,
        any_value(instance_id) filter (where instance_id is not null) as instance_id
    from gpu_samples
    group by host
),

keys as (
    select resource_id, last_seen, lower(trim(host_tag)) as key, 1 as priority, 'host tag' as method
    from int_billed_resources
    where host_tag is not null
    union all
    select resource_id, last_seen, lower(trim(resource_name)), 2, 'resource name'
    from int_billed_resources
    where resource_name is not null
    union all
    select resource_id, last_seen, lower(resource_id), 3, 'resource id'
    from int_billed_resources
),

matches as (
    select h.host, k.resource_id, 0 as priority, 'instance id' as method, k.last_seen
    from hosts as h
    inner join keys as k on k.priority = 3 and k.key = lower(h.instance_id)
    union all
    select h.host, k.resource_id, k.priority, k.method, k.last_seen
    from hosts as h
    inner join keys as k on k.key = lower(trim(h.host))
    union all
    select h.host, k.resource_id, k.priority + 3, 'short name of ' || k.method, k.last_seen
    from hosts as h
    inner join keys as k
        on split_part(k.key, '.', 1) = split_part(lower(trim(h.host)), '.', 1)
        and k.key <> lower(trim(h.host))
),

best as (
    select host, resource_id, method
    from matches
    qualify row_number() over (partition by host order by priority, last_seen desc, resource_id) = 1
)

select
    h.host,
    h.instance_id,
    b.resource_id,
    b.method as match_method
from hosts as h
left join best as b on b.host = h.host
