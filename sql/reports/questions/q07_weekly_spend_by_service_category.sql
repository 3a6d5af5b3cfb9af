-- question: How did spend per FOCUS service category move week by week?
-- grain: ISO week x service category x currency
-- depends_on: cost_hourly
select
    date_trunc('week', hour)::date as week_start,
    coalesce(service_category, 'Other') as service_category,
    billing_currency as currency,
    round(sum(effective_cost), 2) as spend
from cost_hourly
group by all
order by week_start desc, spend desc
