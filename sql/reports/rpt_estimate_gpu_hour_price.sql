-- grain: one row: the billing currency with the most billed GPU-hours of the model
-- depends_on: resources, cost_hourly
-- params: $names (the GPU model's lower-case names, spaces as dashes), $days
-- The measured price `wastewatch estimate` uses: effective cost per billed GPU-hour of one GPU model over
-- the warehouse's last $days days (hours with a positive cost only), and how many GPU-hours and instances
-- it rests on.
with gpu as (
    select resource_id, gpu_count
    from resources
    where gpu_count > 0 and lower(replace(coalesce(gpu_model, ''), ' ', '-')) in (select unnest($names))
),
latest as (select max(hour) as t from cost_hourly where resource_id in (select resource_id from gpu)),
billed as (
    select c.resource_id, c.hour, c.billing_currency as currency, sum(c.effective_cost) as cost
    from cost_hourly as c
    inner join gpu on gpu.resource_id = c.resource_id
    cross join latest
    where c.hour > latest.t - to_days($days)
    group by all
    having sum(c.effective_cost) > 0
)
select b.currency, sum(b.cost) / sum(g.gpu_count) as per_gpu_hour, sum(g.gpu_count) as gpu_hours,
       count(distinct b.resource_id) as instances
from billed as b
inner join gpu as g on g.resource_id = b.resource_id
group by b.currency
order by gpu_hours desc
limit 1
