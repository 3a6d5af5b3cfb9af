-- grain: team x project x currency for the week: spend, counted waste and its share ('(untagged)' /
--        '(no project)' where the bill names none)
-- depends_on: cost_hourly, findings, finding_acks
-- params: $window_start, $window_end, $week_start, $attention
with spend as (
    select
        coalesce(team, '(untagged)') as team,
        coalesce(project, '(no project)') as project,
        billing_currency as currency,
        sum(effective_cost) as spend
    from cost_hourly
    where hour >= $window_start and hour < $window_end
    group by all
),

acks as (
    select finding_key, arg_max_null(acked_until, acked_at) as acked_until
    from finding_acks
    group by finding_key
),

waste as (
    select
        coalesce(f.team, '(untagged)') as team,
        coalesce(f.project, '(no project)') as project,
        f.currency,
        sum(f.estimated_waste) as waste,
        count(*) as waste_findings
    from findings as f
    left join acks as a
        on a.finding_key = substr(sha1(f.rule_id || '|' || coalesce(f.resource_id, '')), 1, 16)
    where f.week_start = $week_start
        and f.status = 'waste'
        and not list_contains($attention, f.category)
        and not coalesce(a.acked_until >= f.week_start, false)
    group by all
)

select
    coalesce(s.team, w.team) as team,
    coalesce(s.project, w.project) as project,
    coalesce(s.currency, w.currency) as currency,
    coalesce(s.spend, 0)::decimal(18, 2) as spend,
    coalesce(w.waste, 0)::decimal(18, 2) as waste,
    case when s.spend > 0 then round(100 * coalesce(w.waste, 0) / s.spend, 1) end as waste_pct,
    coalesce(w.waste_findings, 0) as waste_findings
from spend as s
full outer join waste as w on w.team = s.team and w.project = s.project and w.currency = s.currency
order by team, waste desc, spend desc, project
