-- params: $action_id
-- One action by id, as `remediate apply` takes it.
select * from remediation_actions where action_id = $action_id
