-- schema version 12: log groups listed by the `cloudwatch_logs` source kind land in log_groups (retention
-- setting and stored bytes per group and listing). A new table: nothing existing changes.
create table if not exists log_groups (
    provider varchar not null,            -- AWS
    account_id varchar,                   -- from the group's ARN
    region_id varchar,                    -- from the group's ARN, else the source's region
    log_group varchar not null,           -- the log group's name
    log_group_arn varchar,                -- arn:aws:logs:<region>:<account>:log-group:<name> (no trailing :*)
    retention_in_days integer,            -- NULL: never expire (the group keeps every event)
    stored_bytes bigint,                  -- bytes stored at listing time (as DescribeLogGroups reports them)
    log_group_class varchar,              -- STANDARD | INFREQUENT_ACCESS | DELIVERY
    created_at timestamp,                 -- UTC creation time
    listed_at timestamp not null,         -- UTC time of the listing (API call, or the saved file's date)
    source varchar not null,
    x_source_file varchar not null,       -- the listed region (logs://<region>) or the saved listing file
    x_file_id varchar not null
);
