-- grain: one row per day some GPU resource was billed
-- depends_on: cost_hourly, resources
-- The billed cost of the GPU resources' hours that day (gpu_job_hours prices its slices from it).
select
    c.hour::date as day,
    bit_xor(hash(concat_ws('|', c.resource_id, c.hour, c.billing_currency, c.effective_cost))) as fingerprint
from cost_hourly as c
inner join resources as r on r.resource_id = c.resource_id and r.gpu_count > 0
group by 1
