-- grain: one row per GPU (series) per scrape of one or many dcgm-exporter scrape files
-- depends_on: `_src` (c0..c3, _path: the files' lines split at `{`, so c0 is the metric name and c1 the
--             rest), `_files` (path, uri, file_id, file_ts, path_host) and
--             `_metrics` (metric, column_name, scale: pipelines/catalog/dcgm_metrics.csv), built by
--             pipelines/ingest/readers/dcgm.py
-- Prometheus text exposition: `name{label="value",...} value [timestamp]`. Comment lines are skipped; a
-- line that is not a sample stops the statement naming its file (the reader then names the line).
-- Only the catalogue's metrics are read; their lines are pivoted into one row per series and time (the
-- line's timestamp, else the file's time). DCGM's blank/sentinel values (>= 2147483632 = DCGM_INT32_BLANK,
-- which also covers the int64 and fp64 blanks), NaN and Inf become NULL. The catalogue's scale turns the
-- 1.x exporter's percentages into the 0-1 ratios of DCGM_FI_PROF_*. Labels are parsed once per distinct
-- label set, not once per line.
with parts as (
    select
        _path,
        coalesce(c0, '') as c0,  -- empty (NULL) for `promtool tsdb dump` lines, which start with `{`
        -- a `{` inside a label value split the line further: put it back
        case when c2 is null then c1 else c1 || '{' || c2 || coalesce('{' || c3, '') end as rest
    from _src
    where not starts_with(coalesce(c0, ''), '#') and (coalesce(c0, '') <> '' or c1 is not null)
),

tails as (
    select
        _path,
        c0,
        rest,
        -- the first `} ` closes the label set (label values do not hold `} `; if one did, the line fails the
        -- checks below and the file is rejected, never misread)
        case when rest is null then substr(c0, strpos(c0, ' ') + 1) else split_part(rest, '} ', 2) end as tail,
        case when rest is null then '' else split_part(rest, '} ', 1) end as labels_raw
    from parts
),

samples as (
    select
        _path,
        c0,
        rest,
        -- `promtool tsdb dump` writes the name as a label: {__name__="...", ...}
        case
            when rest is null then split_part(c0, ' ', 1)
            when c0 = '' then regexp_extract(labels_raw, '__name__="([^"]*)"', 1)
            else c0
        end as name,
        case
            when c0 = '' and rest is not null then regexp_replace(labels_raw, '__name__="[^"]*"\s*,?\s*', '')
            else labels_raw
        end as label_text,
        split_part(tail, ' ', 1) as value_text,
        split_part(tail, ' ', 2) as ts_text,
        split_part(tail, ' ', 3) as extra,
        rest is not null and strpos(rest, '} ') = 0 as unclosed
    from tails
),

checked as (
    select
        hash(s._path) as path_hash,
        s.label_text,
        m.column_name as metric,
        -- DCGM blanks (>= DCGM_INT32_BLANK 0x7ffffff0, which the int64/fp64 blanks exceed too), NaN, Inf
        case
            when try_cast(s.value_text as double) < 2147483632 and isfinite(try_cast(s.value_text as double))
                then try_cast(s.value_text as double) * m.scale
        end as value,
        try_cast(nullif(s.ts_text, '') as double) as ts_num
    from samples as s
    inner join _metrics as m on m.metric = s.name
    -- every sample line is checked, before the join keeps the catalogue's metrics only
    where
        case
            when s.unclosed or s.name = '' or try_cast(s.value_text as double) is null
                or (s.ts_text <> '' and try_cast(s.ts_text as double) is null) or s.extra <> ''
                then error(
                    'wastewatch: malformed line [path=' || s._path || '] ' || left(s.c0 || coalesce('{' || s.rest, ''), 200)
                )
            else true
        end
),

pivoted as (
    select
        any_value(path_hash) as path_hash,
        any_value(label_text) as label_text,
        ts_num,
        greatest(
            count(*) filter (where metric = 'util_pct'),
            count(*) filter (where metric = 'mem_used_mib'),
            count(*) filter (where metric = 'power_w')
        ) > 1 and ts_num is null as repeated_without_time,
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
    from checked
    -- one series of one file at one time; hashed keys group faster than the long label text
    group by hash(path_hash, label_text), ts_num
),

