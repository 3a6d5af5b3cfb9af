-- grain: one row per scheduler job x instant a checkpoint of its run was written while it ran (job_key, written)
-- depends_on: jobs_enriched, storage_checkpoints
-- The checkpoints each run wrote while it ran, from the storage lineage STO001 and GPU004 read: a step of a
-- checkpoint run that names the job, written after the job started and before it ended. ADV002 weighs the
-- work an interruption loses between them; ADV003 measures a job type's checkpoint interval and write time
-- from them.
-- job_key: the job (jobs_enriched.job_key)
-- written: when a checkpoint step of the job's run was written (UTC), each instant once
select distinct
    j.job_key,
    c.step_written as written
from jobs_enriched as j
inner join storage_checkpoints as c
    on list_contains(c.run_job_ids, j.job_id)
    and c.step_written > j.started_at
    and c.step_written < j.ended_at
where c.step is not null
