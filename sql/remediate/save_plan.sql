-- params: $now
-- The plan (temp table remediation_plan, from candidates.sql) into remediation_actions: a new action is
-- `planned`; one already there takes the newer finding, parameters and figures and keeps its state.
merge into remediation_actions as a
using remediation_plan as p
on a.action_id = p.action_id
when matched then update set
    finding_id = p.finding_id,
    week_start = p.week_start,
    params = p.params,
    destructive = p.destructive,
    executable = p.executable,
    manual_reason = p.manual_reason,
    provider = p.provider,
    account_id = p.account_id,
    region_id = p.region_id,
    team = p.team,
    project = p.project,
    owner = p.owner,
    estimated_waste = p.estimated_waste,
    currency = p.currency,
    planned_at = $now::timestamp,
    updated_at = $now::timestamp
when not matched then insert (
    action_id, finding_key, finding_id, rule_id, resource_id, week_start, kind, target, params, destructive,
    executable, manual_reason, provider, account_id, region_id, team, project, owner, estimated_waste,
    currency, state, planned_at, updated_at
) values (
    p.action_id, p.finding_key, p.finding_id, p.rule_id, p.resource_id, p.week_start, p.kind, p.target,
    p.params, p.destructive, p.executable, p.manual_reason, p.provider, p.account_id, p.region_id, p.team,
    p.project, p.owner, p.estimated_waste, p.currency, 'planned', $now::timestamp, $now::timestamp
);
