-- question: What did a GPU-hour cost in the week, per GPU model and cost basis?
-- grain: GPU model x cost basis x currency (basis: bill, or a `pricing:` cost model: owned, contract)
-- depends_on: resources, cost_hourly
-- params: $week_start, $week_end
-- As the report's GPU fleet table: the hours a GPU resource was billed (effective cost above zero), its GPU
-- count per hour, and the effective cost of those hours.
with billed as (
    select c.resource_id, c.hour, c.billing_currency as currency, sum(c.effective_cost) as cost
    from cost_hourly as c
    where c.hour >= $week_start and c.hour < $week_end
    group by all
    having sum(c.effective_cost) > 0
)

select
    coalesce(r.gpu_model, 'unknown GPU') as gpu_model,
    r.pricing_basis,
    b.currency,
    count(distinct r.resource_id) as instances,
    sum(r.gpu_count) as gpu_hours,
    sum(b.cost)::decimal(18, 2) as cost,
    round(sum(b.cost) / sum(r.gpu_count), 4) as cost_per_gpu_hour
from billed as b
inner join resources as r on r.resource_id = b.resource_id and r.gpu_count > 0
group by all
order by cost desc
