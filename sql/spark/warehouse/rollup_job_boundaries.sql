-- grain: one row per host_key x instant a job started or ended on it (int_job_boundaries)
-- depends_on: int_job_boundaries
-- params: $day_from, $day_to
-- The intervals that overlap the days to roll up, handed to Spark; Spark's timestamps have no infinity, so
-- -infinity and infinity become 0001-01-01 and 9999-12-31 (before and after any sample).
select
    host_key,
    case when isinf(bound_at) then '0001-01-01'::timestamp else bound_at end as bound_at,
    case when isinf(next_at) then '9999-12-31'::timestamp else next_at end as next_at
from int_job_boundaries
where bound_at < $day_to::date + interval 1 day and next_at > $day_from::date
