-- grain: one row per scheduler job (allocation), steps folded into it
-- Written by the job readers (slurm_sacct, k8s_pods, jobs_csv); rules read it through marts.
create table if not exists jobs (
    job_id varchar not null,              -- scheduler's id (Slurm JobIDRaw, pod uid, ...), unique per (scheduler, cluster)
    scheduler varchar not null,           -- slurm | kubernetes | csv
    cluster varchar,
    job_name varchar,
    run_id varchar,                       -- training run the job belongs to (checkpoint lineage), when known
    user varchar,
    account varchar,                      -- Slurm account / k8s namespace
    team varchar,                         -- from the record, else from the billing tags of its hosts
    project varchar,
    partition varchar,
    state varchar,                        -- normalised: COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY,
                                          -- NODE_FAIL, PREEMPTED, RUNNING, PENDING, REQUEUED, BOOT_FAIL, DEADLINE
    state_raw varchar,                    -- as the scheduler wrote it ("CANCELLED by 132794")
    exit_code varchar,                    -- "1:0" (Slurm code:signal) or a container exit code
    submitted_at timestamp,               -- UTC
    started_at timestamp,                 -- UTC; NULL if it never started
    ended_at timestamp,                   -- UTC; NULL while running
    gpus_requested integer,               -- total GPUs allocated across nodes
    gpu_type varchar,                     -- from typed gres (gres/gpu:h100) or requests, when known
    nodes integer,
    hosts varchar[],                      -- expanded host names (gpu[01-02] -> gpu01, gpu02)
    instance_ids varchar[],               -- cloud instance ids when the record carries them
    gpu_indices integer[],                -- GPU indices on the host when known (e.g. from CUDA_VISIBLE_DEVICES)
    tags map(varchar, varchar),           -- labels / comment key=values, normalised keys
    source varchar not null,
    x_source_file varchar not null,
    x_file_id varchar not null
);
