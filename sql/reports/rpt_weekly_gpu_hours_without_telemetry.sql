-- grain: one row per pricing basis (bill, owned, contract) with priced GPU-hours in the week
-- depends_on: resources, gpu_billed_hours, gpu_hours
-- params: $window_start, $window_end
-- Priced GPU-hours that had no telemetry. A priced hour of a GPU resource (a gpu_billed_hours row) stands
-- for its GPUs (resources.gpu_count); those of its GPUs with no gpu_hours row in the hour (not one sample)
-- had no telemetry. An owned or contract host is priced for every hour of its service window, telemetry
-- or not (docs/gpu.md "Which hours"), and a bill charges whether a GPU reported or not: such hours cost
-- money that no GPU rule can judge (GPU001 counts them as insufficient data).
-- gpu_hours: priced GPU-hours (priced hours x GPUs); without_telemetry: of those, GPU-hours no GPU
-- reported; resources: resources with at least one such hour
with priced as (
    select b.resource_id, b.hour, r.gpu_count, coalesce(r.pricing_basis, 'bill') as pricing_basis
    from gpu_billed_hours as b
    inner join resources as r on r.resource_id = b.resource_id
    where b.hour >= $window_start and b.hour < $window_end and r.gpu_count > 0
),

reported as (
    select resource_id, hour, count(distinct gpu_id) as gpus
    from gpu_hours
    where resource_id is not null and hour >= $window_start and hour < $window_end
    group by resource_id, hour
),

hours as (
    select
        p.pricing_basis,
        p.resource_id,
        p.gpu_count as gpus,
        greatest(p.gpu_count - least(coalesce(t.gpus, 0), p.gpu_count), 0) as silent
    from priced as p
    left join reported as t on t.resource_id = p.resource_id and t.hour = p.hour
)

select
    pricing_basis,
    sum(gpus)::bigint as gpu_hours,
    sum(silent)::bigint as without_telemetry,
    count(distinct resource_id) filter (where silent > 0) as resources
from hours
group by pricing_basis
order by pricing_basis
