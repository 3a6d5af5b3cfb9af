-- question: Which resources spent the most without a team tag in the week?
-- grain: one row per resource (or service, for lines without a resource id) x currency
-- depends_on: cost_hourly
-- params: $week_start, $week_end
-- As the report's tag coverage: positive effective cost (credits and refunds left out) with no canonical
-- `team` tag; the rows add up to the report's spend without a team.
select
    coalesce(resource_id, '(no resource id)') as resource_id,
    any_value(service_name) as service_name,
    any_value(service_category) as service_category,
    billing_currency as currency,
    sum(effective_cost)::decimal(18, 2) as untagged_spend
from cost_hourly
where hour >= $week_start and hour < $week_end and team is null and effective_cost > 0
group by all
order by untagged_spend desc, resource_id
