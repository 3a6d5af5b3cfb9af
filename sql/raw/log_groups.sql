-- grain: one row per log group per listing (a source keeps one listing per UTC day)
-- Written by the `cloudwatch_logs` reader (CloudWatch Logs DescribeLogGroups through boto3, or the saved output
-- of `aws logs describe-log-groups`). The listing gives each group's retention setting and its stored bytes
-- now, not their age; listings of several days give the groups' growth (the log_groups_current mart).
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
