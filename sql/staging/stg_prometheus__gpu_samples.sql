-- grain: one row per GPU (series) per sample time of one Prometheus /api/v1/query_range response
-- depends_on: `_src` (one row per result series: metric MAP, "values" JSON[], value JSON) and `_metrics`
--             (metric, column_name, scale: pipelines/catalog/dcgm_metrics.csv), built by
--             pipelines/ingest/readers/prometheus_json.py
-- A matrix (or instant vector) result for DCGM metrics: series of the catalogue's metrics are pivoted into
-- one row per label set (without __name__) and timestamp (float seconds). Values are strings; DCGM's
-- blank/sentinel values (>= 2147483632), NaN and Inf become NULL; missing points stay missing.
with series as (
    select
        metric['__name__'] as name,
        map_from_entries(
            list_sort(list_filter(map_entries(metric), lambda e: e.key <> '__name__' and e.value <> ''))
        ) as m,
        coalesce("values", [value]) as points
    from _src
),

points as (
    select
        s.m,
        cast(s.m as varchar) as series_key,
        k.column_name as metric,
        k.scale,
        unnest(s.points) as point
    from series as s
    inner join _metrics as k on k.metric = s.name
),

samples as (
    select
        m,
        series_key,
        metric,
        to_timestamp(try_cast(json_extract(point, '$[0]') as double))::timestamp as ts,
        case
            when try_cast(json_extract_string(point, '$[1]') as double) < 2147483632
                and isfinite(try_cast(json_extract_string(point, '$[1]') as double))
                then try_cast(json_extract_string(point, '$[1]') as double) * scale
        end as value
    from points
    where point is not null
),

pivoted as (
    select
        series_key,
        ts,
        any_value(m) as m,
        max(value) filter (where metric = 'util_pct') as util_pct,
        max(value) filter (where metric = 'mem_util_pct') as mem_util_pct,
        max(value) filter (where metric = 'mem_used_mib') as mem_used_mib,
        max(value) filter (where metric = 'mem_free_mib') as mem_free_mib,
        max(value) filter (where metric = 'mem_reserved_mib') as mem_reserved_mib,
        max(value) filter (where metric = 'mem_total_mib') as mem_total_mib,
        max(value) filter (where metric = 'power_w') as power_w,
        max(value) filter (where metric = 'power_limit_w') as power_limit_w,
        max(value) filter (where metric = 'temperature_c') as temperature_c,
        max(value) filter (where metric = 'sm_clock_mhz') as sm_clock_mhz,
        max(value) filter (where metric = 'mem_clock_mhz') as mem_clock_mhz,
        max(value) filter (where metric = 'sm_active') as sm_active,
        max(value) filter (where metric = 'sm_occupancy') as sm_occupancy,
        max(value) filter (where metric = 'tensor_active') as tensor_active,
        max(value) filter (where metric = 'dram_active') as dram_active,
        max(value) filter (where metric = 'gr_engine_active') as gr_engine_active
    from samples
    group by series_key, ts
)

select
    ts,
    coalesce(
        $host,
        m[$host_label],
        m['node'],
        m['kubernetes_node'],
        case
            when not starts_with(coalesce(m['Hostname'], m['hostname']), 'dcgm-exporter')
                then coalesce(m['Hostname'], m['hostname'])
        end,
        $path_host,
        split_part(m['instance'], ':', 1)
    ) as host,
    null::varchar as instance_id,
    coalesce(m['UUID'], m['uuid']) as gpu_uuid,
    try_cast(m['gpu'] as integer) as gpu_index,
    m['modelName'] as gpu_model,
    m['pci_bus_id'] as pci_bus_id,
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
    coalesce(m['exported_pod'], m['pod'], m['pod_name']) as pod,
    coalesce(m['exported_namespace'], m['namespace'], m['pod_namespace']) as namespace,
    coalesce(m['exported_container'], m['container'], m['container_name']) as container,
    m['GPU_I_PROFILE'] as mig_profile,
    m['GPU_I_ID'] as mig_instance_id,
    m['hpc_job'] as job_id,
    gr_engine_active,
    map_from_entries(
        list_transform(
            list_filter(
                map_entries(m),
                lambda e: e.key not in (
                    'gpu', 'UUID', 'uuid', 'modelName', 'pci_bus_id', 'Hostname', 'hostname', 'pod', 'namespace',
                    'container', 'exported_pod', 'exported_namespace', 'exported_container', 'pod_name',
                    'pod_namespace', 'container_name', 'GPU_I_PROFILE', 'GPU_I_ID', 'hpc_job'
                )
            ),
            lambda e: {'key': normalize_tag_key(e.key), 'value': e.value}
        )
    ) as labels
from pivoted
