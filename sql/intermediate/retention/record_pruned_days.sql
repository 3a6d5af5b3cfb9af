-- grain: one row per sample day dropped
-- depends_on: gpu_samples, int_incremental_days, gpu_samples_pruned
-- params: $before, $now
-- The sample days before $before that the hourly roll-up holds (or that were dropped before: late samples of
-- a frozen day), recorded in gpu_samples_pruned before their rows are deleted; a day recorded before adds
-- the rows dropped now to its count.
insert into gpu_samples_pruned
select
    x_sample_date as day,
    count(*) as samples,
    min(ts) as first_ts,
    max(ts) as last_ts,
    $now as pruned_at
from gpu_samples
where x_sample_date < $before
    and (
        x_sample_date in (select day from int_incremental_days where object = 'int_gpu_slices')
        or x_sample_date in (select day from gpu_samples_pruned)
    )
group by x_sample_date
on conflict (day) do update set
    samples = gpu_samples_pruned.samples + excluded.samples,
    first_ts = least(gpu_samples_pruned.first_ts, excluded.first_ts),
    last_ts = greatest(gpu_samples_pruned.last_ts, excluded.last_ts),
    pruned_at = excluded.pruned_at
