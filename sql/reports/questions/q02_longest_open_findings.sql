-- question: Which waste findings have been open the most weeks, and what have they cost so far?
-- grain: one row per finding across weeks (rule x resource)
-- depends_on: findings
select
    rule_id,
    resource_id,
    any_value(team) as team,
    count(distinct week_start) as weeks_with_waste,
    min(week_start) as first_seen,
    max(week_start) as last_seen,
    round(sum(estimated_waste), 2) as cumulative_waste,
    any_value(currency) as currency
from findings
where status = 'waste' and category not in ('unattributed', 'anomaly', 'budget')
group by rule_id, resource_id
order by weeks_with_waste desc, cumulative_waste desc
limit 20
