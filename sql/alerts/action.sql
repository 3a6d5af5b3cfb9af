-- params: $rule_id, $resource_id
-- The remediation action a finding calls for, as `wastewatch remediate plan` names it (the macros of
-- sql/macros/macro_remediation.sql: same kind, same action id), and its state when a plan already holds it.
select
    remediation_kind($rule_id) as kind,
    case when remediation_kind($rule_id) is not null
        then remediation_action_id($rule_id, $resource_id) end as action_id,
    (
        select max(a.state)
        from remediation_actions as a
        where a.action_id = remediation_action_id($rule_id, $resource_id)
    ) as state
