-- grain: one row per scheduler job (job_key = scheduler/cluster/job_id), the latest record of each
-- depends_on: jobs
-- The same job can arrive in several files (overlapping sacct dumps, repeated pod listings): the record
-- that has ended wins, then the one from the latest file. `last_checkpoint_at` comes from the job's own
-- tags when its exporter records it (a `last_checkpoint_at` column of a jobs_csv file, for example).
with records as (
    select
        concat_ws('/', scheduler, cluster, job_id) as job_key,
        *
    from jobs
)

select
    job_key,
    job_id,
    scheduler,
    cluster,
    job_name,
    run_id,
    user,
    account,
    team,
    project,
    partition,
    state,
    state_raw,
    exit_code,
    submitted_at,
    started_at,
    ended_at,
    case when started_at is not null
        then greatest(epoch(coalesce(ended_at, started_at)) - epoch(started_at), 0)
    end as runtime_s,
    gpus_requested,
    gpu_type,
    nodes,
    hosts,
    instance_ids,
    gpu_indices,
    try_cast(tags['last_checkpoint_at'] as timestamp) as last_checkpoint_at,
    tags,
    source
from records
qualify row_number() over (
    partition by job_key order by ended_at is null, x_source_file desc, ended_at desc
) = 1
