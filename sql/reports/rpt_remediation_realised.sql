-- grain: one row per remediation action applied before the week (`wastewatch remediate apply --yes`)
-- depends_on: findings, remediation_actions, remediation_log
-- params: $week_start
-- The realised saving of each applied action in a later week: its baseline is the waste of its finding
-- (finding_key) in the last week that started on or before the day it was applied; in a week starting
-- after that day, the saving is the baseline less what the same finding still counts as waste that week
-- (all of it when the finding is gone, never below zero). Weeks with no findings at all have not been
-- evaluated and give no rows: an absent finding proves nothing there.
with applied as (
    select
        action_id,
        min(logged_at) as applied_at,
        arg_min(actor, logged_at) as applied_by
    from remediation_log
    where event = 'apply' and not dry_run and result = 'applied'
    group by action_id
),

baseline as (
    select
        a.action_id,
        a.kind,
        a.target,
        a.rule_id,
        a.finding_key,
        a.team,
        a.owner,
        p.applied_at,
        p.applied_by,
        f.week_start as baseline_week,
        f.estimated_waste as baseline_waste,
        f.currency
    from applied as p
    inner join remediation_actions as a on p.action_id = a.action_id
    inner join findings as f
        on
            f.finding_key = a.finding_key
            and f.status = 'waste'
            and f.week_start <= p.applied_at::date
    qualify row_number() over (partition by a.action_id order by f.week_start desc) = 1
),

this_week as (
    select
        finding_key,
        sum(estimated_waste) filter (where status = 'waste') as waste
    from findings
    where week_start = $week_start::date
    group by finding_key
)

select
    b.*,
    coalesce(t.waste, 0) as week_waste,
    greatest(b.baseline_waste - coalesce(t.waste, 0), 0) as realised_saving
from baseline as b
left join this_week as t on b.finding_key = t.finding_key
where
    $week_start::date > b.applied_at::date
    and exists (select 1 from findings where week_start = $week_start::date)
order by realised_saving desc, b.action_id
