-- grain: one row per billed hour of a GPU resource in the week (resource x hour x currency)
-- depends_on: resources, cost_hourly, gpu_hours
-- params: $window_start, $window_end, $idle_util_pct, $min_coverage
-- The basis of the report's GPU fleet table, idle heatmap and telemetry coverage: per billed hour, the
-- GPUs billed (the resource's GPU count), how many reported enough telemetry (coverage >= min_coverage
-- and a utilisation value), and how many of those averaged at most idle_util_pct (GPU001's threshold).
-- pricing_basis: how the resource's hours are priced (bill, owned, contract)
with gpu_resources as (
    select resource_id, coalesce(gpu_model, 'unknown GPU') as gpu_model, gpu_count, pricing_basis
    from resources
    where gpu_count > 0
),

billed as (
    select
        c.resource_id,
        c.hour,
        c.billing_currency as currency,
        sum(c.effective_cost) as cost
    from cost_hourly as c
    inner join gpu_resources as r on r.resource_id = c.resource_id
    where c.hour >= $window_start and c.hour < $window_end
    group by all
    having sum(c.effective_cost) > 0
),

telemetry as (
    select
        resource_id,
        hour,
        count(distinct gpu_id) filter (where coverage >= $min_coverage and util_mean is not null) as observed,
        count(distinct gpu_id) filter (
            where coverage >= $min_coverage and util_mean is not null and util_mean <= $idle_util_pct
        ) as idle
    from gpu_hours
    where resource_id is not null and hour >= $window_start and hour < $window_end
    group by resource_id, hour
)

select
    b.resource_id,
    r.gpu_model,
    r.pricing_basis,
    b.currency,
    b.hour,
    isodow(b.hour) as iso_weekday,
    hour(b.hour) as hour_of_day,
    r.gpu_count as gpus,
    least(coalesce(t.observed, 0), r.gpu_count) as observed_gpus,
    least(coalesce(t.idle, 0), r.gpu_count) as idle_gpus,
    b.cost
from billed as b
inner join gpu_resources as r on r.resource_id = b.resource_id
left join telemetry as t on t.resource_id = b.resource_id and t.hour = b.hour
order by b.resource_id, b.hour
