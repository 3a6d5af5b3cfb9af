-- grain: one row per billing currency: the first hour of cost data the warehouse holds
-- depends_on: cost_hourly
-- params: (none)
-- A week before first_hour has no data in that currency and the week it falls in only part of a week, so
-- the report says "new" or "partial week" for a change against it instead of a percentage.
select
    billing_currency as currency,
    min(hour) as first_hour
from cost_hourly
group by billing_currency
order by currency
