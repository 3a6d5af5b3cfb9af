-- grain: one row per billing period the export writes
-- depends_on: focus
-- The billing periods in the warehouse (all of them, or those listed in $periods when $every is false), each
-- with its number of lines. A line without a billing period (no BillingPeriodStart nor ChargePeriodStart)
-- cannot be placed in a partition and is left out.
select x_BillingPeriod as period, count(*) as lines
from focus
where x_BillingPeriod is not null and ($every or list_contains($periods, x_BillingPeriod))
group by x_BillingPeriod
order by period
