-- grain: one row per job x hour with timed training-log intervals (job_key, hour)
-- depends_on: job_mfu, int_train_intervals
-- The job's measured MFU hour by hour (the hour an interval ends in): the same formula as job_mfu over the
-- intervals of the hour, so a rule can tell how long a job stayed below a floor.
-- hour: UTC start of the hour
-- logged_s: wall-clock seconds of the job's intervals ending in the hour
-- tokens: tokens of those intervals
-- mfu: 6 x params x tokens / logged_s / (gpus x peak): the hour's time-weighted MFU (0-1)
-- mfu_median: median of the hour's interval MFUs
select
    i.job_key,
    i.hour,
    count(*) as intervals,
    sum(i.wall_s) as logged_s,
    sum(i.tokens) as tokens,
    6 * max(j.params) * sum(i.tokens) / sum(i.wall_s) / (max(j.gpus) * max(j.peak_dense_tflops) * 1e12) as mfu,
    median(6 * i.params * i.tokens / i.wall_s / (j.gpus * j.peak_dense_tflops * 1e12)) as mfu_median
from int_train_intervals as i
inner join job_mfu as j on j.job_key = i.job_key
where i.wall_s > 0 and i.tokens is not null and j.gpus > 0 and j.peak_dense_tflops > 0
group by i.job_key, i.hour
