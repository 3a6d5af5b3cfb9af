-- grain: one row per GPU per sample of nvidia-smi files read by Spark
-- depends_on: the view `_src` over the lines of one layout's files (text columns named as gpu_samples, plus
--             mem_free_mib, mem_reserved_mib and each line's file: _fixed_host, _source_file, _file_id),
--             built by pipelines/transform/spark/gpu_samples.py
-- params: :tz (the source's timezone option), :source_name
-- sql/staging/stg_nvidia_smi__gpu_samples.sql in Spark's dialect: a value is its first word, what is not a
-- number is NULL; `2026/11/30 01:42:29.348` (1 or 2 digit fields, 1 to 3 of milliseconds, as DuckDB's
-- strptime takes them) or an ISO form, local time converted to UTC. A local time that occurs twice (the
-- hour clocks go back) is the later instant, as DuckDB's ICU takes it (Java takes the earlier).
with local_times as (
    select
        *,
        try_to_timestamp(trim(ts), 'yyyy/M/d H:m:s.SSS') as ts_local,
        regexp_replace(ts, '^\\p{Zs}+|\\p{Zs}+$', '') as ts_text
    from _src
),

zoned as (
    select
        *,
        case
            when ts_local is null and regexp_like(ts_text, '(Z|[+-]\\d{2}(:?\\d{2})?)$')
                then cast(try_cast(ts_text as timestamp_ltz) as timestamp_ntz)
            else coalesce(ts_local, try_cast(replace(ts_text, '/', '-') as timestamp_ntz))
        end as ts_read,
        ts_local is null and regexp_like(ts_text, '(Z|[+-]\\d{2}(:?\\d{2})?)$') as ts_utc
    from local_times
),

utc as (
    select
        *,
        case
            when ts_utc or :tz = 'UTC' then ts_read
            -- the later of the instants the local time names: Java's earlier one, or (when the time
            -- occurs twice) the same wall time read with the offset of three hours on
            when from_utc_timestamp(
                to_utc_timestamp(ts_read + interval 3 hours, :tz) - interval 3 hours, :tz
            ) = ts_read
                then greatest(
                    to_utc_timestamp(ts_read, :tz),
                    to_utc_timestamp(ts_read + interval 3 hours, :tz) - interval 3 hours
                )
            else to_utc_timestamp(ts_read, :tz)
        end as ts_parsed
    from zoned
),

numbers as (
    select
        ts_parsed as ts,
        coalesce(_fixed_host, nullif(host, '')) as host,
        case when startswith(gpu_uuid, '[') then null else nullif(gpu_uuid, '') end as gpu_uuid,
        -- DuckDB's cast to INTEGER rounds a decimal (`1.0`, `1.5`), half away from zero
        coalesce(try_cast(gpu_index as int), try_cast(round(try_cast(gpu_index as double)) as int)) as gpu_index,
        case when startswith(gpu_model, '[') then null else nullif(gpu_model, '') end as gpu_model,
        case when startswith(pci_bus_id, '[') then null else nullif(pci_bus_id, '') end as pci_bus_id,
        try_cast(split_part(util_pct, ' ', 1) as double) as util_pct,
        try_cast(split_part(mem_util_pct, ' ', 1) as double) as mem_util_pct,
        try_cast(split_part(mem_used_mib, ' ', 1) as double) as mem_used_mib,
        try_cast(split_part(mem_total_mib, ' ', 1) as double) as mem_total_mib,
        try_cast(split_part(mem_free_mib, ' ', 1) as double) as mem_free_mib,
        try_cast(split_part(mem_reserved_mib, ' ', 1) as double) as mem_reserved_mib,
        try_cast(split_part(power_w, ' ', 1) as double) as power_w,
        try_cast(split_part(power_limit_w, ' ', 1) as double) as power_limit_w,
        case when startswith(pstate, '[') then null else nullif(pstate, '') end as pstate,
        _source_file,
        _file_id
    from utc
)

select
    ts,
    host,
    cast(null as string) as instance_id,
    gpu_uuid,
    gpu_index,
    gpu_model,
    util_pct,
    mem_util_pct,
    mem_used_mib,
    coalesce(mem_total_mib, mem_used_mib + mem_free_mib + coalesce(mem_reserved_mib, 0d)) as mem_total_mib,
    power_w,
    power_limit_w,
    cast(null as double) as sm_active,
    cast(null as double) as gr_engine_active,
    cast(null as double) as tensor_active,
    cast(null as string) as pod,
    cast(null as string) as namespace,
    cast(null as string) as container,
    cast(null as string) as mig_profile,
    cast(null as string) as mig_instance_id,
    cast(null as string) as job_id,
    cast(null as string) as labels_text,
    _source_file as x_source_file,
    _file_id as x_file_id,
    cast(ts as date) as x_sample_date
from numbers
