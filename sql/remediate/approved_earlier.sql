-- params: $action_id, $run_id, $now
-- Approvals of an action: any at all, and any given in an earlier run than this one (another run_id,
-- recorded before now). A destructive action is applied only with the second.
select
    count(*) as approvals,
    count(*) filter (where run_id <> $run_id and logged_at < $now::timestamp) as earlier
from remediation_log
where action_id = $action_id and event = 'approve'
