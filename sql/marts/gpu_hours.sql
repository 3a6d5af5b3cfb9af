-- grain: one row per GPU x hour
-- depends_on: gpu_samples, int_host_resources
-- coverage = share of the hour the samples stand for: each sample counts until the next one, at most
-- 300 s (a longer gap is missing data, not a long sample). Duplicate samples (same GPU, same ts) count once.
with samples as (
    select
        *,
        coalesce(gpu_uuid, host || ':' || gpu_index::varchar) as gpu_id
    from gpu_samples
    qualify row_number() over (
        partition by host, coalesce(gpu_uuid, gpu_index::varchar), ts order by x_source_file
    ) = 1
),

spans as (
    select
        *,
        least(
            coalesce(
                epoch(lead(ts) over w) - epoch(ts),
                epoch(ts) - epoch(lag(ts) over w),
                1
            ),
            300
        ) as span_s
    from samples
    window w as (partition by host, gpu_id order by ts)
)

select
    date_trunc('hour', s.ts) as hour,
    s.host,
    hr.resource_id,
    s.gpu_id,
    any_value(s.gpu_uuid) as gpu_uuid,
    any_value(s.gpu_index) as gpu_index,
    any_value(s.gpu_model) as gpu_model,
    count(*) as samples,
    least(sum(s.span_s) / 3600, 1)::double as coverage,
    avg(s.util_pct) as util_mean,
    quantile_cont(s.util_pct, 0.95) as util_p95,
    max(s.util_pct) as util_max,
    avg(s.mem_used_mib) as mem_used_mean_mib,
    max(s.mem_used_mib) as mem_used_max_mib,
    max(s.mem_total_mib) as mem_total_mib,
    avg(s.power_w) as power_mean_w,
    max(s.power_w) as power_max_w,
    avg(s.sm_active) as sm_active_mean,
    avg(s.tensor_active) as tensor_active_mean,
    null::varchar as job_id
from spans as s
left join int_host_resources as hr on hr.host = s.host
group by all
