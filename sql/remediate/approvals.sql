-- params: $action_id
-- The signed approvals of an action (pipelines/remediate/apply.py checks each signature against the action
-- as re-derived from its finding; rows from before signing carry none and never count).
select run_id, logged_at, key_id, action_digest, signature
from remediation_log
where action_id = $action_id and event = 'approve' and seq is not null and signature is not null
order by seq
