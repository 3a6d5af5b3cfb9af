-- question: How much did each team waste in the week, and in which rules?
-- grain: team x rule x currency: the week's findings counted in its waste total
-- depends_on: findings
-- params: $week_start
-- `counted` is the report's own test (status waste, not an attention rule, not acknowledged for the
-- week), so the teams add up to the report's waste total.
select
    coalesce(team, '(untagged)') as team,
    rule_id,
    currency,
    sum(estimated_waste)::decimal(18, 2) as waste,
    count(*) as findings
from findings
where week_start = $week_start and counted
group by all
order by waste desc, team, rule_id
