-- params: $action_id, $state, $now
-- The action's state after an approval or a real (not dry-run) apply.
update remediation_actions set state = $state, updated_at = $now::timestamp where action_id = $action_id
