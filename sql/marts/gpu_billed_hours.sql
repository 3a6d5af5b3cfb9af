-- grain: one row per GPU resource x hour whose effective cost in its billing currency is above zero
--   (resource_id, hour); hours that cost nothing or net to a credit have no row
-- depends_on: cost_hourly, resources
-- What each resource with GPUs cost in each hour, the basis the GPU rules price from (each rule reads the
-- hours of its own window). Only the resource's billing currency counts, so amounts in two currencies
-- are never added; hours that cost nothing (or net to a credit) are left out.
-- hour: UTC start of the hour
-- cost: the hour's effective cost of the resource (cost_hourly.effective_cost added up), in currency
-- currency: the resource's billing currency (resources.currency)
-- full_hour: the bill covers the whole hour: the resource was billed in the hour before and the hour
-- after too (the first and last hour of a run may be partial), and the hour lies within its first_seen ..
-- last_seen
with billed as (
    select
        c.resource_id,
        c.hour,
        sum(c.effective_cost)::decimal(18, 6) as cost,
        any_value(c.billing_currency) as currency,
        any_value(r.first_seen) as first_seen,
        any_value(r.last_seen) as last_seen
    from cost_hourly as c
    inner join resources as r
        on r.resource_id = c.resource_id and r.gpu_count > 0 and c.billing_currency = r.currency
    group by c.resource_id, c.hour
    having sum(c.effective_cost) > 0
)

select
    resource_id,
    hour,
    cost,
    currency,
    coalesce(
        lag(hour) over by_hour = hour - interval 1 hour
        and lead(hour) over by_hour = hour + interval 1 hour
        and (first_seen is null or hour >= first_seen)
        and (last_seen is null or hour + interval 1 hour <= last_seen),
        false
    ) as full_hour
from billed
window by_hour as (partition by resource_id order by hour)
