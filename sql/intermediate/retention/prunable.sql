-- grain: one row
-- depends_on: gpu_samples, int_incremental_days, gpu_samples_pruned
-- params: $before
-- How many sample days and rows the retention would drop now: days before $before that the hourly
-- roll-up holds, or that were dropped before (late samples of a frozen day).
select
    count(distinct x_sample_date) as days,
    count(*) as samples
from gpu_samples
where x_sample_date < $before
    and (
        x_sample_date in (select day from int_incremental_days where object = 'int_gpu_slices')
        or x_sample_date in (select day from gpu_samples_pruned)
    )
