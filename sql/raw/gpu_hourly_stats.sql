-- grain: one row per GPU per UTC hour, pre-aggregated by the metrics store
-- Written by the `prometheus` reader: the hourly statistics Prometheus' `*_over_time` functions compute over
-- the samples of [hour, hour + 1 h) (docs/telemetry.md). int_gpu_slices rolls them up with gpu_samples'
-- rows, so gpu_job_hours and gpu_hours read both kinds of telemetry alike. Sums and counts add up; means
-- are over the hour's samples of each metric.
create table if not exists gpu_hourly_stats (
    hour timestamp not null,              -- UTC start of the hour
    host varchar not null,
    instance_id varchar,
    gpu_uuid varchar,
    gpu_index integer,
    gpu_model varchar,
    pci_bus_id varchar,
    samples bigint not null,              -- samples of the GPU in the hour (the most of any metric's)
    observed_s double not null,           -- samples x the source's scrape_interval, at most 3600 s
    util_samples bigint,                  -- utilisation samples (count_over_time)
    util_sum double,                      -- sum of utilisation, percent (sum_over_time)
    util_sumsq double,                    -- sum of squared utilisation (from stddev_over_time and the mean)
    util_p95 double,                      -- quantile_over_time(0.95): interpolated like DuckDB's quantile_cont
    util_max double,
    mem_util_mean double,
    mem_used_mean_mib double,
    mem_used_max_mib double,
    mem_total_mib double,                 -- mean of used + free (+ reserved): the board's memory
    power_mean_w double,
    power_max_w double,
    power_limit_w double,
    sm_active_mean double,                -- 0-1; DCGM_FI_PROF_GR_ENGINE_ACTIVE where SM_ACTIVE is absent
    tensor_active_mean double,
    pod varchar,
    namespace varchar,
    container varchar,
    mig_profile varchar,
    mig_instance_id varchar,
    job_id varchar,                       -- the scheduler job the series names (DCGM hpc_job label)
    labels map(varchar, varchar),         -- other series labels, normalised keys
    source varchar not null,
    x_source_file varchar not null,       -- the server's base URL (credentials never stored)
    x_file_id varchar not null,
    x_hour_date date not null             -- partition key: the hour's UTC date
);
