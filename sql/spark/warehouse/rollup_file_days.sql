-- grain: one row per ingested file x day of the days to roll up, for the files with samples on them
-- depends_on: gpu_samples, ingest_files
-- params: $days
-- What Spark's roll-up reads, and what it checks its reading against: each file's samples of each day as
-- the warehouse holds them (how many, the sum of their times in microseconds after the day's midnight,
-- how many have a GPU index and its sum, how many have each figure).
-- Files of the kind Spark reads (nvidia_smi) are read where they lie; the others' rows are handed over.
select
    s.x_file_id as file_id,
    s.x_sample_date as day,
    i.source,
    i.kind,
    i.uri,
    count(*) as samples,
    sum(epoch_us(s.ts) - epoch_us(s.x_sample_date::timestamp))::bigint as ts_us,
    count(s.gpu_index) as index_n,
    coalesce(sum(s.gpu_index), 0)::bigint as index_sum,
    count(s.util_pct) as util_n,
    count(s.mem_util_pct) as mem_util_n,
    count(s.mem_used_mib) as mem_used_n,
    count(s.mem_total_mib) as mem_total_n,
    count(s.power_w) as power_n,
    count(s.power_limit_w) as power_limit_n
from gpu_samples as s
inner join ingest_files as i on i.file_id = s.x_file_id
where list_contains($days, s.x_sample_date)
group by all
order by i.uri, s.x_sample_date
