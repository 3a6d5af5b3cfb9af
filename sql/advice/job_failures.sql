-- grain: one row per job type, and one over every job (job_type NULL, all_types true)
-- depends_on: int_jobs (the scheduler's records, the latest of each job)
-- params: $since, $until (NULL: no bound)
-- The measured failure rate, one measurement for `wastewatch estimate` (the row over every job: GPU-hours per
-- failure) and checkpoint cadence advice (ADV003, per job type: job-hours per failure): finished GPU jobs that
-- started before $until and ended after $since, how many ended in a state that interrupts a run (user
-- cancellations and time limits are planned, not failures), and their hours.
-- failure_states: the states that count as a failure
-- job_hours: wall-clock hours of the jobs; gpu_hours: GPUs requested x those hours
-- failures: jobs that ended in one of failure_states
with failure_states as (
    select ['FAILED', 'NODE_FAIL', 'OUT_OF_MEMORY', 'BOOT_FAIL', 'PREEMPTED'] as states
),

finished as (
    select
        job_type(coalesce(j.job_name, j.run_id)) as job_type,
        (epoch(j.ended_at) - epoch(j.started_at)) / 3600.0 as job_h,
        j.gpus_requested * (epoch(j.ended_at) - epoch(j.started_at)) / 3600.0 as gpu_h,
        list_contains((select states from failure_states), j.state) as failed
    from int_jobs as j
    where j.gpus_requested > 0
        and j.started_at is not null
        and j.ended_at > j.started_at
        and ($since::timestamp is null or j.ended_at > $since::timestamp)
        and ($until::timestamp is null or j.started_at < $until::timestamp)
)

select
    job_type,
    grouping(job_type) = 1 as all_types,
    count(*) as runs,
    sum(job_h) as job_hours,
    sum(gpu_h) as gpu_hours,
    count(*) filter (where failed) as failures,
    (select states from failure_states) as failure_states
from finished
group by grouping sets ((job_type), ())
order by all_types, job_type
