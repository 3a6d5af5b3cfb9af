-- grain: one row per remediation action (`wastewatch remediate plan`): rule x resource x kind x target
-- What `wastewatch remediate plan` proposes for an actionable finding (pipelines/remediate/). The row
-- follows the finding across weeks: a later week's plan refreshes its finding, parameters and figures and
-- keeps its state; who approved and applied it, and what happened, is in remediation_log.
create table if not exists remediation_actions (
    action_id varchar not null,           -- stable: sha1(rule_id|resource_id|kind|target), 16 hex; what `remediate apply` takes
    finding_key varchar not null,         -- the finding across weeks (findings.finding_key)
    finding_id varchar not null,          -- the weekly finding the latest plan came from
    rule_id varchar not null,
    resource_id varchar,
    week_start date not null,             -- the week of the finding the latest plan came from
    kind varchar not null,                -- stop_instance | abort_multipart_uploads | lifecycle_transition | delete_prefix
    target varchar not null,              -- an EC2 instance id or an s3://bucket/prefix/
    params json not null,                 -- what the plan saw and apply re-checks (region, cutoff, last write, storage class, ...)
    destructive boolean not null,         -- deletes data: needs an approval given in an earlier run than the apply
    executable boolean not null,          -- wastewatch can act on it (false: Slurm, Kubernetes, other clouds: the JSON plan only)
    manual_reason varchar,                -- why wastewatch cannot act on it, when it cannot
    provider varchar,
    account_id varchar,
    region_id varchar,
    team varchar,
    project varchar,
    owner varchar,
    estimated_waste decimal(18, 6) not null,  -- the finding's weekly waste, in currency
    currency varchar,
    state varchar not null,               -- planned | approved | applied | done (already so, or gone) | refused | failed: the latest real apply
    planned_at timestamp not null,        -- UTC, the latest plan that listed it
    updated_at timestamp not null         -- UTC
);
