-- asset: showback
-- check: reconciles_with_billing
-- blocking: true
-- Per currency, the showback mart's cost (every team's direct and allocated cost plus what stays
-- unallocated) is cost_hourly's effective cost to the cent: allocation loses and duplicates nothing.
with bill as (
    select
        billing_currency as currency,
        sum(effective_cost) as cost
    from cost_hourly
    group by 1
),

showback_cost as (
    select
        currency,
        sum(cost) as cost
    from showback
    where kind <> 'waste'
    group by 1
)

-- one row per currency; a currency missing on one side reads None there
select
    coalesce(b.currency, s.currency) as label,
    abs(coalesce(b.cost, 0) - coalesce(s.cost, 0)) < 0.005 as passed,
    'bill ' || coalesce(b.cost::varchar, 'None') || ' / showback ' || coalesce(s.cost::varchar, 'None')
        as detail
from bill as b
full outer join showback_cost as s on b.currency = s.currency
order by 1
