-- job_failed(state): whether a job's final scheduler state (as the staging maps every scheduler's) says it
-- ended without finishing its work: GPU004 prices such jobs and the other GPU rules leave them to it
-- (gpu_claims, gpu_job_spans); STO001 counts a preempted run's checkpoints with them.
create or replace temp macro job_failed(state) as
    state in ('FAILED', 'CANCELLED', 'TIMEOUT', 'OUT_OF_MEMORY', 'NODE_FAIL', 'BOOT_FAIL', 'DEADLINE');
