-- grain: one row per day a job ran on some host
-- depends_on: int_job_hosts, gpu_samples, gpu_hourly_stats
-- The jobs running on some host that day, with the starts and ends that fall on it: what cuts the day
-- into slices, and which job each slice belongs to. A job still running counts up to the last sample day.
with last_sample as (
    select greatest(
        (select max(x_sample_date) from gpu_samples), (select max(x_hour_date) from gpu_hourly_stats)
    ) + interval 1 day as upto
),

spans as (
    select
        jh.*,
        unnest(range(
            date_trunc('day', jh.started_at),
            greatest(coalesce(jh.ended_at, l.upto), jh.started_at + interval 1 microsecond),
            interval 1 day
        )) as day_start
    from int_job_hosts as jh, last_sample as l
)

select
    day_start::date as day,
    bit_xor(hash(concat_ws(
        '|', host_key, job_key, gpu_indices::varchar,
        case when started_at::date = day_start::date then started_at end,
        case when ended_at::date = day_start::date then ended_at end
    ))) as fingerprint
from spans
group by 1
