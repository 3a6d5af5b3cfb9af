-- schema version 14: remediation (`wastewatch remediate plan|apply`): remediation_actions, the actions
-- planned from findings, and remediation_log, their approvals and applies, as sql/raw/remediation_actions.sql
-- and sql/raw/remediation_log.sql describe them. New tables only: no existing row is touched.
create table if not exists remediation_actions (
    action_id varchar not null,
    finding_key varchar not null,
    finding_id varchar not null,
    rule_id varchar not null,
    resource_id varchar,
    week_start date not null,
    kind varchar not null,
    target varchar not null,
    params json not null,
    destructive boolean not null,
    executable boolean not null,
    manual_reason varchar,
    provider varchar,
    account_id varchar,
    region_id varchar,
    team varchar,
    project varchar,
    owner varchar,
    estimated_waste decimal(18, 6) not null,
    currency varchar,
    state varchar not null,
    planned_at timestamp not null,
    updated_at timestamp not null
);
create table if not exists remediation_log (
    run_id varchar not null,
    action_id varchar not null,
    event varchar not null,
    actor varchar,
    logged_at timestamp not null,
    dry_run boolean not null,
    params json,
    result varchar not null,
    reason varchar,
    detail varchar,
    error varchar
);
