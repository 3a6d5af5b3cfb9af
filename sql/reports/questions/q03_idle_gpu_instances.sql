-- question: Which GPU instances sat idle in the week, and for what share of their billed GPU-hours?
-- grain: one row per GPU resource with idle GPU-hours in the week
-- depends_on: resources, cost_hourly, gpu_hours
-- params: $week_start, $week_end
-- As the report's GPU fleet table counts them: per billed hour, a GPU is idle when its telemetry covers at
-- least half the hour and it averaged at most 5 % utilisation (GPU001's defaults); hours without telemetry
-- count as billed but not observed.
with billed as (
    select c.resource_id, c.hour
    from cost_hourly as c
    where c.hour >= $week_start and c.hour < $week_end
    group by all
    having sum(c.effective_cost) > 0
),

idle as (
    select resource_id, hour, count(distinct gpu_id) as idle_gpus
    from gpu_hours
    where hour >= $week_start and hour < $week_end and resource_id is not null
        and coverage >= 0.5 and util_mean is not null and util_mean <= 5
    group by all
)

select
    r.resource_id,
    r.host,
    r.team,
    coalesce(r.gpu_model, 'unknown GPU') as gpu_model,
    sum(r.gpu_count) as billed_gpu_hours,
    sum(least(coalesce(i.idle_gpus, 0), r.gpu_count)) as idle_gpu_hours,
    round(100.0 * sum(least(coalesce(i.idle_gpus, 0), r.gpu_count)) / sum(r.gpu_count), 1) as idle_pct
from billed as b
inner join resources as r on r.resource_id = b.resource_id and r.gpu_count > 0
left join idle as i on i.resource_id = b.resource_id and i.hour = b.hour
group by all
having sum(coalesce(i.idle_gpus, 0)) > 0
order by idle_pct desc, idle_gpu_hours desc, r.resource_id
