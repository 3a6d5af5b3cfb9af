-- grain: one row per GPU x hour x slice with telemetry samples (as sql/intermediate/int_gpu_slices.sql)
-- depends_on: the views rollup_days (day), samples (gpu_samples' columns, labels as labels_text),
--             hourly_stats (gpu_hourly_stats', the same), job_boundaries, job_hosts, built by
--             pipelines/transform/spark/gpu_rollup.py
-- params: :day_from, :day_to (the first and last day of rollup_days, as ISO text)
-- sql/intermediate/int_gpu_slices.sql in Spark's dialect, for the days of rollup_days at once (each day's
-- rows depend on that day's samples alone). The same arithmetic in the same order: epoch() as DuckDB's
-- (microseconds / 10^6, a DOUBLE), a quantile as DuckDB's quantile_cont (lo * (1 - d) + hi * d, the last
-- multiply-add fused as DuckDB's compiled code fuses it: java.lang.Math.fma), any_value the first non-NULL.
-- The infinite bounds of int_job_boundaries arrive as 0001-01-01 and 9999-12-31.
with samples_in as (
    select
        s.ts,
        s.x_sample_date,
        s.host,
        -- DuckDB lower-cases letter by letter; Java also applies the final-sigma rule and makes İ two
        -- characters: those two first, as DuckDB lowers them
        lower(translate(split_part(regexp_replace(s.host, '^\\p{Zs}+|\\p{Zs}+$', ''), '.', 1), 'Σİ', 'σi')) as host_key,
        coalesce('/mig' || s.mig_instance_id, '') as mig_suffix,
        s.gpu_uuid,
        s.gpu_index,
        s.gpu_model,
        s.mig_profile,
        s.instance_id,
        s.util_pct,
        s.mem_util_pct,
        s.mem_used_mib,
        s.mem_total_mib,
        s.power_w,
        s.power_limit_w,
        coalesce(s.sm_active, s.gr_engine_active) as sm_active,
        s.tensor_active,
        s.job_id,
        s.pod,
        s.namespace,
        s.container,
        s.labels_text
    from samples as s
    left semi join rollup_days as d on d.day = s.x_sample_date
),

samples_named as (
    select
        *,
        coalesce(gpu_uuid, host || ':' || cast(gpu_index as string)) || mig_suffix as gpu_id
    from samples_in
    where gpu_uuid is not null or gpu_index is not null
    union all
    select
        *,
        host || ':#' || cast(dense_rank() over (
            partition by host, date_trunc('hour', ts)
            order by concat_ws('|', instance_id, namespace, pod, container, job_id, labels_text)
        ) - 1 as string) || mig_suffix as gpu_id
    from samples_in
    where gpu_uuid is null and gpu_index is null
),

day_bounds as (
    select *
    from job_boundaries
    where bound_at < cast(date_add(cast(:day_to as date), 1) as timestamp_ntz)
        and next_at > cast(cast(:day_from as date) as timestamp_ntz)
),

hourly_in as (
    select
        h.*,
        lower(translate(split_part(regexp_replace(h.host, '^\\p{Zs}+|\\p{Zs}+$', ''), '.', 1), 'Σİ', 'σi')) as host_key,
        coalesce('/mig' || h.mig_instance_id, '') as mig_suffix
    from hourly_stats as h
    left semi join rollup_days as d on d.day = h.x_hour_date
),

hourly as (
    select
        *,
        coalesce(gpu_uuid, host || ':' || cast(gpu_index as string)) || mig_suffix as gpu_id
    from hourly_in
    where gpu_uuid is not null or gpu_index is not null
    union all
    select
        *,
        host || ':#' || cast(dense_rank() over (
            partition by host, hour
            order by concat_ws('|', instance_id, namespace, pod, container, job_id, labels_text)
        ) - 1 as string) || mig_suffix as gpu_id
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
        (unix_micros(cast(slice_start as timestamp)) / 1000000d - unix_micros(cast(hour as timestamp)) / 1000000d)
            / 3600 as share_from,
        (unix_micros(cast(slice_end as timestamp)) / 1000000d - unix_micros(cast(hour as timestamp)) / 1000000d)
            / 3600 as share_to
    from hourly_cut
),

hourly_sliced as (
    select
        *,
        cast(floor(samples * share_to) - floor(samples * share_from) as bigint) as part_samples,
        cast(floor(util_samples * share_to) - floor(util_samples * share_from) as bigint) as part_util_samples
    from hourly_shares
),

sliced as (
    select
        s.*,
        date_trunc('hour', s.ts) as hour,
        greatest(date_trunc('hour', s.ts), b.bound_at) as bound_start,
        least(date_trunc('hour', s.ts) + interval 1 hour, b.next_at) as bound_end
    from samples_named as s
    left join day_bounds as b
        on b.host_key = s.host_key and s.ts >= b.bound_at and s.ts < b.next_at
),

grouped_samples as (
    select
        x_sample_date as day,
        host,
        host_key,
        gpu_id,
        hour,
        coalesce(bound_start, hour) as slice_start,
        coalesce(min(bound_end), hour + interval 1 hour) as slice_end,
        array_sort(collect_list(ts)) as stamps,
        array_sort(collect_list(util_pct)) as utils,
        first(gpu_uuid, true) as gpu_uuid,
        first(gpu_index, true) as gpu_index,
        first(gpu_model, true) as gpu_model,
        first(mig_profile, true) as mig_profile,
        first(instance_id, true) as instance_id,
        count(util_pct) as util_samples,
        sum(util_pct) as util_sum,
        sum(util_pct * util_pct) as util_sumsq,
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
        first(job_id, true) as telemetry_job_id,
        first(pod, true) as pod,
        first(namespace, true) as namespace
    from sliced
    group by x_sample_date, host, host_key, gpu_id, hour, coalesce(bound_start, hour)
),

-- quantile_cont(util_pct, 0.95): position (n - 1) * 0.95 in the sorted values, interpolated as DuckDB does
grouped as (
    select
        day, host, host_key, gpu_id, hour, slice_start, slice_end, stamps, gpu_uuid, gpu_index, gpu_model,
        mig_profile, instance_id, util_samples, util_sum, util_sumsq,
        case
            when size(utils) = 0 then cast(null as double)
            when floor((size(utils) - 1) * 0.95d) = ceil((size(utils) - 1) * 0.95d)
                then element_at(utils, cast(floor((size(utils) - 1) * 0.95d) as int) + 1)
            else cast(java_method(
                'java.lang.Math', 'fma',
                element_at(utils, cast(floor((size(utils) - 1) * 0.95d) as int) + 1),
                1d - ((size(utils) - 1) * 0.95d - floor((size(utils) - 1) * 0.95d)),
                element_at(utils, cast(ceil((size(utils) - 1) * 0.95d) as int) + 1)
                    * ((size(utils) - 1) * 0.95d - floor((size(utils) - 1) * 0.95d))
            ) as double)
        end as util_p95,
        util_max, idle_samples, mem_util_mean, mem_used_mean_mib, mem_used_max_mib, mem_total_mib,
        power_mean_w, power_max_w, power_limit_w, sm_active_mean, tensor_active_mean, telemetry_job_id, pod,
        namespace,
        cast(null as bigint) as pre_samples,
        cast(null as double) as pre_observed_s
    from grouped_samples
    union all
    select
        x_hour_date as day,
        host,
        host_key,
        gpu_id,
        hour,
        slice_start,
        slice_end,
        cast(null as array<timestamp_ntz>) as stamps,
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
        cast(null as bigint) as idle_samples,
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
    from job_hosts
    where started_at < cast(date_add(cast(:day_to as date), 1) as timestamp_ntz)
        and (ended_at is null or ended_at > cast(cast(:day_from as date) as timestamp_ntz))
),

joined as (
    select
        g.*,
        j.job_key,
        count(j.job_key) over (partition by g.host, g.gpu_id, g.hour, g.slice_start) as jobs_running,
        row_number() over (
            partition by g.host, g.gpu_id, g.hour, g.slice_start
            order by
                coalesce(j.gpu_indices is not null and size(j.gpu_indices) > 0, false) desc,
                j.started_at desc nulls last,
                j.job_key asc nulls last
        ) as pick
    from grouped as g
    left join day_jobs as j
        on j.host_key = g.host_key
        and j.started_at <= g.slice_start
        and (j.ended_at is null or j.ended_at > g.slice_start)
        and (j.gpu_indices is null or size(j.gpu_indices) = 0 or array_contains(j.gpu_indices, g.gpu_index))
),

spanned as (
    select
        *,
        case
            when stamps is null then cast(null as array<double>)
            else zip_with(
                slice(stamps, 1, greatest(size(stamps) - 1, 0)),
                slice(stamps, 2, greatest(size(stamps) - 1, 0)),
                (a, b) -> unix_micros(cast(b as timestamp)) / 1000000d - unix_micros(cast(a as timestamp)) / 1000000d
            )
        end as gaps
    from joined
    where pick = 1
),

counted as (
    select
        *,
        1 + size(filter(gaps, g -> g > 0)) as distinct_samples,
        array_sort(filter(gaps, g -> g > 0)) as moving
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
    cast(coalesce(pre_samples, distinct_samples) as bigint) as samples,
    case
        when pre_observed_s is not null then pre_observed_s
        when distinct_samples = 1
            then least(
                unix_micros(cast(slice_end as timestamp)) / 1000000d
                    - unix_micros(cast(slice_start as timestamp)) / 1000000d,
                300d
            )
        -- the sum of the gaps (each at most 300 s) in their order, plus the median moving gap
        else aggregate(transform(gaps, g -> least(g, 300d)), 0d, (acc, g) -> acc + g)
            + least(
                case
                    when size(moving) % 2 = 1 then element_at(moving, cast((size(moving) + 1) / 2 as int))
                    else cast(java_method(
                        'java.lang.Math', 'fma',
                        element_at(moving, cast(size(moving) / 2 as int)),
                        0.5d,
                        element_at(moving, cast(size(moving) / 2 as int) + 1) * 0.5d
                    ) as double)
                end,
                300d
            )
    end as observed_s,
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
