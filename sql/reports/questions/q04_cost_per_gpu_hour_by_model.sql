-- question: What does a GPU-hour cost, per GPU model and cost basis, over the last 28 days of data?
-- grain: GPU model x cost basis x currency (basis: bill, or a `pricing:` cost model: owned, contract)
-- depends_on: resources, cost_hourly
with span as (
    select max(hour) - interval 28 day as since
    from cost_hourly
),

billed as (
    select c.resource_id, c.hour, c.billing_currency as currency, sum(c.effective_cost) as cost
    from cost_hourly as c
    cross join span
    where c.hour > span.since
    group by all
    having sum(c.effective_cost) > 0
)

select
    r.gpu_model,
    r.pricing_basis,
    b.currency,
    count(distinct r.resource_id) as instances,
    sum(r.gpu_count) as gpu_hours,
    round(sum(b.cost), 2) as cost,
    round(sum(b.cost) / sum(r.gpu_count), 4) as cost_per_gpu_hour
from billed as b
inner join resources as r on r.resource_id = b.resource_id and r.gpu_count > 0
group by all
order by cost desc
