-- The whole audit trail in chain order: the rows from before signing (no seq) first, then by seq.
select
    seq, run_id, action_id, event, actor, os_user, logged_at, dry_run, params::varchar as params, result,
    reason, detail, error, key_id, action_digest, signature, row_hmac
from remediation_log
order by seq nulls first, logged_at, run_id, action_id, event, result
