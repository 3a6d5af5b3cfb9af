-- grain: rule x currency for the week
-- depends_on: findings
-- params: $week_start
select
    rule_id,
    any_value(rule_name) as rule_name,
    any_value(category) as category,
    currency,
    count(*) filter (where status = 'waste') as waste_findings,
    count(*) filter (where status = 'suspect') as suspect_findings,
    count(*) filter (where status = 'insufficient_data') as insufficient_data_findings,
    coalesce(sum(estimated_waste) filter (where status = 'waste'), 0)::decimal(18, 2) as waste
from findings
where week_start = $week_start
group by rule_id, currency
order by waste desc, rule_id
