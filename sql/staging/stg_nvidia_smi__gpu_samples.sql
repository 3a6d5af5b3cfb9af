-- grain: one row per GPU per sample of one nvidia-smi file
-- depends_on: the relation `_src` over one or many files (VARCHAR columns named as gpu_samples, plus
--             mem_free_mib, mem_reserved_mib and each row's file: _fixed_host, _source_file, _file_id),
--             built by pipelines/ingest/readers/nvidia_smi.py
-- One pass, no regular expressions: a value is its first word (`77.14 W` -> 77.14; the reader trims the
-- values of `,`-separated files) and whatever is not a number ([N/A], [Not Supported], ...) becomes NULL. nvidia-smi's `2026/11/30 01:42:29.348` is
-- read by the macro nvidia_smi_time (other ISO forms through parse_utc; both want a four-digit year); local
-- time is converted to UTC unless the zone is UTC. A timestamp that cannot be read stops the statement (the
-- reader then names its line).
with local_times as (
    select
        *,
        nvidia_smi_time(ts) as ts_local
    from _src
    where ts is distinct from 'timestamp'    -- header lines repeated by appended captures
),

numbers as (
    select
        coalesce(
            case when ts_local is null then parse_utc(ts, $tz) else local_utc(ts_local, $tz) end,
            error(
                'wastewatch: unreadable timestamp ' || coalesce('''' || ts || '''', 'NULL')
                || ' [file_id=' || _file_id || ']'
            )
        ) as ts,
        coalesce(_fixed_host, nullif(host, '')) as host,
        case when starts_with(gpu_uuid, '[') then null else nullif(gpu_uuid, '') end as gpu_uuid,
        try_cast(gpu_index as integer) as gpu_index,
        case when starts_with(gpu_model, '[') then null else nullif(gpu_model, '') end as gpu_model,
        case when starts_with(pci_bus_id, '[') then null else nullif(pci_bus_id, '') end as pci_bus_id,
        try_cast(split_part(util_pct, ' ', 1) as double) as util_pct,
        try_cast(split_part(mem_util_pct, ' ', 1) as double) as mem_util_pct,
        try_cast(split_part(mem_used_mib, ' ', 1) as double) as mem_used_mib,
        try_cast(split_part(mem_total_mib, ' ', 1) as double) as mem_total_mib,
        try_cast(split_part(mem_free_mib, ' ', 1) as double) as mem_free_mib,
        try_cast(split_part(mem_reserved_mib, ' ', 1) as double) as mem_reserved_mib,
        try_cast(split_part(power_w, ' ', 1) as double) as power_w,
        try_cast(split_part(power_limit_w, ' ', 1) as double) as power_limit_w,
        try_cast(split_part(temperature_c, ' ', 1) as double) as temperature_c,
        try_cast(split_part(sm_clock_mhz, ' ', 1) as double) as sm_clock_mhz,
        try_cast(split_part(mem_clock_mhz, ' ', 1) as double) as mem_clock_mhz,
        case when starts_with(pstate, '[') then null else nullif(pstate, '') end as pstate,
        _source_file,
        _file_id
    from local_times
)

select
    ts,
    host,
    null::varchar as instance_id,
    gpu_uuid,
    gpu_index,
    gpu_model,
    pci_bus_id,
    util_pct,
    mem_util_pct,
    mem_used_mib,
    coalesce(mem_total_mib, mem_used_mib + mem_free_mib + coalesce(mem_reserved_mib, 0)) as mem_total_mib,
    power_w,
    power_limit_w,
    temperature_c,
    sm_clock_mhz,
    mem_clock_mhz,
    pstate,
    null::double as sm_active,
    null::double as sm_occupancy,
    null::double as tensor_active,
    null::double as dram_active,
    $source_name as source,
    _source_file as x_source_file,
    _file_id as x_file_id,
    ts::date as x_sample_date
from numbers
