-- grain: one row per actionable finding of the week: the remediation action it calls for
-- depends_on: findings, remediation_actions, remediation_log
-- params: $week_start
-- The week's waste findings (not acknowledged) that `wastewatch remediate` has an action for, biggest
-- first, with the action's id (the same before and after `remediate plan`: sql/macros/macro_remediation.sql),
-- its state (`unplanned` until a plan lists it) and its latest approval.
select
    remediation_action_id(f.rule_id, f.resource_id) as action_id,
    remediation_kind(f.rule_id) as kind,
    f.rule_id,
    f.resource_id as target,
    f.team,
    f.owner,
    f.estimated_waste,
    f.currency,
    coalesce(a.state, 'unplanned') as state,
    coalesce(a.executable, true) as executable,
    l.actor as approved_by
from findings as f
left join remediation_actions as a on remediation_action_id(f.rule_id, f.resource_id) = a.action_id
left join (
    select
        action_id,
        arg_max(actor, logged_at) as actor
    from remediation_log
    where event = 'approve'
    group by action_id
) as l on remediation_action_id(f.rule_id, f.resource_id) = l.action_id
where
    f.week_start = $week_start::date
    and f.status = 'waste'
    and not coalesce(f.acknowledged, false)
    and remediation_kind(f.rule_id) is not null
order by f.estimated_waste desc, f.rule_id, f.resource_id
