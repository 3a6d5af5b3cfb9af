-- grain: one row per day a job ran
-- depends_on: int_jobs, gpu_samples
-- What gpu_job_hours takes from the jobs running that day besides the slicing: their ids, states,
-- schedulers, names and accounts. A job still running counts up to the last sample day.
with last_sample as (
    select max(x_sample_date) + interval 1 day as upto
    from gpu_samples
),

spans as (
    select
        j.*,
        unnest(range(
            date_trunc('day', j.started_at),
            greatest(coalesce(j.ended_at, l.upto), j.started_at + interval 1 microsecond),
            interval 1 day
        )) as day_start
    from int_jobs as j, last_sample as l
    where j.started_at is not null
)

select
    day_start::date as day,
    bit_xor(hash(concat_ws('|', job_key, job_id, state, scheduler, job_name, account))) as fingerprint
from spans
group by 1