label_sets as (
    select
        label_text,
        regexp_extract_all(label_text, '([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', 1) as keys,
        list_transform(
            regexp_extract_all(label_text, '([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', 2),
            lambda v: replace(replace(replace(v, '\"', '"'), '\n', chr(10)), '\\', '\')
        ) as vals,
        regexp_full_match(label_text, '\s*([A-Za-z_][A-Za-z0-9_]*\s*=\s*"(?:[^"\\]|\\.)*"\s*(,\s*|$))*')
            as well_formed
    from (select distinct label_text from pivoted)
),

label_maps as (
    select
        label_text,
        well_formed,
        map_from_entries(
            list_transform(list_zip(keys, vals), lambda kv: {'key': kv[1], 'value': nullif(kv[2], '')})
        ) as m
    from label_sets
),

labelled as (
    select
        label_text,
        well_formed,
        coalesce(
            m[$host_label],
            m['node'],
            m['kubernetes_node'],
            case
                when not starts_with(coalesce(m['Hostname'], m['hostname']), 'dcgm-exporter')
                    then coalesce(m['Hostname'], m['hostname'])
            end
        ) as label_host,
        split_part(m['instance'], ':', 1) as instance_host,
        coalesce(m['UUID'], m['uuid']) as gpu_uuid,
        try_cast(m['gpu'] as integer) as gpu_index,
        m['modelName'] as gpu_model,
        m['pci_bus_id'] as pci_bus_id,
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
                    lambda e: e.value is not null and e.key not in (
                        'gpu', 'UUID', 'uuid', 'modelName', 'pci_bus_id', 'Hostname', 'hostname', 'pod',
                        'namespace', 'container', 'exported_pod', 'exported_namespace', 'exported_container',
                        'pod_name', 'pod_namespace', 'container_name', 'GPU_I_PROFILE', 'GPU_I_ID', 'hpc_job'
                    )
                ),
                lambda e: {'key': normalize_tag_key(e.key), 'value': e.value}
            )
        ) as labels
    from label_maps
),

timed as (
    select
        p.*,
        -- Prometheus writes milliseconds, OpenMetrics seconds
        coalesce(epoch_utc(p.ts_num), f.file_ts) as sample_ts,
        f.uri,
        f.file_id,
        f.path_host,
        f.path as _path
    from pivoted as p
    inner join _files as f on hash(f.path) = p.path_hash
)

select
    case
        when t.repeated_without_time
            then error('wastewatch: several scrapes without sample timestamps [path=' || t._path || ']')
        when not l.well_formed
            then error('wastewatch: malformed labels [path=' || t._path || '] {' || left(t.label_text, 200) || '}')
        else t.sample_ts
    end as ts,
    coalesce($host, l.label_host, t.path_host, l.instance_host) as host,
    null::varchar as instance_id,
    l.gpu_uuid,
    l.gpu_index,
    l.gpu_model,
    l.pci_bus_id,
    t.util_pct,
    t.mem_util_pct,
    t.mem_used_mib,
    coalesce(t.mem_total_mib, t.mem_used_mib + t.mem_free_mib + coalesce(t.mem_reserved_mib, 0)) as mem_total_mib,
    t.power_w,
    t.power_limit_w,
    t.temperature_c,
    t.sm_clock_mhz,
    t.mem_clock_mhz,
    null::varchar as pstate,
    t.sm_active,
    t.sm_occupancy,
    t.tensor_active,
    t.dram_active,
    $source_name as source,
    t.uri as x_source_file,
    t.file_id as x_file_id,
    t.sample_ts::date as x_sample_date,
    l.pod,
    l.namespace,
    l.container,
    l.mig_profile,
    l.mig_instance_id,
    l.job_id,
    t.gr_engine_active,
    l.labels
from timed as t
inner join labelled as l on l.label_text = t.label_text
