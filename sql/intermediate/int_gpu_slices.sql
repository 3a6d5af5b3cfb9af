-- grain: one row per GPU x hour x slice with telemetry samples (the slice: the part of the hour between job
--   starts/ends on its host); an hour a GPU did not report has no row
-- depends_on: gpu_samples, gpu_hourly_stats, int_job_boundaries, int_job_hosts
-- params: $day_from, $day_to (inclusive x_sample_date range; pipelines.transform rolls up changed days only)
-- An incremental table, not a view: pipelines.transform deletes and re-inserts the days whose samples
-- (files in the ingest ledger) or jobs changed. Statistics are kept in a form that adds up exactly
-- (sums, counts, maxima), so the hour- and job-level marts can be aggregated from these rows.
-- job_key: the scheduler job running on the slice's host (and GPU, when the job names its GPU indices)
-- when the slice starts; with several, the one naming this GPU, then the one started last
-- (jobs_running counts them).
-- observed_s: each sample stands for the time until the next sample of the same GPU in the slice, at
-- most 300 s (a longer gap is missing data); the last sample for the slice's median interval; a lone
-- sample for its slice, at most 300 s. A GPU sampled twice at the same instant counts once.
-- Hours pre-aggregated by a metrics store (gpu_hourly_stats) come in whole: an hour a job started or ended
-- in is cut at the same instants, each slice getting the hour's statistics and its share of the hour's
-- samples by its length (counts by cumulative floors, so they add up to the hour's exactly); sums,
-- counts and observed time add back to the hour's, means and maxima are the hour's.
with samples_in as (
    select
        ts,
        x_sample_date,
        host,
        lower(split_part(trim(host), '.', 1)) as host_key,
        coalesce('/mig' || mig_instance_id, '') as mig_suffix,
        gpu_uuid,
        gpu_index,
        gpu_model,
        mig_profile,
        instance_id,
        util_pct,
        mem_util_pct,
        mem_used_mib,
        mem_total_mib,
        power_w,
        power_limit_w,
        coalesce(sm_active, gr_engine_active) as sm_active,
        tensor_active,
        job_id,
        pod,
        namespace,
        container,
        labels
    from gpu_samples
    where x_sample_date >= $day_from and x_sample_date <= $day_to
),

-- gpu_id: the UUID, else host:index; a GPU with neither (a per-pod or per-host trace) is host:#<ordinal>,
-- its rank (from 0) among the host's unnamed GPUs in the same UTC hour, ordered by what identifies it
-- (instance id, namespace, pod, container, job id, other labels): a function of that hour's samples
-- alone, so the same whatever the order files arrive or are loaded again.
samples as (
    select
        * exclude (mig_suffix, container, labels),
        coalesce(gpu_uuid, host || ':' || gpu_index::varchar) || mig_suffix as gpu_id
    from samples_in
    where gpu_uuid is not null or gpu_index is not null
    union all by name
    select
        * exclude (mig_suffix, container, labels),
        host || ':#' || (dense_rank() over (
            partition by host, date_trunc('hour', ts)
            order by concat_ws('|', instance_id, namespace, pod, container, job_id, labels::varchar)
        ) - 1)::varchar || mig_suffix as gpu_id
    from samples_in
    where gpu_uuid is null and gpu_index is null
),

day_bounds as (
    select *
    from int_job_boundaries
    where bound_at < $day_to::date + interval 1 day and next_at > $day_from::date
),

hourly_in as (
    select
        *,
        lower(split_part(trim(host), '.', 1)) as host_key,
        coalesce('/mig' || mig_instance_id, '') as mig_suffix
    from gpu_hourly_stats
    where x_hour_date >= $day_from and x_hour_date <= $day_to
),

hourly as (
    select
        *,
        coalesce(gpu_uuid, host || ':' || gpu_index::varchar) || mig_suffix as gpu_id
    from hourly_in
    where gpu_uuid is not null or gpu_index is not null
    union all by name
    select
        *,
        host || ':#' || (dense_rank() over (
            partition by host, hour
            order by concat_ws('|', instance_id, namespace, pod, container, job_id, labels::varchar)
        ) - 1)::varchar || mig_suffix as gpu_id
    from hourly_in
    where gpu_uuid is null and gpu_index is null
),

hourly_cut as (
    select
        h.*,
        coalesce(greatest(h.hour, b.bound_at), h.hour) as slice_start,
        coalesce(least(h.hour + interval 1 hour, b.next_at), h.hour + interval 1 hour) as slice_end
    from hourly as h
    left join day_bounds as b
        on b.host_key = h.host_key and b.bound_at < h.hour + interval 1 hour and b.next_at > h.hour
),

hourly_shares as (
    select
        *,
        (epoch(slice_start) - epoch(hour)) / 3600 as share_from,
        (epoch(slice_end) - epoch(hour)) / 3600 as share_to
    from hourly_cut
),

hourly_sliced as (
    select
        *,
        (floor(samples * share_to) - floor(samples * share_from))::bigint as part_samples,
        (floor(util_samples * share_to) - floor(util_samples * share_from))::bigint as part_util_samples
    from hourly_shares
),

sliced as (
    select
        s.*,
        date_trunc('hour', s.ts) as hour,
        greatest(date_trunc('hour', s.ts), b.bound_at) as bound_start,
        least(date_trunc('hour', s.ts) + interval 1 hour, b.next_at) as bound_end
    from samples as s
    left join day_bounds as b
        on b.host_key = s.host_key and s.ts >= b.bound_at and s.ts < b.next_at
),

grouped as (
    select
        x_sample_date as day,
        host,
        host_key,
        gpu_id,
        hour,
        coalesce(bound_start, hour) as slice_start,
        coalesce(min(bound_end), hour + interval 1 hour) as slice_end,
        list_sort(list(ts)) as stamps,
        any_value(gpu_uuid) as gpu_uuid,
        any_value(gpu_index) as gpu_index,
        any_value(gpu_model) as gpu_model,
        any_value(mig_profile) as mig_profile,
        any_value(instance_id) as instance_id,
        count(util_pct) as util_samples,
        sum(util_pct) as util_sum,
        sum(util_pct * util_pct) as util_sumsq,
        quantile_cont(util_pct, 0.95) as util_p95,
        max(util_pct) as util_max,
        count(*) filter (where util_pct <= 5) as idle_samples,
        avg(mem_util_pct) as mem_util_mean,
        avg(mem_used_mib) as mem_used_mean_mib,
        max(mem_used_mib) as mem_used_max_mib,
        max(mem_total_mib) as mem_total_mib,
        avg(power_w) as power_mean_w,
        max(power_w) as power_max_w,
        max(power_limit_w) as power_limit_w,
        avg(sm_active) as sm_active_mean,
        avg(tensor_active) as tensor_active_mean,
        any_value(job_id) as telemetry_job_id,
        any_value(pod) as pod,
        any_value(namespace) as namespace,
        null::bigint as pre_samples,
        null::double as pre_observed_s
    from sliced
    group by x_sample_date, host, host_key, gpu_id, hour, coalesce(bound_start, hour)
    union all by name
    select
        x_hour_date as day,
        host,
        host_key,
        gpu_id,
        hour,
        slice_start,
        slice_end,
        null::timestamp[] as stamps,
        gpu_uuid,
        gpu_index,
        gpu_model,
        mig_profile,
        instance_id,
        part_util_samples as util_samples,
        util_sum / nullif(util_samples, 0) * part_util_samples as util_sum,
        util_sumsq / nullif(util_samples, 0) * part_util_samples as util_sumsq,
        util_p95,
        util_max,
        null::bigint as idle_samples,
        mem_util_mean,
        mem_used_mean_mib,
        mem_used_max_mib,
        mem_total_mib,
        power_mean_w,
        power_max_w,
        power_limit_w,
        sm_active_mean,
        tensor_active_mean,
        job_id as telemetry_job_id,
        pod,
        namespace,
        part_samples as pre_samples,
        observed_s / samples * part_samples as pre_observed_s
    from hourly_sliced
    where part_samples > 0
),

day_jobs as (
    select *
    from int_job_hosts
    where started_at < $day_to::date + interval 1 day
        and (ended_at is null or ended_at > $day_from::date)
),

attributed as (
    select
        g.*,
        j.job_key,
        count(j.job_key) over (partition by g.host, g.gpu_id, g.hour, g.slice_start) as jobs_running
    from grouped as g
    left join day_jobs as j
        on j.host_key = g.host_key
        and j.started_at <= g.slice_start
        and (j.ended_at is null or j.ended_at > g.slice_start)
        and (j.gpu_indices is null or len(j.gpu_indices) = 0 or list_contains(j.gpu_indices, g.gpu_index))
    qualify row_number() over (
        partition by g.host, g.gpu_id, g.hour, g.slice_start
        order by j.gpu_indices is not null and len(j.gpu_indices) > 0 desc, j.started_at desc, j.job_key
    ) = 1
),

spanned as (
    select
        *,
        list_transform(
            list_zip(stamps[1:len(stamps) - 1], stamps[2:len(stamps)]), lambda p: epoch(p[2]) - epoch(p[1])
        ) as gaps
    from attributed
),

counted as (
    select
        *,
        1 + len(list_filter(gaps, lambda g: g > 0)) as distinct_samples
    from spanned
)

select
    day,
    host,
    host_key,
    gpu_id,
    gpu_uuid,
    gpu_index,
    gpu_model,
    mig_profile,
    instance_id,
    hour,
    slice_start,
    slice_end,
    coalesce(pre_samples, distinct_samples) as samples,
    case
        when pre_observed_s is not null then pre_observed_s
        when distinct_samples = 1 then least(epoch(slice_end) - epoch(slice_start), 300)
        else list_sum(list_transform(gaps, lambda g: least(g, 300)))
            + least(list_aggregate(list_filter(gaps, lambda g: g > 0), 'median'), 300)
    end::double as observed_s,
    util_samples,
    util_sum,
    util_sumsq,
    util_p95,
    util_max,
    idle_samples,
    mem_util_mean,
    mem_used_mean_mib,
    mem_used_max_mib,
    mem_total_mib,
    power_mean_w,
    power_max_w,
    power_limit_w,
    sm_active_mean,
    tensor_active_mean,
    telemetry_job_id,
    pod,
    namespace,
    job_key,
    jobs_running
from counted
