-- grain: one row per GPU per sample of one `nvidia-smi dmon -o DT` file (plus _row and _problem)
-- depends_on: the file relation `_src` (_row, line: the file's lines), built by
--             pipelines/ingest/readers/nvidia_smi_dmon.py
-- Fixed-width columns split at white space; each data line is read by the `#` header line above it
-- (column sets vary with -s and the driver: parse by name). `-` is unavailable (NULL). Date and Time are
-- local time in $tz. `_problem` says what is wrong with a line (the reader rejects or skips it).
with tokens as (
    select
        _row,
        starts_with(ltrim(line), '#') as is_header,
        string_split_regex(trim(ltrim(trim(line), '#')), '\s+') as parts
    from _src
    where trim(line) <> ''
),

headed as (
    select
        *,
        last_value(
            case
                when is_header and list_contains(list_transform(parts, lambda p: lower(p)), 'gpu')
                    then list_transform(parts, lambda p: lower(p))
            end ignore nulls
        ) over (order by _row rows between unbounded preceding and current row) as header
    from tokens
),

fields as (
    select
        _row,
        header,
        len(parts) as n_values,
        len(header) as n_fields,
        parts[list_position(header, 'date')] as date_text,
        parts[list_position(header, 'time')] as time_text,
        parts[list_position(header, 'gpu')] as gpu_text,
        parts[list_position(header, 'pwr')] as pwr,
        parts[list_position(header, 'gtemp')] as gtemp,
        parts[list_position(header, 'sm')] as sm,
        parts[list_position(header, 'mem')] as mem,
        parts[list_position(header, 'mclk')] as mclk,
        parts[list_position(header, 'pclk')] as pclk,
        parts[list_position(header, 'fb')] as fb
    from headed
    where not is_header
),

typed as (
    select
        *,
        try_strptime(date_text || ' ' || time_text, '%Y%m%d %H:%M:%S') as ts_local,
        try_cast(gpu_text as integer) as gpu_index,
        try_cast(nullif(pwr, '-') as double) as power_w,
        try_cast(nullif(gtemp, '-') as double) as temperature_c,
        try_cast(nullif(sm, '-') as double) as util_pct,
        try_cast(nullif(mem, '-') as double) as mem_util_pct,
        try_cast(nullif(mclk, '-') as double) as mem_clock_mhz,
        try_cast(nullif(pclk, '-') as double) as sm_clock_mhz,
        try_cast(nullif(fb, '-') as double) as mem_used_mib
    from fields
),

checked as (
    select
        *,
        case
            when header is null then 'a data line before any `#` header line'
            when not list_contains(header, 'date') or not list_contains(header, 'time')
                then 'no Date and Time columns: capture with `nvidia-smi dmon -o DT`'
            when n_values < n_fields then 'too few values (' || n_values || ' of ' || n_fields || ')'
            when n_values > n_fields then 'too many values (' || n_values || ' of ' || n_fields || ')'
            when ts_local is null then 'Date/Time: expected YYYYMMDD HH:MM:SS, found '''
                || coalesce(date_text, '') || ' ' || coalesce(time_text, '') || ''''
            when gpu_index is null then 'gpu: expected a GPU index, found ''' || gpu_text || ''''
            when pwr <> '-' and power_w is null then 'pwr: not a number: ''' || pwr || ''''
            when gtemp <> '-' and temperature_c is null then 'gtemp: not a number: ''' || gtemp || ''''
            when sm <> '-' and util_pct is null then 'sm: not a number: ''' || sm || ''''
            when mem <> '-' and mem_util_pct is null then 'mem: not a number: ''' || mem || ''''
            when mclk <> '-' and mem_clock_mhz is null then 'mclk: not a number: ''' || mclk || ''''
            when pclk <> '-' and sm_clock_mhz is null then 'pclk: not a number: ''' || pclk || ''''
            when fb <> '-' and mem_used_mib is null then 'fb: not a number: ''' || fb || ''''
        end as _problem
    from typed
)

select
    _row,
    _problem,
    local_utc(ts_local, $tz) as ts,
    $host as host,
    null::varchar as instance_id,
    null::varchar as gpu_uuid,
    gpu_index,
    null::varchar as gpu_model,
    null::varchar as pci_bus_id,
    util_pct,
    mem_util_pct,
    mem_used_mib,
    null::double as mem_total_mib,
    power_w,
    null::double as power_limit_w,
    temperature_c,
    sm_clock_mhz,
    mem_clock_mhz,
    null::varchar as pstate,
    null::double as sm_active,
    null::double as sm_occupancy,
    null::double as tensor_active,
    null::double as dram_active,
    $source_name as source,
    $source_file as x_source_file,
    $file_id as x_file_id,
    ts::date as x_sample_date
from checked
