-- grain: one row per job that did not fail and ran on a billed GPU resource (job_key)
-- depends_on: jobs_enriched, gpu_job_hours
-- How long each job held its GPUs, over its whole run (not one week's): GPU002 and GPU003 judge a job on
-- all its GPU-slices. A failed, cancelled, timed-out or out-of-memory job is left out (GPU004 prices
-- those). A GPU reported under two host names (node name and FQDN) is one GPU: of the rows of one
-- GPU-slice, the first host name's counts.
-- first_seen: start of the job's first GPU-slice (UTC)
-- last_seen: end of its last GPU-slice (UTC)
-- runtime_s: seconds from the job's start to its end as the job record gives them, else as its first and
-- last GPU-slice do
with jobs as (
    select
        job_key,
        started_at,
        ended_at
    from jobs_enriched
    where not coalesce(job_failed(state), false)
),

job_slices as (
    select
        s.job_key,
        s.slice_start,
        s.slice_end
    from gpu_job_hours as s
    inner join jobs as j on j.job_key = s.job_key
    where s.resource_id is not null
    qualify row_number() over (partition by s.resource_id, s.gpu_id, s.slice_start order by s.host) = 1
)

select
    j.job_key,
    min(s.slice_start) as first_seen,
    max(s.slice_end) as last_seen,
    greatest(
        epoch(coalesce(j.ended_at, max(s.slice_end))) - epoch(coalesce(j.started_at, min(s.slice_start))), 0
    ) as runtime_s
from job_slices as s
inner join jobs as j on j.job_key = s.job_key
group by j.job_key, j.started_at, j.ended_at
