-- grain: one row per month x ISO week x currency x team x project with counted waste findings
-- depends_on: findings
-- The counted findings' estimated waste by the team and project each finding names, in the month the
-- finding's week begins in. The showback mart puts it beside each team's cost, and a team's monthly
-- statement shows it as what the team could save (a view, so a statement written after the rules ran reads
-- their newest findings).
-- month: first day of the month the finding's week starts in
-- week: Monday of the finding's ISO week
-- waste: the counted findings' estimated waste
-- findings: how many counted findings it sums
select
    date_trunc('month', week_start)::date as month,
    week_start as week,
    currency,
    team,
    project,
    sum(estimated_waste)::decimal(18, 6) as waste,
    count(*) as findings
from findings
where counted
group by all
