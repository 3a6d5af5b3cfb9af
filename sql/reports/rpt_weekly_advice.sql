-- grain: one row per advice item of the week (advice table): commitment and spot advice
-- depends_on: advice
-- params: $week_start
-- The report's "Actions and advice" section. Advice is never waste or spend: no total adds it, and items
-- about the same instances are alternatives whose savings do not add up.
-- estimated_saving: expected saving a week if the advice is taken (0 unless recommended), in currency
select
    advice_id,
    advisor_id,
    advisor_name,
    kind,
    resource_id,
    resource_type,
    provider,
    region_id,
    team,
    project,
    status,
    reason,
    evidence,
    estimated_saving,
    currency,
    basis,
    risk
from advice
where week_start = $week_start
order by
    kind,
    case status when 'recommended' then 0 when 'not_recommended' then 1 else 2 end,
    estimated_saving desc,
    resource_id
