-- What the `gpu_job_hours` asset's metadata shows after a build: slices with a job, and GPU-hours with a
-- job and in all.
select
    count(*) filter (where job_key is not null) as slices_with_job,
    round(coalesce(sum(slice_seconds) filter (where job_key is not null), 0) / 3600, 2)::double
        as gpu_hours_with_job,
    round(coalesce(sum(slice_seconds), 0) / 3600, 2)::double as gpu_hours
from gpu_job_hours
