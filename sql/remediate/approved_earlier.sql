-- params: $action_id, $run_id, $now
-- Approvals of an action's current planned parameters: any at all, and any given in an earlier run than
-- this one (another run_id, recorded before now). A plan that changed the parameters (a later cutoff, a
-- newer last write) needs a new approval; a destructive action is applied only with the second count.
select
    count(*) as approvals,
    count(*) filter (where l.run_id <> $run_id and l.logged_at < $now::timestamp) as earlier
from remediation_log as l
inner join remediation_actions as a on l.action_id = a.action_id
where l.action_id = $action_id and l.event = 'approve' and l.params::varchar = a.params::varchar
