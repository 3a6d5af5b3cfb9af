-- grain: one row per sample day whose raw GPU samples were dropped by the retention (`retention:`)
-- What was dropped and when: the day's hourly roll-up (int_gpu_slices) and the marts built on it stay, and
-- the day is never rolled up again; late samples for it are dropped in turn and counted here.
create table if not exists gpu_samples_pruned (
    day date primary key,                 -- x_sample_date of the dropped samples
    samples bigint not null,              -- rows dropped, over every run that dropped some
    first_ts timestamp not null,          -- the earliest and latest sample dropped (UTC)
    last_ts timestamp not null,
    pruned_at timestamp not null          -- the last run that dropped rows of the day
);
