-- asset: cost_hourly
-- check: reconciles_with_billing
-- blocking: true
-- Per currency, cost_hourly's billed rows (pricing_basis 'bill') hold exactly the billed and effective cost
-- of billing_line_items; hours priced by a `pricing:` cost model are not on any bill and stay out.
with lines as (
    select
        billing_currency as currency,
        sum(billed_cost) as billed,
        sum(effective_cost) as effective
    from billing_line_items
    group by 1
),

hourly as (
    select
        billing_currency as currency,
        sum(billed_cost) as billed,
        sum(effective_cost) as effective
    from cost_hourly
    where coalesce(pricing_basis, 'bill') = 'bill'
    group by 1
)

-- one row per currency; spreading lines over hours keeps every line's cost exactly (tolerance 0)
select
    coalesce(l.currency, h.currency) as label,
    coalesce(l.billed, 0) = coalesce(h.billed, 0)
    and coalesce(l.effective, 0) = coalesce(h.effective, 0) as passed,
    -- a currency missing on one side reads None there
    'lines ' || coalesce(l.effective::varchar, 'None') || ' / hourly ' || coalesce(h.effective::varchar, 'None')
        as detail
from lines as l
full outer join hourly as h on l.currency = h.currency
order by 1
