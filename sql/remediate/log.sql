-- params: $seq, $run_id, $action_id, $event, $actor, $os_user, $at, $dry_run, $params, $result, $reason, $detail, $error, $key_id, $action_digest, $signature, $row_hmac
-- One row of the audit trail: an approval, an apply attempt, or a link of the chain (chain_start,
-- key_rotated); row_hmac chains it to the row before (pipelines/remediate/audit.py).
insert into remediation_log (
    seq, run_id, action_id, event, actor, os_user, logged_at, dry_run, params, result, reason, detail, error,
    key_id, action_digest, signature, row_hmac
) values (
    $seq, $run_id, $action_id, $event, $actor, $os_user, $at::timestamp, $dry_run, $params::json, $result,
    $reason, $detail, $error, $key_id, $action_digest, $signature, $row_hmac
)
