-- grain: one row per rule x resource x ISO week (the finding contract)
create table if not exists findings (
    finding_id varchar primary key,       -- stable: sha1(rule_id, resource_id, ISO week)
    rule_id varchar not null,
    rule_name varchar not null,
    category varchar not null,
    severity varchar not null,
    week_start date not null,
    week_end date not null,
    resource_id varchar,
    resource_type varchar,
    provider varchar,
    account_id varchar,
    region_id varchar,
    team varchar,
    project varchar,
    owner varchar,
    job_id varchar,
    status varchar not null,              -- waste | suspect | insufficient_data
    reason varchar not null,
    evidence json,
    estimated_waste decimal(18, 6) not null,
    currency varchar,
    waste_basis varchar,
    params json,
    detected_at timestamp not null
);
