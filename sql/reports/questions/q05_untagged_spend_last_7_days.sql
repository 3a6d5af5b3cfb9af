-- question: Which resources spent the most without a team tag in the last 7 days of billing?
-- grain: one row per resource (or service, for lines without a resource id) x currency
-- depends_on: cost_hourly
with span as (
    select max(hour) - interval 7 day as since
    from cost_hourly
)

select
    coalesce(c.resource_id, '(no resource id)') as resource_id,
    any_value(c.service_name) as service_name,
    any_value(c.service_category) as service_category,
    c.billing_currency as currency,
    round(sum(c.effective_cost), 2) as untagged_spend
from cost_hourly as c
cross join span
where c.hour > span.since and c.team is null
group by all
having sum(c.effective_cost) > 0
order by untagged_spend desc
limit 20
