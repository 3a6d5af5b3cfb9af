-- grain: one row per team (or 'unallocated') x month x currency x kind x rule x service of the showback mart,
--   for the report week's month and the month before it
-- depends_on: showback, int_counted_waste
-- params: $month (first day of the month the report week starts in)
-- What each team's monthly statement shows (pipelines/report/statement.py): its direct cost by service, each
-- pool a `showback:` rule gave it with the rule's split and the team's share, the cost no rule or tag placed
-- (team 'unallocated'), and the team's counted waste beside them (kind 'waste': never part of its cost), read
-- from the findings as they are now, not as the mart last saw them.
with lines as (
    select month, currency, team, kind, rule, method, measure, share, service, cost, 0 as waste, 0 as findings
    from showback
    where kind <> 'waste'
    union all
    select month, currency, team, 'waste', null, null, null, null, null, 0, waste, findings
    from int_counted_waste
)

select
    coalesce(team, 'unallocated') as team,
    month::date as month,
    currency,
    kind,
    rule,
    any_value(method) as method,
    any_value(measure) as measure,
    max(share)::double as share,
    service,
    sum(cost)::decimal(38, 6) as cost,
    sum(waste)::decimal(38, 6) as waste,
    sum(findings)::bigint as findings
from lines
where month::date in ($month::date - interval 1 month, $month::date)
group by all
order by team, month, currency, kind, rule nulls first, service nulls first
