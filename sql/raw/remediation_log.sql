-- grain: one row per approval or apply attempt of a remediation action (`wastewatch remediate apply`)
-- The audit trail: who approved or applied which action, when, in which run, dry-run or not, and the result.
-- Rows are only ever added. An approval covers the planned parameters it names: a plan that changes them
-- needs a new one. A destructive action is applied only when an `approve` row of an earlier run (another
-- run_id, an earlier logged_at) exists for its current parameters.
create table if not exists remediation_log (
    run_id varchar not null,              -- one `wastewatch remediate apply` invocation (uuid4)
    action_id varchar not null,           -- remediation_actions.action_id
    event varchar not null,               -- approve | apply
    actor varchar,                        -- who: --by, else $USER
    logged_at timestamp not null,         -- UTC
    dry_run boolean not null,             -- apply without --yes: re-checked, nothing touched (approvals: false)
    params json,                          -- the action's planned parameters the approval covers or the attempt used
    result varchar not null,              -- approved | would_apply | awaiting_approval | applied | nothing_to_do | refused | failed
    reason varchar,                       -- the approval's reason (--approve)
    detail varchar,                       -- what was (or would be) done, or why it was refused; redacted
    error varchar                         -- the provider's error when it failed; redacted
);
