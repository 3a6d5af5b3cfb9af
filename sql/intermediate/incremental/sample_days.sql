-- grain: one row per sample day
-- depends_on: gpu_samples, gpu_hourly_stats, ingest_files
-- What a day's GPU samples come from: the ledger's files (ids, checksums, load times) and how many of the
-- day's rows each gave; for hours pre-aggregated by a metrics store (read again by every run), the rows'
-- own values.
with files as (
    select x_sample_date as day, x_file_id, count(*) as n
    from gpu_samples
    group by all
),

parts as (
    select
        f.day,
        bit_xor(hash(concat_ws('|', f.x_file_id, f.n, i.checksum, i.loaded_at))) as fingerprint
    from files as f
    left join ingest_files as i on i.file_id = f.x_file_id
    group by f.day
    union all
    select
        x_hour_date as day,
        bit_xor(hash(cast(h as varchar))) as fingerprint
    from gpu_hourly_stats as h
    group by x_hour_date
)

select
    day,
    bit_xor(fingerprint) as fingerprint
from parts
group by day
