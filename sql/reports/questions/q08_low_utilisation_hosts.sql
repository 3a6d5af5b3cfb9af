-- question: Which hosts had the lowest mean GPU utilisation in the week, over the GPU-hours they reported?
-- grain: one row per telemetry host of a GPU resource with observed GPU-hours in the week
-- depends_on: resources, cost_hourly, gpu_hours
-- params: $week_start, $week_end
-- As the report's utilisation histogram counts them: GPU-hours of the resource's billed hours whose
-- telemetry covers at least half the hour (gpu_hours holds only GPU x hours with telemetry, so hours a host
-- did not report are not averaged in).
with billed as (
    select distinct c.resource_id, c.hour
    from cost_hourly as c
    inner join resources as r on r.resource_id = c.resource_id and r.gpu_count > 0
    where c.hour >= $week_start and c.hour < $week_end and c.effective_cost > 0
)

select
    g.host,
    any_value(g.resource_id) as resource_id,
    any_value(g.gpu_model) as gpu_model,
    count(distinct g.gpu_id) as gpus,
    count(*) as gpu_hours,
    round(avg(g.util_mean), 1) as mean_util_pct,
    count(*) filter (where g.util_mean < 20) as gpu_hours_under_20_pct,
    round(max(g.mem_used_max_mib) / 1024, 1) as peak_mem_gib
from gpu_hours as g
inner join billed as b on b.resource_id = g.resource_id and b.hour = g.hour
where g.coverage >= 0.5 and g.util_mean is not null
group by g.host
order by mean_util_pct, g.host
