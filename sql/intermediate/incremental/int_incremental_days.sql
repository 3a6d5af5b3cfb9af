-- grain: one row per day-incremental table x day
-- The fingerprint of everything a day's rows were built from; a day whose inputs fingerprint differently
-- is rebuilt.
create table if not exists int_incremental_days (
    object varchar not null,              -- the table: int_gpu_slices, gpu_job_hours, gpu_hours
    day date not null,
    fingerprint ubigint not null,         -- of everything the day's rows were built from
    built_at timestamp not null,
    primary key (object, day)
)
