-- grain: one row per GPU model x utilisation band (10 % wide) of the week's observed GPU-hours
-- depends_on: resources, cost_hourly, gpu_hours
-- params: $window_start, $window_end, $min_coverage
-- Only GPU-hours of billed hours count (a GPU reporting while its instance was not billed is not spend);
-- band 0 is [0, 10) %, band 90 is [90, 100] %.
with billed as (
    select distinct c.resource_id, c.hour
    from cost_hourly as c
    inner join resources as r on r.resource_id = c.resource_id and r.gpu_count > 0
    where c.hour >= $window_start and c.hour < $window_end and c.effective_cost > 0
),

observed as (
    select
        coalesce(r.gpu_model, 'unknown GPU') as gpu_model,
        least(floor(g.util_mean / 10) * 10, 90)::integer as band
    from gpu_hours as g
    inner join billed as b on b.resource_id = g.resource_id and b.hour = g.hour
    inner join resources as r on r.resource_id = g.resource_id
    where g.coverage >= $min_coverage and g.util_mean is not null
)

select gpu_model, band, count(*) as gpu_hours
from observed
group by gpu_model, band
order by gpu_model, band
