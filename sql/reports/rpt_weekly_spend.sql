-- grain: one row per billing currency for the week
-- depends_on: cost_hourly, findings
-- params: $window_start, $window_end, $week_start
-- Spend is effective (amortised) cost, the same basis findings are priced on; waste counts `waste`
-- findings only (suspect and insufficient_data findings are listed, never added).
with spend as (
    select
        billing_currency as currency,
        sum(effective_cost) as spend,
        sum(billed_cost) as billed
    from cost_hourly
    where hour >= $window_start and hour < $window_end
    group by billing_currency
),

waste as (
    select
        currency,
        sum(estimated_waste) filter (where status = 'waste') as waste,
        count(*) filter (where status = 'waste') as waste_findings,
        count(*) as findings
    from findings
    where week_start = $week_start
    group by currency
)

select
    coalesce(s.currency, w.currency) as currency,
    coalesce(s.spend, 0)::decimal(18, 2) as spend,
    coalesce(s.billed, 0)::decimal(18, 2) as billed,
    coalesce(w.waste, 0)::decimal(18, 2) as waste,
    case when s.spend > 0 then round(100 * coalesce(w.waste, 0) / s.spend, 1) end as waste_pct,
    coalesce(w.waste_findings, 0) as waste_findings,
    coalesce(w.findings, 0) as findings
from spend as s
full outer join waste as w on w.currency = s.currency
order by spend desc
