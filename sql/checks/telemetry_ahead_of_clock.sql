-- Per file of a telemetry load: its samples dated after $limit (the clock at ingest plus the source's
-- max_clock_skew), read inside the load's transaction before it commits; a file with any is rejected
-- (pipelines/ingest/readers/base.py). Raw samples and the hours a metrics store pre-aggregated count alike,
-- as the freshness check (freshness_hosts.sql) reads both. Filtering on the time first lets DuckDB skip the
-- row groups of earlier samples by their min/max.
select
    x_file_id as file_id,
    count(*) as samples,
    epoch(min(ts)) as first_s
from (
    select x_file_id, ts from gpu_samples where ts > $limit and x_file_id in (select unnest($ids))
    union all
    select x_file_id, hour from gpu_hourly_stats where hour > $limit and x_file_id in (select unnest($ids))
)
group by x_file_id
