-- grain: one row per host_key x instant a job started or ended on it (plus one from -infinity)
-- depends_on: int_job_hosts
-- The intervals [bound_at, next_at) between consecutive job starts/ends on a host, the first from
-- -infinity: GPU-hours are split at these instants so each part of an hour belongs to the jobs that ran
-- then (or to none). Hosts without jobs have no intervals (their hours stay whole).
with instants as (
    select host_key, started_at as bound_at from int_job_hosts
    union
    select host_key, ended_at from int_job_hosts where ended_at is not null
    union
    select distinct host_key, '-infinity'::timestamp from int_job_hosts
)

select
    host_key,
    bound_at,
    coalesce(lead(bound_at) over (partition by host_key order by bound_at), 'infinity'::timestamp) as next_at
from instants
