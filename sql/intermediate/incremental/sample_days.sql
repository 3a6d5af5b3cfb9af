-- grain: one row per sample day
-- depends_on: gpu_samples, ingest_files
-- What a day's GPU samples come from: the ledger's files (ids, checksums, load times) and how many of the
-- day's rows each gave.
with files as (
    select x_sample_date as day, x_file_id, count(*) as n
    from gpu_samples
    group by all
)

select
    f.day,
    bit_xor(hash(concat_ws('|', f.x_file_id, f.n, i.checksum, i.loaded_at))) as fingerprint
from files as f
left join ingest_files as i on i.file_id = f.x_file_id
group by f.day
