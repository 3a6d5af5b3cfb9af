-- grain: one row per GPU (entity) per timestamp of one long-format metrics CSV
-- depends_on: `_src` (one row per line: VARCHAR ts, value, metric and the entity columns named as in
--             gpu_samples, plus a labels MAP of the other columns) and `_metrics` (metric, column_name, scale),
--             built by pipelines/ingest/readers/metrics_csv.py
-- Long format (timestamp, entity columns, metric, value) pivoted into gpu_samples' wide rows: one row per
-- entity (host, GPU, MIG instance, pod, other columns) and timestamp. Timestamps are ISO (local time in $tz
-- unless they carry an offset) or epoch seconds / milliseconds. Metrics not in `_metrics` are ignored.
with typed as (
    select
        coalesce(epoch_utc(try_cast(ts as double)), parse_utc(ts, $tz)) as ts,
        coalesce($host, nullif(trim(host), '')) as host,
        nullif(trim(instance_id), '') as instance_id,
        nullif(trim(gpu_uuid), '') as gpu_uuid,
        try_cast(trim(gpu_index) as integer) as gpu_index,
        nullif(trim(gpu_model), '') as gpu_model,
        nullif(trim(pod), '') as pod,
        nullif(trim(namespace), '') as namespace,
        nullif(trim(container), '') as container,
        nullif(trim(mig_profile), '') as mig_profile,
        nullif(trim(mig_instance_id), '') as mig_instance_id,
        nullif(trim(job_id), '') as job_id,
        labels,
        m.column_name as metric_column,
        -- after the scale (bytes -> MiB); DCGM sentinels stay above DCGM_INT32_BLANK whatever the scale
        case
            when try_cast(trim(value) as double) * m.scale < 2147483632 and isfinite(try_cast(trim(value) as double))
                then try_cast(trim(value) as double) * m.scale
        end as value
    from _src
    inner join _metrics as m on m.metric = trim(_src.metric)
),

pivoted as (
    select
        ts,
        host,
        instance_id,
        gpu_uuid,
        gpu_index,
        gpu_model,
        pod,
        namespace,
        container,
        mig_profile,
        mig_instance_id,
        job_id,
        labels,
        max(value) filter (where metric_column = 'util_pct') as util_pct,
        max(value) filter (where metric_column = 'mem_util_pct') as mem_util_pct,
        max(value) filter (where metric_column = 'mem_used_mib') as mem_used_mib,
        max(value) filter (where metric_column = 'mem_free_mib') as mem_free_mib,
        max(value) filter (where metric_column = 'mem_reserved_mib') as mem_reserved_mib,
        max(value) filter (where metric_column = 'mem_total_mib') as mem_total_mib,
        max(value) filter (where metric_column = 'power_w') as power_w,
        max(value) filter (where metric_column = 'power_limit_w') as power_limit_w,
        max(value) filter (where metric_column = 'temperature_c') as temperature_c,
        max(value) filter (where metric_column = 'sm_clock_mhz') as sm_clock_mhz,
        max(value) filter (where metric_column = 'mem_clock_mhz') as mem_clock_mhz,
        max(value) filter (where metric_column = 'sm_active') as sm_active,
        max(value) filter (where metric_column = 'sm_occupancy') as sm_occupancy,
        max(value) filter (where metric_column = 'tensor_active') as tensor_active,
        max(value) filter (where metric_column = 'dram_active') as dram_active,
        max(value) filter (where metric_column = 'gr_engine_active') as gr_engine_active
    from typed
    group by all
)

select
    ts,
    host,
    instance_id,
    gpu_uuid,
    gpu_index,
    gpu_model,
    null::varchar as pci_bus_id,
    util_pct,
    mem_util_pct,
    mem_used_mib,
    coalesce(mem_total_mib, mem_used_mib + mem_free_mib + coalesce(mem_reserved_mib, 0)) as mem_total_mib,
    power_w,
    power_limit_w,
    temperature_c,
    sm_clock_mhz,
    mem_clock_mhz,
    null::varchar as pstate,
    sm_active,
    sm_occupancy,
    tensor_active,
    dram_active,
    $source_name as source,
    $source_file as x_source_file,
    $file_id as x_file_id,
    ts::date as x_sample_date,
    pod,
    namespace,
    container,
    mig_profile,
    mig_instance_id,
    job_id,
    gr_engine_active,
    labels
from pivoted
