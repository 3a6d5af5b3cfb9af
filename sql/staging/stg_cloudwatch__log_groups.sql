-- grain: one row per log group of one CloudWatch Logs listing (DescribeLogGroups, or its saved output)
-- depends_on: the relation `_src` (one row per log group, typed), built by
--             pipelines/ingest/readers/cloudwatch_logs.py
-- Names and values as DescribeLogGroups gave them; times in UTC; the ARN without its trailing `:*`.
select
    provider,
    account_id,
    region_id,
    log_group,
    log_group_arn,
    retention_in_days,
    stored_bytes,
    log_group_class,
    created_at,
    listed_at,
    $source_name as source,
    x_source_file,
    $file_id as x_file_id
from _src
