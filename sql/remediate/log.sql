-- params: $run_id, $action_id, $event, $actor, $at, $dry_run, $params, $result, $reason, $detail, $error
-- One approval or apply attempt into the audit trail.
insert into remediation_log values (
    $run_id, $action_id, $event, $actor, $at::timestamp, $dry_run, $params::json, $result, $reason, $detail, $error
)
