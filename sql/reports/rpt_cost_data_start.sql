-- grain: one row per billing currency: the first hour of its cost data, as a week-over-week change reads it
-- depends_on: cost_hourly
-- params: (none)
-- The data starts where the bill's usage starts: a monthly fee spread over its month, or a host a
-- `pricing:` model prices back to the first data in the warehouse, would otherwise make a week before the
-- bill look like a quiet week of data. Without billed usage (a fleet priced only by cost models), the first
-- usage hour; without usage, the first hour. A week before first_hour has no data in that currency and the
-- week it falls in only part of a week, so the report says "new" or "partial week" for a change against
-- it instead of a percentage, and its trend starts there.
select
    billing_currency as currency,
    coalesce(
        min(hour) filter (where charge_category = 'Usage' and pricing_basis = 'bill'),
        min(hour) filter (where charge_category = 'Usage'),
        min(hour)
    ) as first_hour
from cost_hourly
group by billing_currency
order by currency
