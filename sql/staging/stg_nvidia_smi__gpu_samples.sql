-- grain: one row per GPU per sample of one nvidia-smi file
-- depends_on: the file relation `_src` (VARCHAR columns named as gpu_samples), built by
--             pipelines/ingest/readers/nvidia_smi.py
-- Units and unavailable markers ([N/A], [Not Supported], ...) stripped; local time converted to UTC.
with numbers as (
    select
        _row,
        parse_utc(ts, $tz) as ts,
        coalesce($host, nullif(host, '')) as host,
        nullif(gpu_uuid, '') as gpu_uuid,
        try_cast(regexp_extract(gpu_index, '^-?[0-9]+') as integer) as gpu_index,
        nullif(regexp_replace(gpu_model, '^\[.*\]$', ''), '') as gpu_model,
        nullif(regexp_replace(pci_bus_id, '^\[.*\]$', ''), '') as pci_bus_id,
        try_cast(regexp_extract(util_pct, '^-?[0-9]+(\.[0-9]+)?') as double) as util_pct,
        try_cast(regexp_extract(mem_util_pct, '^-?[0-9]+(\.[0-9]+)?') as double) as mem_util_pct,
        try_cast(regexp_extract(mem_used_mib, '^-?[0-9]+(\.[0-9]+)?') as double) as mem_used_mib,
        try_cast(regexp_extract(mem_total_mib, '^-?[0-9]+(\.[0-9]+)?') as double) as mem_total_mib,
        try_cast(regexp_extract(power_w, '^-?[0-9]+(\.[0-9]+)?') as double) as power_w,
        try_cast(regexp_extract(power_limit_w, '^-?[0-9]+(\.[0-9]+)?') as double) as power_limit_w,
        try_cast(regexp_extract(temperature_c, '^-?[0-9]+(\.[0-9]+)?') as double) as temperature_c,
        try_cast(regexp_extract(sm_clock_mhz, '^-?[0-9]+(\.[0-9]+)?') as double) as sm_clock_mhz,
        try_cast(regexp_extract(mem_clock_mhz, '^-?[0-9]+(\.[0-9]+)?') as double) as mem_clock_mhz,
        nullif(regexp_replace(pstate, '^\[.*\]$', ''), '') as pstate
    from _src
    where lower(ts) is distinct from 'timestamp'    -- header lines repeated by appended captures
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
    mem_total_mib,
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
    $source_file as x_source_file,
    $file_id as x_file_id,
    ts::date as x_sample_date
from numbers
