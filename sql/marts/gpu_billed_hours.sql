-- grain: one row per GPU resource x hour it was billed for (resource_id, hour)
-- depends_on: cost_hourly, resources
-- What each resource with GPUs cost in each hour, the basis the GPU rules price from (each rule reads the
-- hours of its own window). Only the resource's billing currency counts, so amounts in two currencies
-- are never added; hours that cost nothing (or net to a credit) are left out.
-- hour: UTC start of the hour
-- cost: the hour's effective cost of the resource (cost_hourly.effective_cost added up), in currency
-- currency: the resource's billing currency (resources.currency)
select
    c.resource_id,
    c.hour,
    sum(c.effective_cost)::decimal(18, 6) as cost,
    any_value(c.billing_currency) as currency
from cost_hourly as c
inner join resources as r
    on r.resource_id = c.resource_id and r.gpu_count > 0 and c.billing_currency = r.currency
group by c.resource_id, c.hour
having sum(c.effective_cost) > 0
