-- grain: team x currency for the week ('(untagged)' where the bill names no team)
-- depends_on: cost_hourly, findings
-- params: $window_start, $window_end, $week_start
with spend as (
    select
        coalesce(team, '(untagged)') as team,
        billing_currency as currency,
        sum(effective_cost) as spend
    from cost_hourly
    where hour >= $window_start and hour < $window_end
    group by all
),

waste as (
    select
        coalesce(team, '(untagged)') as team,
        currency,
        sum(estimated_waste) filter (where status = 'waste') as waste,
        count(*) filter (where status = 'waste') as waste_findings
    from findings
    where week_start = $week_start
    group by all
)

select
    coalesce(s.team, w.team) as team,
    coalesce(s.currency, w.currency) as currency,
    coalesce(s.spend, 0)::decimal(18, 2) as spend,
    coalesce(w.waste, 0)::decimal(18, 2) as waste,
    case when s.spend > 0 then round(100 * coalesce(w.waste, 0) / s.spend, 1) end as waste_pct,
    coalesce(w.waste_findings, 0) as waste_findings
from spend as s
full outer join waste as w on w.team = s.team and w.currency = s.currency
order by waste desc, spend desc, team
