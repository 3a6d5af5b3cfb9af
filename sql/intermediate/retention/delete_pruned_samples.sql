-- grain: the raw GPU samples of the days recorded in gpu_samples_pruned before $before
-- depends_on: gpu_samples, gpu_samples_pruned
-- params: $before
delete from gpu_samples
where x_sample_date < $before
    and x_sample_date in (select day from gpu_samples_pruned)
