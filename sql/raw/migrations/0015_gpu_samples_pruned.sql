-- schema version 15: the retention of raw GPU samples (`retention: gpu_samples_days`) records the days it
-- dropped in gpu_samples_pruned. A new table: nothing existing changes.
create table if not exists gpu_samples_pruned (
    day date primary key,                 -- x_sample_date of the dropped samples
    samples bigint not null,              -- rows dropped, over every run that dropped some
    first_ts timestamp not null,          -- the earliest and latest sample dropped (UTC)
    last_ts timestamp not null,
    pruned_at timestamp not null          -- the last run that dropped rows of the day
);
