-- grain: one row per GPU per sample
-- Telemetry from every reader in one shape; NULL where the source could not tell.
create table if not exists gpu_samples (
    ts timestamp not null,                -- UTC
    host varchar not null,
    instance_id varchar,
    gpu_uuid varchar,
    gpu_index integer,
    gpu_model varchar,
    pci_bus_id varchar,
    util_pct double,                      -- 0-100
    mem_util_pct double,
    mem_used_mib double,
    mem_total_mib double,
    power_w double,
    power_limit_w double,
    temperature_c double,
    sm_clock_mhz double,
    mem_clock_mhz double,
    pstate varchar,
    sm_active double,                     -- DCGM profiling ratios 0-1 (NULL from nvidia-smi)
    sm_occupancy double,
    tensor_active double,
    dram_active double,
    source varchar not null,
    x_source_file varchar not null,
    x_file_id varchar not null,
    x_sample_date date not null,          -- partition key
    -- added in schema version 2 (migration 0002), hence after the lineage columns
    pod varchar,                          -- Kubernetes pod / namespace / container using the GPU (DCGM labels)
    namespace varchar,
    container varchar,
    mig_profile varchar,                  -- MIG: GPU instance profile (e.g. 1g.10gb) and id; NULL for a whole GPU
    mig_instance_id varchar,
    job_id varchar,                       -- scheduler job the telemetry itself names (DCGM hpc_job), when known
    gr_engine_active double,              -- DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0-1
    labels map(varchar, varchar)          -- other exporter labels, normalised keys
);
