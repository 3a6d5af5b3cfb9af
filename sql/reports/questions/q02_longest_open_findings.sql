-- question: Which findings have been counted as waste the most weeks up to the week, and what have they cost so far?
-- grain: one row per finding across weeks (finding_key) counted in a week up to the week, the 20 most persistent
-- depends_on: findings
-- params: $week_start
-- cumulative_waste is findings.csv's: the finding's counted waste in every week up to this one.
select
    finding_key,
    any_value(rule_id) as rule_id,
    any_value(resource_id) as resource_id,
    arg_max(team, week_start) as team,
    count(*) as weeks_counted,
    min(week_start) as first_counted,
    max(week_start) as last_counted,
    sum(estimated_waste)::decimal(18, 2) as cumulative_waste,
    any_value(currency) as currency
from findings
where week_start <= $week_start and counted
group by finding_key
order by weeks_counted desc, cumulative_waste desc, finding_key
limit 20
