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
    detected_at timestamp not null,
    -- what findings.csv states besides the lifecycle, kept current by sql/raw/findings/flags.sql:
    finding_key varchar,                  -- the finding across weeks: sha1(rule_id|resource_id), 16 hex
    attention boolean,                    -- an attention rule's finding (unattributed, anomaly, budget): never waste
    counted boolean,                      -- adds to the week's waste total: status waste, not attention, not acknowledged
    acknowledged boolean,                 -- the finding_key's latest ack runs to or past week_start
    acked_until date,                     -- that ack's date (NULL when not acknowledged)
    ack_reason varchar,                   -- that ack's reason
    acked_by varchar                      -- who gave that ack
);
