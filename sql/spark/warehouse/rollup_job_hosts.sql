-- grain: one row per started job x host it ran on (int_job_hosts)
-- depends_on: int_job_hosts
-- params: $day_from, $day_to
-- The jobs running on some day to roll up, handed to Spark.
select job_key, host_key, started_at, ended_at, gpu_indices
from int_job_hosts
where started_at < $day_to::date + interval 1 day and (ended_at is null or ended_at > $day_from::date)
