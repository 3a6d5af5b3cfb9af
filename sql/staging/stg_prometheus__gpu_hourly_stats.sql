-- grain: one row per GPU (series) per UTC hour of one run of the `prometheus` reader
-- depends_on: `_prom_points` (series_id, hour, stat, value: one row per statistic, series and hour of the
--             query_range results) and `_prom_series` (series_id, labels MAP), written by
--             pipelines/ingest/readers/prometheus.py
-- The statistics of a series (its labels without __name__) pivoted into one row per hour. DCGM's
-- blank/sentinel values (>= 2147483632) make a metric's hour unusable: a maximum at or above it turns that
-- metric's statistics for the hour into NULL (the raw-sample path drops the sentinel samples alone). NaN
-- and Inf become NULL. The sum of squares comes from the population standard deviation and the mean.
with pivoted as (
    select
        p.series_id,
        p.hour,
        any_value(s.labels) as m,
        max(p.value) filter (where p.stat = 'samples') as samples,
        max(p.value) filter (where p.stat = 'util_samples') as util_samples,
        max(p.value) filter (where p.stat = 'util_sum') as util_sum,
        max(p.value) filter (where p.stat = 'util_stddev') as util_stddev,
        max(p.value) filter (where p.stat = 'util_p95') as util_p95,
        max(p.value) filter (where p.stat = 'util_max') as util_max,
        max(p.value) filter (where p.stat = 'mem_util_mean') as mem_util_mean,
        max(p.value) filter (where p.stat = 'mem_util_max') as mem_util_max,
        max(p.value) filter (where p.stat = 'mem_used_mean_mib') as mem_used_mean_mib,
        max(p.value) filter (where p.stat = 'mem_used_max_mib') as mem_used_max_mib,
        max(p.value) filter (where p.stat = 'mem_free_mean_mib') as mem_free_mean_mib,
        max(p.value) filter (where p.stat = 'mem_reserved_mean_mib') as mem_reserved_mean_mib,
        max(p.value) filter (where p.stat = 'mem_total_mib') as mem_total_mib,
        max(p.value) filter (where p.stat = 'power_mean_w') as power_mean_w,
        max(p.value) filter (where p.stat = 'power_max_w') as power_max_w,
        max(p.value) filter (where p.stat = 'power_limit_w') as power_limit_w,
        max(p.value) filter (where p.stat = 'sm_active_mean') as sm_active_mean,
        max(p.value) filter (where p.stat = 'sm_active_max') as sm_active_max,
        max(p.value) filter (where p.stat = 'tensor_active_mean') as tensor_active_mean,
        max(p.value) filter (where p.stat = 'tensor_active_max') as tensor_active_max
    from _prom_points as p
    inner join _prom_series as s on s.series_id = p.series_id
    where isfinite(p.value)
    group by p.series_id, p.hour
),

usable as (
    select
        * replace (
            case when util_max < 2147483632 then util_samples end as util_samples,
            case when util_max < 2147483632 then util_sum end as util_sum,
            case when util_max < 2147483632 then util_stddev end as util_stddev,
            case when util_max < 2147483632 then util_p95 end as util_p95,
            case when util_max < 2147483632 then util_max end as util_max,
            case when mem_util_max < 2147483632 then mem_util_mean end as mem_util_mean,
            case when mem_used_max_mib < 2147483632 then mem_used_mean_mib end as mem_used_mean_mib,
            case when mem_used_max_mib < 2147483632 then mem_used_max_mib end as mem_used_max_mib,
            case when power_max_w < 2147483632 then power_mean_w end as power_mean_w,
            case when power_max_w < 2147483632 then power_max_w end as power_max_w,
            case when power_limit_w < 2147483632 then power_limit_w end as power_limit_w,
            case when sm_active_max < 2147483632 then sm_active_mean end as sm_active_mean,
            case when tensor_active_max < 2147483632 then tensor_active_mean end as tensor_active_mean
        )
    from pivoted
    where samples > 0
)

select
    hour,
    coalesce(
        $host,
        m[$host_label],
        m['node'],
        m['kubernetes_node'],
        case
            when not starts_with(coalesce(m['Hostname'], m['hostname']), 'dcgm-exporter')
                then coalesce(m['Hostname'], m['hostname'])
        end,
        split_part(m['instance'], ':', 1)
    ) as host,
    null::varchar as instance_id,
    coalesce(m['UUID'], m['uuid']) as gpu_uuid,
    try_cast(m['gpu'] as integer) as gpu_index,
    m['modelName'] as gpu_model,
    m['pci_bus_id'] as pci_bus_id,
    samples::bigint as samples,
    least(samples * $scrape_interval, 3600)::double as observed_s,
    util_samples::bigint as util_samples,
    util_sum,
    util_samples * (power(util_stddev, 2) + power(util_sum / nullif(util_samples, 0), 2)) as util_sumsq,
    util_p95,
    util_max,
    mem_util_mean,
    mem_used_mean_mib,
    mem_used_max_mib,
    coalesce(
        case when mem_total_mib < 2147483632 then mem_total_mib end,
        case when mem_used_max_mib < 2147483632 and mem_free_mean_mib < 2147483632
            then mem_used_mean_mib + mem_free_mean_mib
                + coalesce(case when mem_reserved_mean_mib < 2147483632 then mem_reserved_mean_mib end, 0)
        end
    ) as mem_total_mib,
    power_mean_w,
    power_max_w,
    power_limit_w,
    sm_active_mean,
    tensor_active_mean,
    coalesce(m['exported_pod'], m['pod'], m['pod_name']) as pod,
    coalesce(m['exported_namespace'], m['namespace'], m['pod_namespace']) as namespace,
    coalesce(m['exported_container'], m['container'], m['container_name']) as container,
    m['GPU_I_PROFILE'] as mig_profile,
    m['GPU_I_ID'] as mig_instance_id,
    m['hpc_job'] as job_id,
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
    ) as labels,
    $source_name as source,
    $source_file as x_source_file,
    $file_id as x_file_id,
    hour::date as x_hour_date
from usable
