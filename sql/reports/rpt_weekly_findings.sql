-- grain: one row per finding of the week, largest waste first
-- depends_on: findings
-- params: $week_start
select
    finding_id,
    rule_id,
    rule_name,
    category,
    severity,
    status,
    resource_id,
    resource_type,
    provider,
    account_id,
    region_id,
    coalesce(team, '(untagged)') as team,
    project,
    owner,
    job_id,
    estimated_waste::decimal(18, 2) as estimated_waste,
    currency,
    reason,
    waste_basis,
    evidence,
    params
from findings
where week_start = $week_start
order by
    case status when 'waste' then 0 when 'suspect' then 1 else 2 end,
    estimated_waste desc,
    rule_id,
    resource_id
