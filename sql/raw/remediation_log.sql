-- grain: one row per approval or apply attempt of a remediation action (`wastewatch remediate apply`)
-- The audit trail: who approved or applied which action, when, in which run, dry-run or not, and the result.
-- Rows are only ever added, each chained to the one before by an HMAC under the approval key, which lives
-- outside the warehouse (`wastewatch remediate log --verify` checks the chain). An approval counts only with
-- a valid signature over the whole action it approves (rule, finding, kind, target, region and endpoint,
-- parameters); a destructive action needs one given in an earlier run (another run_id, an earlier logged_at).
create table if not exists remediation_log (
    run_id varchar not null,              -- one `wastewatch remediate apply` invocation (uuid4)
    action_id varchar not null,           -- remediation_actions.action_id ('' for the chain's own rows)
    event varchar not null,               -- approve | apply | chain_start | key_rotated
    actor varchar,                        -- who: --by, else $USER
    logged_at timestamp not null,         -- UTC
    dry_run boolean not null,             -- apply without --yes: re-checked, nothing touched (approvals: false)
    params json,                          -- the action's planned parameters the approval covers or the attempt used
    result varchar not null,              -- approved | would_apply | awaiting_approval | applied | nothing_to_do | refused | failed | recorded
    reason varchar,                       -- the approval's reason (--approve)
    detail varchar,                       -- what was (or would be) done, or why it was refused; redacted
    error varchar,                        -- the provider's error when it failed; redacted
    seq bigint,                           -- the row's place in the chain, from 1; null for rows written before signing
    os_user varchar,                      -- the operating-system user who ran the command
    key_id varchar,                       -- the approval key that signed the row (its id, never the key)
    action_digest varchar,                -- sha256 of the canonical action (approve and apply rows)
    signature varchar,                    -- approve rows: HMAC of action_digest under the approval key
    row_hmac varchar                      -- HMAC of the row's content and the previous row's row_hmac
);
