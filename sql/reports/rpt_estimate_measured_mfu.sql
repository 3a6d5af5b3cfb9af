-- grain: one row over the comparable finished jobs
-- depends_on: job_mfu
-- params: $gpu_model (the peak catalogue's name), $params (the estimate's parameter count)
-- Measured MFU of finished training jobs comparable to an estimate: the same GPU model and a parameter
-- count within 2x of $params; what `wastewatch estimate --mfu measured` uses.
select
    count(*) as jobs,
    median(mfu) as mfu,
    min(mfu) as mfu_min,
    max(mfu) as mfu_max
from job_mfu
where gpu_model = $gpu_model
    and mfu is not null
    and params between $params / 2 and $params * 2
    and ended_at is not null
    and coalesce(state, '') not in ('RUNNING', 'PENDING', 'REQUEUED')
