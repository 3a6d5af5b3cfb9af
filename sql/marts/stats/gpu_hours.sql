-- What the `gpu_hours` asset's metadata shows after a build: GPU-hours no billed resource matched, and the
-- mean sample coverage and utilisation.
select
    count(*) filter (where resource_id is null) as gpu_hours_without_billed_resource,
    round(coalesce(avg(coverage), 0), 3)::double as mean_coverage,
    round(coalesce(avg(util_mean), 0), 2)::double as mean_util_pct
from gpu_hours
