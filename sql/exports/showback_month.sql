-- One month of the showback mart as `wastewatch export showback` writes it (docs/showback.md "Chargeback
-- export"): one row per currency x team x pool x service with its cost, then one row per currency x team
-- with the counted waste of the findings whose week starts in the month, as `findings` holds them now.
-- params: $month (first day of the month)
-- team: 'unallocated' for cost no rule or tag put on a team, and for waste no finding names a team for
-- pool: the rule that allocated the cost (or took it and found nobody to split it among); 'direct' for
-- cost a team tag claims, 'unallocated' for cost nothing took, 'waste' for the waste rows
with cost as (
    select
        currency,
        coalesce(team, 'unallocated') as team,
        kind,
        coalesce(rule, kind) as pool,
        method,
        measure,
        share,
        service,
        sum(cost)::decimal(38, 12) as cost,
        0::decimal(18, 6) as waste,
        0 as findings
    from showback
    where kind <> 'waste' and month = $month
    group by all
),

waste as (
    select
        currency,
        coalesce(team, 'unallocated') as team,
        'waste' as kind,
        'waste' as pool,
        null::varchar as method,
        null::varchar as measure,
        null::double as share,
        null::varchar as service,
        0::decimal(38, 12) as cost,
        sum(estimated_waste)::decimal(18, 6) as waste,
        count(*) as findings
    from findings
    where counted and date_trunc('month', week_start) = $month
    group by all
)

select
    strftime($month::date, '%Y-%m') as month,
    *
from (
    select * from cost
    union all
    select * from waste
)
order by currency, team, kind, pool, service nulls first
