-- What the `cost_hourly` asset's metadata shows after a build: its effective cost per billing currency, one
-- (metric, value) row each; a currency on the bill but missing from the mart shows 0 (reconciles_with_billing
-- fails for it).
select 'effective_cost_' || currency as metric, sum(effective)::double as value
from (
    select billing_currency as currency, effective_cost as effective from cost_hourly
    union all
    select distinct billing_currency, 0 from billing_line_items
)
group by currency
order by currency
