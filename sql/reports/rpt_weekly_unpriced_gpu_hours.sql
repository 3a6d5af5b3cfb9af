-- grain: one row per host with GPU-hours in the week that nothing prices
-- depends_on: gpu_hours, gpu_billed_hours
-- params: $window_start, $window_end, $idle_util_pct, $min_coverage
-- A GPU-hour (a gpu_hours row: one GPU observed in one hour) is unpriced when no gpu_billed_hours row
-- prices its resource in that hour: the host maps to no billed resource, or its resource cost nothing that
-- hour, and no `pricing:` entry models it. No rule can put a figure on such an hour, so the report counts
-- these hours (data quality, and an attention item) instead of leaving them out unseen.
-- idle_gpu_hours: of those, hours with enough telemetry (coverage >= $min_coverage) averaging at most
-- $idle_util_pct utilisation (GPU001's thresholds)
select
    g.host,
    count(*) as gpu_hours,
    count(*) filter (where g.coverage >= $min_coverage and g.util_mean <= $idle_util_pct) as idle_gpu_hours,
    count(distinct g.gpu_id) as gpus,
    min(g.hour) as first_hour,
    max(g.hour) as last_hour
from gpu_hours as g
left join gpu_billed_hours as b on b.resource_id = g.resource_id and b.hour = g.hour
where g.hour >= $window_start and g.hour < $window_end and b.resource_id is null
group by g.host
order by gpu_hours desc, g.host
