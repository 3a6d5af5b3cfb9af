-- question: Which hosts averaged under 20 % GPU utilisation while they reported, over the last 7 days?
-- grain: one row per telemetry host
-- depends_on: gpu_hours
with span as (
    select max(hour) - interval 7 day as since
    from gpu_hours
)

select
    g.host,
    any_value(g.resource_id) as resource_id,
    any_value(g.gpu_model) as gpu_model,
    count(distinct g.gpu_id) as gpus,
    count(*) as gpu_hours,
    round(avg(g.util_mean), 1) as mean_util_pct,
    round(max(g.mem_used_max_mib) / 1024, 1) as peak_mem_gib
from gpu_hours as g
cross join span
where g.hour > span.since and g.util_mean is not null
group by g.host
having avg(g.util_mean) < 20
order by mean_util_pct
