-- question: Which GPU instances sat idle (every GPU at most 5 % util) for most of the last 7 days of telemetry?
-- grain: one row per billed GPU resource
-- depends_on: resources, gpu_hours
with span as (
    select max(hour) - interval 7 day as since
    from gpu_hours
),

per_hour as (
    select g.resource_id, g.hour, max(g.util_mean) as busiest_gpu_util
    from gpu_hours as g
    cross join span
    where g.hour > span.since and g.resource_id is not null
    group by all
)

select
    r.resource_id,
    r.host,
    r.team,
    r.gpu_model,
    count(*) as observed_hours,
    count(*) filter (where p.busiest_gpu_util <= 5) as idle_hours,
    round(100.0 * count(*) filter (where p.busiest_gpu_util <= 5) / count(*), 1) as idle_pct
from per_hour as p
inner join resources as r on r.resource_id = p.resource_id
group by all
order by idle_pct desc, idle_hours desc
limit 20
