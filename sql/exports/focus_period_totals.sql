-- grain: one row per billing currency of one billing period ($period)
-- depends_on: focus
-- What the export of a billing period holds, per currency: its lines and the sums of its cost columns, exact
-- (DECIMAL(38, 12)); written into the export's manifest so that a reader can reconcile what it loaded.
select
    BillingCurrency as currency,
    count(*) as lines,
    sum(BilledCost) as billed_cost,
    sum(EffectiveCost) as effective_cost
from focus
where x_BillingPeriod = $period
group by BillingCurrency
order by currency
