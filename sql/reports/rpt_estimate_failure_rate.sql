-- grain: one row over every finished GPU job
-- depends_on: jobs
-- params: $failed (the job states that count as an interrupting failure)
-- The measured failure rate `wastewatch estimate` uses: GPU-hours of finished GPU jobs, how many of them
-- failed, and how many there were.
select
    sum(gpus_requested * (epoch(ended_at) - epoch(started_at)) / 3600.0) as gpu_hours,
    count(*) filter (where state in (select unnest($failed))) as failures,
    count(*) as jobs
from jobs
where gpus_requested > 0 and started_at is not null and ended_at > started_at
