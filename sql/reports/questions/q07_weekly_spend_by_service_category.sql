-- question: How did spend per FOCUS service category move over the eight weeks up to the week?
-- grain: ISO week x service category x currency
-- depends_on: cost_hourly
-- params: $week_start, $week_end
select
    date_trunc('week', hour)::date as week_start,
    coalesce(service_category, 'Other') as service_category,
    billing_currency as currency,
    sum(effective_cost)::decimal(18, 2) as spend
from cost_hourly
where hour >= $week_start - interval 7 week and hour < $week_end
group by all
order by week_start desc, spend desc, service_category
