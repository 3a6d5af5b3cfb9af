-- question: How much did each team waste in the last evaluated week, and in which rules?
-- grain: team x rule x currency
-- depends_on: findings, finding_acks
-- Waste = `waste` findings of waste rules (attention categories excluded) not acknowledged for the week.
with acks as (
    select finding_key, arg_max_null(acked_until, acked_at) as acked_until
    from finding_acks
    group by finding_key
),

latest as (
    select max(week_start) as week_start
    from findings
)

select
    coalesce(f.team, '(untagged)') as team,
    f.rule_id,
    f.currency,
    round(sum(f.estimated_waste), 2) as waste,
    count(*) as findings
from findings as f
inner join latest as l on l.week_start = f.week_start
left join acks as a on a.finding_key = substr(sha1(f.rule_id || '|' || coalesce(f.resource_id, '')), 1, 16)
where f.status = 'waste'
    and f.category not in ('unattributed', 'anomaly', 'budget')
    and not coalesce(a.acked_until >= f.week_start, false)
group by all
order by waste desc
