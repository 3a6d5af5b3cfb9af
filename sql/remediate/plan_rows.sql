-- The actions of the plan just made (temp table remediation_plan) as remediation_actions holds them, with
-- their state and the latest approval: what `remediate plan` prints and writes as JSON.
select
    a.*,
    l.actor as approved_by,
    l.approved_at
from remediation_actions as a
inner join remediation_plan as p on a.action_id = p.action_id
left join (
    select action_id, arg_max(actor, logged_at) as actor, max(logged_at) as approved_at
    from remediation_log
    where event = 'approve'
    group by action_id
) as l on a.action_id = l.action_id
order by a.estimated_waste desc, a.rule_id, a.target
