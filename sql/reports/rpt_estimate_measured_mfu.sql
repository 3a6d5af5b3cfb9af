-- Measured MFU of finished training jobs comparable to an estimate: the same GPU model (the peak
-- catalogue's name) and a parameter count within 2x of $params. `wastewatch estimate --mfu measured`.
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
